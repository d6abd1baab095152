// Package jobs holds the API side of the batch/v1 Jobs the At and ScheduledJob controllers
// create: the label that scopes the manager's Job cache and the bounded form it keeps of each Job
// (CacheKind, Trim), the field index that finds a parent's Jobs by controller UID, and the memory
// of Jobs others deleted (Gone, WatchGone).
//
// It owns the one create path of a slot's Job (the Jobs' names are controller/logic/jobname's,
// pure, which the CLI shares) and what the API server's answer means (Create: created, adopted,
// refused as invalid, refused at admission, name taken; create.go), the check before it that the
// owner read from the cache is the version the API server has, and the read of a template the
// cache dropped (ReadyToCreate, WithTemplate; statuswrite.Confirmations says whether the cached owner is current). What can be read or built of a Job
// without the API (its outcome, the refusal text and its retry window, the scheduled time
// stamped on it, a template's metadata without our keys) is controller/logic/jobstate's, pure.
// It must not decide when a Job runs (package schedule and the reconcilers do), nor write
// anything but that create.
package jobs
