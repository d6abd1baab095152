// Package jobstate holds what the At and ScheduledJob controllers (and the CLI) read or build of
// a batch/v1 Job without the API: how it stands (Finished, Judge), whether its pods are not being
// created (PodsNotCreated), a refusal's message and when to try again (Refusal, Window.Retry),
// the scheduled time stamped on it (WithScheduledTime), and the Job an owner builds from a
// tenant's template, without our keys (NewJob, TemplateMetadata). Creating, caching and watching
// Jobs is controller/jobs'.
//
// It is pure: it reads no API and no clock (callers pass now), and must not import
// controller-runtime, client-go, a reconciler or controller/jobs (depguard in .golangci.yml
// enforces it).
package jobstate
