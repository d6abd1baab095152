// Package metricsauth guards the manager's /metrics endpoint: a caller must present a bearer token
// that the API server authenticates (TokenReview) and authorizes for the request's path and verb
// (SubjectAccessReview, a non-resource URL), the checks kube-rbac-proxy makes.
//
// It does what controller-runtime's metrics/filters does with client-go's two typed clients
// alone. That filter builds on k8s.io/apiserver, which brought cel-go, gRPC and OpenTelemetry
// into the binary: 40 MB of binary and about 17 MB of resident memory before the first request
// (docs/benchmarks.md). Decisions are cached per token, path and verb for a short time, so a
// scraper every few seconds costs two reviews a minute, not two per scrape. Whatever
// unauthenticated clients send, reviews and memory are bounded: only GET and HEAD, a path up to
// MaxPathBytes and a token up to MaxTokenBytes reach a review; decisions are kept under fixed-size
// keys in caches whose expired entries leave on write (MaxBytes in all); a token the API server
// did not accept is remembered by its digest, and reviews for requests without a decision are
// rate-limited per source address and overall (token buckets; 429 over either), except
// re-reviews of decisions once allowed.
// controller-runtime's filter makes a TokenReview for every request with a refused token (measured
// side by side in tests/metricsfilter; docs/architecture.md, "Why not controller-runtime's metrics
// filter").
//
// It owns no Kubernetes object and writes nothing but the two reviews, which the API server
// does not store.
package metricsauth
