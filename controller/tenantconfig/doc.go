// Package tenantconfig prints a kubeconfig for a tenant's ServiceAccount: the token (from the
// ServiceAccount's `kubernetes.io/service-account-token` Secret or from a fresh TokenRequest) is
// its only credential, the API server URL and CA come from the caller's kubeconfig or flags.
//
// Build is pure (no cluster); RequestToken and SecretToken talk to the API server. The manager
// binary parses NewFlagSet's flags and calls Run as its `kubeconfig` subcommand, and the test bed
// builds its ServiceAccount clients' kubeconfigs with the same functions (ClusterFromREST,
// RequestToken, Build), so there is one implementation.
package tenantconfig
