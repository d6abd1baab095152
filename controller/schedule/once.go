package schedule

import "time"

// OnceAction is what a one-shot run (an At) should do now.
type OnceAction int

const (
	// Wait means the time has not come: requeue after the returned duration.
	Wait OnceAction = iota
	// Run means start now.
	Run
	// TooLate means the start deadline passed: do not run, report it.
	TooLate
)

// Once decides for a run due at `at` with an optional start deadline (seconds after at). A run
// is on time up to and including at+deadline (upstream's boundary). The duration is the requeue
// for Wait (always positive, with Padding), zero otherwise.
func Once(at time.Time, deadlineSeconds *int64, now time.Time) (OnceAction, time.Duration) {
	if now.Before(at) {
		return Wait, at.Sub(now) + Padding
	}
	if deadlineSeconds != nil && at.Add(time.Duration(*deadlineSeconds)*time.Second).Before(now) {
		return TooLate, 0
	}
	return Run, 0
}
