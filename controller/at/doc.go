// Package at is the At controller: it runs a command (or a Job template) once, at a given time,
// as a Job it owns.
//
// Each reconcile reads the At and its Job (through the controller-UID field index), reads the
// clock once, calls the pure decide (decide.go: the new status, the Events, whether to create
// the Job, when to look again; the At's one slot in the slot ledger, slotplan.Ledger, as for a
// ScheduledJob's slots; schedule.Once for the time, and slotplan.RunOf for how its run stands), acts (at most one create, whose outcome
// recordCreate folds into the status), and patches status once.
// The Job name is deterministic ("<name>-<unix minutes of the schedule>"), so a crash between
// create and status write, or a second replica, never runs the command twice: the create fails
// with AlreadyExists and the Job is adopted if this At controls it. Once a Job existed, the At
// never runs again, even if the Job is deleted.
package at
