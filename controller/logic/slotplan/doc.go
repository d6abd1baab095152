// Package slotplan holds the decisions of the ScheduledJob controller, as a pure function of the
// object, its Jobs and the time (Decide, plan.go): which slot is due and what becomes of it (a
// Job, a skip, a slot passed over), run-now requests and backfills (backfill.go), the stop
// strategy (stop.go), the run history (runs.go), the slot ledger, where each slot stands
// (ledger.go), and the record of what the API server answered to the creates (RecordCreates,
// record.go), with the reasons, conditions and outcomes a user sees. The reconciler
// (controller/scheduledjob) reads the world, calls Decide, and carries the Plan out in the order
// of the slot protocol.
//
// It is pure: it reads no API and no clock (callers pass now), and must not import
// controller-runtime, client-go, a reconciler or the cache plumbing (controller/jobs,
// controller/cachebounds); depguard in .golangci.yml enforces it.
//
// The slot protocol makes a slot (or a run-now token) at most one Job across passes, conflicts,
// restarts and leader changes; docs/scheduling.md ("At most once per slot", "How a slot ends")
// writes it down with the state machine of one slot. In short:
//
//  1. Claim and create. A slot's Job is named after it (jobname), so creating it is the claim:
//     a second create gets AlreadyExists, and the Job is adopted if this ScheduledJob controls it.
//  2. Record. status.lastScheduleTime (lastRunNowToken) says the slot is taken, written with an
//     optimistic lock; when the create was all a pass did, the next pass records it from the Job
//     (recordClaims). A slot has one outcome, final once written (dueSlots.handled), except a
//     refused one (retryRefused). Under Forbid and Replace a pass that creates
//     first reads around the cache the Jobs of recent unrecorded slots (unconfirmedSlots).
//  3. Prune. A finished Job is deleted only when the status this pass read (one already written)
//     records its claim, and only after this pass's own status write: whenever a slot's Job is
//     gone, a written status says the slot was taken. A new process reads the object from the API
//     server before its first create for it (its informers are separate streams).
//  4. Observe. A Job that the last status lists as active and that is gone is reported
//     (MissingJob) only if this process did not delete it itself (Replace).
//
// A Job that finished and was deleted by others before its slot was recorded is still the
// slot's Job: the reconciler passes it to Decide as the informer last saw it (jobs.Gone). One
// deleted before it finished, or while no replica watched, cannot be told from a slot never run;
// upstream's CronJob has the same limit.
package slotplan

// CreatedBy is the value of keys.LabelCreatedBy on the Jobs a ScheduledJob creates (NewJob): the
// controller's name (scheduledjob.Name).
const CreatedBy = "scheduledjob"
