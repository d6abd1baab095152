// Package jobstate holds what the At and ScheduledJob controllers (and the CLI) read or build of
// a batch/v1 Job without the API: whether and how it finished (Finished, FailureMessage), how it
// stands (Judge: Running, Waiting, Succeeded, Failed, with the reasons a Job waits), whether its
// pods are not being created (PodsNotCreated), the order history is pruned in (SortByStartTime),
// the message of a Job the API server refused and when to try again (RefusalMessage, Refusal,
// Window.Retry, RefusedBackoff), the scheduled time stamped on a Job and its pods
// (WithScheduledTime), and a tenant's template metadata without our keys (TemplateMetadata).
// Creating, caching and watching Jobs is controller/jobs'.
//
// It is pure: it reads no API and no clock (callers pass now), and must not import
// controller-runtime, client-go, a reconciler or controller/jobs (depguard in .golangci.yml
// enforces it).
package jobstate
