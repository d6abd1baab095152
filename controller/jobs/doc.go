// Package jobs holds what the At and ScheduledJob controllers share about the batch/v1 Jobs they
// create: the label that marks them (and scopes the manager's Job cache), the field index that
// finds a parent's Jobs by controller UID, and pure helpers to read a Job's outcome.
//
// It owns the one create path of a slot's Job (the Jobs' names are controller/logic/jobname's,
// pure, which the CLI shares) and what the API server's answer means (Create: created, adopted,
// refused as invalid, refused at admission, whose retry Window.Retry times, name taken;
// create.go), the check before it that the owner read from the cache is the version the API
// server has, and the read of a template the cache dropped (Confirmations, WithTemplate;
// confirm.go), the Job cache's scope, the controller-UID index and the scheduled time stamped on
// a Job (scheduledtime.go). It must not decide when a Job runs (package schedule and the reconcilers
// do), nor write anything but that create.
package jobs
