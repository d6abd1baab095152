// Package scheduledjob is the ScheduledJob controller: Jobs on a cron schedule, with the
// semantics of kube-controller-manager's CronJob controller (pkg/controller/cronjob, v1.36),
// plus nextScheduleTime, Events and a metric for skipped slots, run-now requests, and no
// retroactive run when the schedule is edited. docs/scheduling.md compares the two.
//
// A reconcile reads the ScheduledJob and its Jobs (controller-UID field index), reads the clock
// once, calls slotplan.Decide (pure, controller/logic/slotplan) for a plan, applies it (deletes,
// creates, history pruning) in the order of the slot protocol (carryOut, slots.go) and patches
// status once; Events follow the status write. The decisions, their reasons, conditions and
// outcomes are slotplan's; this package owns the reads, the writes, the metrics and the caches.
package scheduledjob
