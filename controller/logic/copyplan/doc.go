// Package copyplan holds the decisions about one SecretSync that the secretsync reconciler and
// `kubectl platform why` share: the copy a namespace should hold of a source (Wanted), the names
// the copies get (CopyNames), why a namespace gets none (NotATarget), the reasons of the Ready
// condition, status.failures and Events, and which of those stop the sync (Blocks). The rules
// beneath them (targets, the desired copy, the write plan and ownership) are package propagation's.
//
// It is pure: it reads no API and no clock, and must not import controller-runtime, client-go or
// a reconciler package (depguard in .golangci.yml enforces it); the reconciler reads the world and
// acts, the CLI reads the world and explains, both with these decisions.
package copyplan
