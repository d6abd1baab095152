// Package schedule holds the time math of At and ScheduledJob as pure functions of "now": parsing
// a cron schedule in a time zone, finding the most recent unmet slot (with upstream
// kube-controller-manager's CronJob semantics), the next slot, and when a one-shot run is due.
// It reads no clock and calls no API: callers pass the time in.
//
// It owns cron parsing, time zones, slots, missed-run counting and deadlines. It must not read
// the clock, call the API, or import controller-runtime or client-go.
package schedule
