// Package jobs holds the API side of the batch/v1 Jobs the At and ScheduledJob controllers
// create: the label that scopes the manager's Job cache and the bounded form it keeps of each Job
// (CacheKind, Trim), the bounded cache of their owners (BoundedOwner), the field index that finds
// an owner's Jobs by controller UID, the memory of Jobs others deleted (Gone, WatchGone), and the
// one create path of a slot's Job: the check before it (ReadyToCreate) and what the API server's
// answer means (Create: an Answer and its Event); the reads of an owner's Jobs (Of, Read) and its status
// write (WriteStatus). The Jobs' names are controller/logic/jobname's and what can be read of a
// Job without the API is controller/logic/jobstate's, both pure. It must not decide when a Job
// runs (package schedule and the reconcilers do), nor write anything but that create and the
// owner's status.
package jobs
