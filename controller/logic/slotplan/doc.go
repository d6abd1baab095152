// Package slotplan holds the decisions of the ScheduledJob controller, as a pure function of the
// object, its Jobs and the time (Decide, plan.go): which slot is due and what becomes of it (a
// Job, a skip, a slot passed over), run-now requests and backfills (backfill.go), the stop
// strategy (stop.go), the run history (runs.go), the slot ledger, where each slot stands
// (ledger.go), and the record of what the API server answered to the creates (RecordCreates,
// record.go), with the reasons, conditions and outcomes a user sees. The reconciler
// (controller/scheduledjob) reads the world, calls Decide, and carries the Plan out in the order
// of the slot protocol below.
//
// It is pure: it reads no API and no clock (callers pass now), and must not import
// controller-runtime, client-go, a reconciler or the cache plumbing (controller/jobs,
// controller/cachebounds); depguard in .golangci.yml enforces it.
//
// The slot protocol: how a slot (or a run-now token) becomes at most one Job, across passes,
// conflicts, restarts and leader changes. It has four steps, which this package and the
// reconciler share: Decide (plan.go) computes what each pass does from the object, its Jobs and
// the clock, and the reconciler's carryOut (controller/scheduledjob/slots.go) applies it in this
// order:
//
//  1. Claim and create. A slot's Job is named after it (<name>-<unix minutes>, run-now:
//     <name>-r<token hash>), so creating it is the claim: a second create of the same slot gets
//     AlreadyExists, and the Job is adopted if this ScheduledJob controls it.
//  2. Record. status.lastScheduleTime (lastRunNowToken) says the slot is taken. The pass that
//     created the Job leaves the record to the next pass, which the Job's watch event starts
//     within milliseconds and whose record step (recordClaims) finds the Job by its name, for
//     any slot and whatever else that pass finds (past the deadline, the next slot due,
//     suspended); one write per ScheduledJob on the way to the last Job of a busy slot. Every
//     status write has an optimistic lock, so a pass that read a stale ScheduledJob cannot
//     record (or announce) a slot twice. A slot has one outcome, final once written (the state
//     machine below); Decide's slot step (dueSlots.handled) never runs a slot decided otherwise,
//     except one whose Job the API server refused: at admission (403), tried again while the
//     slot can start (retryRefused); any refusal, after an edit of the spec. Under Forbid and
//     Replace, a pass that creates first reads around the cache the Jobs of recent slots that
//     are not recorded (unconfirmedSlots): the Job the previous pass created must block (or be
//     replaced) even while the Job cache does not show it.
//  3. Prune. A finished Job beyond the history limits is deleted only when the status this
//     pass read, i.e. one already written, records its claim and no longer lists it as active;
//     and only after this pass's own status write succeeded. So whenever a slot's Job is gone,
//     a written status says the slot was taken: no process, however it died, and no leader,
//     however stale its first read, finds a slot with neither a Job nor a record and runs it
//     again.
//     One more guard for a new process: before its first create for a ScheduledJob it reads
//     the object from the API server, and waits for its cache if that is behind. Informers are
//     separate streams: a new leader's Job cache may already miss a pruned Job while its
//     ScheduledJob cache does not yet show the status that recorded the slot. Within one
//     process the cache only moves forward, so one check per object suffices.
//  4. Observe. A Job that the last status lists as active and that is gone is reported
//     (MissingJob) only if this process did not delete it itself (concurrencyPolicy Replace).
//
// The state machine of one slot. A slot is due (its time, plus the object's jitter, has come and
// the status does not record it: after lastScheduleTime, not lastSkippedTime) until one pass
// decides it; each outcome is written by the pass named, in that pass's one status write, or is
// reconstructed exactly from the Job that exists (a Job's name is its slot):
//
//	due ──create succeeds──────────▶ created   recorded by the next pass from the Job (record
//	 │                                          step), or by this pass if it writes status anyway
//	 ├──create refused (403/422/400)▶ refused   Failed run, reason JobRejected, the API server's
//	 │                                 │        message; Ready False; this pass (recordCreates)
//	 │                                 └─403, tried again after jobstate.RefusedBackoff before the
//	 │                                   deadline and the next slot, succeeds ▶ created (the
//	 │                                   Job's run replaces the record, the ledger drops it)
//	 ├──Forbid, a Job active────────▶ skipped   JobAlreadyActive; this pass (runDueSlot)
//	 ├──seen past its deadline──────▶ skipped   MissedDeadline; this pass (runDueSlot)
//	 ├──a later slot due too────────▶ passed    MissedSlots / TooManyMissedTimes, or Suspended if
//	 │                                 over      suspended meanwhile: named in the Event of the pass
//	 │                                           that runs the most recent slot (no run each)
//	 └──create fails otherwise──────▶ due       (a timeout, a webhook unavailable: nothing is
//	                                             decided, the pass backs off and tries again)
//
// SlotOutcomes (plan.go) lists the outcomes with their Events and metric labels. While suspended a
// slot is not looked at (no pass, no write); on resume it is passed over like a missed one, and
// the record step still records a slot whose Job was created just before the suspension.
//
// A Job that finished and was deleted by others (a ttlSecondsAfterFinished of 0 on a Job that
// ends within milliseconds) before its slot was recorded is still the slot's Job: the reconciler
// passes it to Decide as the informer last saw it (jobs.Gone, goneChildren; the manager's own
// prunes are not remembered, their runs are in the status). One deleted before it finished, or
// while no replica watched, cannot be told from a slot never run; upstream's CronJob has the same
// limit.
package slotplan

// CreatedBy is the value of keys.LabelCreatedBy on the Jobs a ScheduledJob creates (NewJob): the
// controller's name (scheduledjob.Name).
const CreatedBy = "scheduledjob"
