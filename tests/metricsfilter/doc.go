// Package metricsfilter compares the manager's metrics guard (controller/metricsauth) with
// controller-runtime's metrics/filters.WithAuthenticationAndAuthorization on a real API server
// (envtest): how many TokenReviews and SubjectAccessReviews reach the API server for the same
// requests, scrapers' and made-up tokens' alike. It lives in the tests module because
// controller-runtime's filter brings k8s.io/apiserver (cel-go, gRPC, OpenTelemetry) that the
// manager does not link (docs/architecture.md, "Why not controller-runtime's metrics filter").
package metricsfilter
