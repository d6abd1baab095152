package jobstate

import (
	"strings"
	"time"
)

// RefusalPrefix starts the message of a refused Job: RefusalPrefix + <job name> + ": " + <the API
// server's message>, or, refused at admission, RefusalPrefix + <job name> + " at admission: " + ....
const RefusalPrefix = "The API server refused job "

const atAdmission = " at admission"

// RefusalMessage is the message of the Job named name that the API server refused with err, at
// admission (403) or not (invalid).
func RefusalMessage(name string, admission bool, err error) string {
	if admission {
		name += atAdmission
	}
	return RefusalPrefix + name + ": " + err.Error()
}

// Refusal reads a refusal message: the API server's cause (without the Job's name, which each
// slot's Job has its own: what makes two refusals the same) and whether admission refused it
// (RefusedAtAdmission: tried again while the slot can start). ok is false for any other message.
func Refusal(msg string) (cause string, admission, ok bool) {
	rest, prefixed := strings.CutPrefix(msg, RefusalPrefix)
	name, cause, ok := strings.Cut(rest, ": ")
	if !prefixed || !ok {
		return msg, false, false
	}
	name, admission = strings.CutSuffix(name, atAdmission)
	return strings.ReplaceAll(cause, name, ""), admission, true
}

// Window is when a slot's Job may start: from Due (an At's time, a ScheduledJob's slot plus its
// jitter) until End (the deadline or the next slot; zero: none). An At is a one-slot schedule.
type Window struct{ Due, End time.Time }

// Retry is when to create the Job of a slot in w again after admission refused it at refusedAt,
// and whether that is still within w; past it the refusal is the slot's result. The one answer of
// At and ScheduledJob to RefusedAtAdmission.
func (w Window) Retry(refusedAt time.Time) (time.Time, bool) {
	at := refusedAt.Add(RefusedBackoff(refusedAt.Sub(w.Due)))
	return at, w.End.IsZero() || at.Before(w.End)
}

// RefusedBackoff is the wait before creating a Job refused at admission again: a quarter of how
// late the run is, at least a second and at most five minutes. Read from the time alone, it needs
// no count of attempts (state a restart would lose) and still grows geometrically.
func RefusedBackoff(late time.Duration) time.Duration {
	return min(max(late/4, time.Second), 5*time.Minute)
}
