// Package secretsync is the SecretSync controller: it copies Secrets from a source namespace
// into target namespaces and keeps the copies exactly in step.
//
// Two controllers share one Reconciler, each with one meaning of a request. The SecretSync's own
// (Name; requests {Name}, Reconcile) handles one SecretSync whole: it reads the sources, the
// namespaces and the live copies from caches, asks propagation.ComputeFor for the writes that close
// the gap, performs them with bounded concurrency, brings ServiceAccounts' imagePullSecrets in
// line, and writes status once (only when it changed). The target controller (TargetName;
// requests {Namespace, Name}, ReconcileTarget) does the same for one namespace and writes no
// status: the events that queue it (a namespace, a copy, a ServiceAccount) queue the
// SecretSync's pass a little later (setup.go). A reconcile with nothing to do makes no API call
// that writes.
//
// Memory: the manager's cache holds only Secrets carrying keys.LabelSecretSync (our
// copies), in a bounded form. Source Secrets are listed through one cache per source namespace,
// started when a SecretSync first names that namespace and stopped when none does (Sources),
// which keeps no data: a pass reads the sources it copies from the API. Unrelated Secrets are
// never cached. Every kind's bound is declared in CacheKinds and SourceCacheKinds
// (controller/cachebounds).
package secretsync
