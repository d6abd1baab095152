// Package writeerror sorts the API server's answer to a write that failed into the few classes
// the controllers tell apart (Classify): the cache was behind, the namespace is terminating, the
// object itself was refused (too large, invalid, a bad request), admission refused it, or
// anything else, which may pass when tried again. Each controller decides what a class means
// for it (secretsync's writes, jobs.Create); the sorting is one, here.
//
// It is pure: it reads the error only, and must not import controller-runtime or client-go.
package writeerror
