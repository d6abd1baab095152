// Package podwatcher logs the lifecycle of pods (added, phase changed, deleted) as structured
// log lines and counts the transitions in a Prometheus counter. It is off by default.
//
// It is an informer event handler rather than a reconciler: a reconcile request carries only a
// key, while a phase transition needs the old and the new object. What an event means is decided
// by pure functions (OnAdd, OnUpdate, OnDelete in transition.go); the Watcher only feeds them and
// records the Transition they return.
package podwatcher
