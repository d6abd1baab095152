// Package at is the At controller: it runs a command (or a Job template) once, at a given time,
// as a Job it owns.
//
// Each reconcile reads the At and its Jobs (through the controller-UID field index), reads the
// clock once, decides with schedule.Once, acts (at most one create), and patches status once.
// The Job name is deterministic ("<name>-<unix minutes of the schedule>"), so a crash between
// create and status write, or a second replica, never runs the command twice: the create fails
// with AlreadyExists and the Job is adopted if this At controls it. Once a Job existed, the At
// never runs again, even if the Job is deleted.
package at
