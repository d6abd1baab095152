package propagation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Secret types that are never copied, whatever a SecretSync or an offer says. Each is a credential
// of the cluster or of an installation, never data meant for tenants: a Helm release (its values,
// with every password given to the chart), a ServiceAccount's token (that account's rights in
// every namespace the copy lands in) and a bootstrap token (joins nodes to the cluster).
const (
	TypeHelmRelease    corev1.SecretType = "helm.sh/release.v1"
	TypeBootstrapToken corev1.SecretType = "bootstrap.kubernetes.io/token"
	// TypeOwnershipKey is the type of the manager's ownership key Secrets (secretsync.OwnershipKeyType),
	// withheld wherever one is found.
	TypeOwnershipKey corev1.SecretType = "ops.platform-operators.io/ownership-key"
)

// helmReleasePrefix starts the name of every Helm release record (Secret or ConfigMap storage
// driver: sh.helm.release.v1.<release>.v<revision>); helmOwnerLabel=helm marks it.
const (
	helmReleasePrefix = "sh.helm.release.v1."
	helmOwnerLabel    = "owner"
)

// Protected names the manager's own secrets that no copy may ever carry.
type Protected struct {
	// Namespace is the manager's namespace, OwnershipKey the name of the Secret there holding the
	// key of the ownership proofs: a copy of it would let its readers forge a proof for any
	// object. Empty: none.
	Namespace, OwnershipKey string
	// Own names more Secrets of the manager's namespace that are its alone, e.g. the pull
	// credentials its pods pull with.
	Own []string
}

// Withheld reports why the source s (a Secret, or a ConfigMap's envelope) is never copied, or ""
// when it may be. It is checked where sources are chosen, after SourceMatches, so that no spec,
// selector or offer can reach these objects: an admin's `selector: {}` over the manager's own
// namespace copies its other Secrets and none of these. The reason is meant for the SecretSync's
// status (an admin must see why a source was left out).
func Withheld(s *corev1.Secret, p Protected) string {
	switch {
	// The key ring is the key Secret and the Secrets named <it>-* beside it (older keys).
	case p.OwnershipKey != "" && s.Namespace == p.Namespace && (s.Name == p.OwnershipKey || strings.HasPrefix(s.Name, p.OwnershipKey+"-")),
		s.Type == TypeOwnershipKey:
		return "the manager's ownership key"
	case s.Namespace == p.Namespace && s.Type != TypeConfigMap && slices.Contains(p.Own, s.Name):
		return "a Secret of the manager's own (--withheld-secrets)"
	case s.Type == TypeHelmRelease:
		return "a Helm release (type " + string(TypeHelmRelease) + ")"
	case s.Type == corev1.SecretTypeServiceAccountToken:
		return "a ServiceAccount token (type " + string(corev1.SecretTypeServiceAccountToken) + ")"
	case s.Type == TypeBootstrapToken:
		return "a bootstrap token (type " + string(TypeBootstrapToken) + ")"
	// Helm's ConfigMap storage driver keeps the same release record (values included) in a
	// ConfigMap; the Secret driver's records are caught by their type above.
	case s.Type == TypeConfigMap && strings.HasPrefix(s.Name, helmReleasePrefix) && s.Labels[helmOwnerLabel] == "helm":
		return "a Helm release (ConfigMap storage)"
	}
	return ""
}

// WithheldMessage is the one-line account of the sources Withheld left out ("ns/name: reason"),
// at most limit of them named, for a condition message.
func WithheldMessage(withheld map[string]string, limit int) string {
	names := slices.Sorted(maps.Keys(withheld))
	var parts []string
	for i, n := range names {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-limit))
			break
		}
		parts = append(parts, n+" ("+withheld[n]+")")
	}
	return strings.Join(parts, ", ")
}
