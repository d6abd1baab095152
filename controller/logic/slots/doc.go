// Package slots holds the decisions about a ScheduledJob's slots that the scheduledjob reconciler
// and `kubectl platform next` share: its schedules (Schedules), the fixed delay of its starts
// (JitterOffset), the schedule it is observed under (Observed) and since when (ObservedSince),
// from which @every entries count their slots. The cron math itself is package schedule's.
//
// It is pure: callers pass the time, and it must not import controller-runtime, client-go or a
// reconciler package (depguard in .golangci.yml enforces it).
package slots
