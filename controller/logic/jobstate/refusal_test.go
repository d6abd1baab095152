package jobstate

import (
	"testing"
	"time"
)

func TestRefusedBackoff(t *testing.T) {
	for _, tc := range []struct{ late, want time.Duration }{
		{0, time.Second}, {2 * time.Second, time.Second}, {8 * time.Second, 2 * time.Second},
		{time.Minute, 15 * time.Second}, {time.Hour, 5 * time.Minute},
	} {
		if got := RefusedBackoff(tc.late); got != tc.want {
			t.Errorf("RefusedBackoff(%v) = %v, want %v", tc.late, got, tc.want)
		}
	}
}

func TestRefusalReadsTheCauseAndWhetherAdmissionRefused(t *testing.T) {
	for _, tc := range []struct {
		msg, cause    string
		admission, ok bool
	}{
		{RefusalPrefix + "sj-1-123: jobs.batch \"sj-1-123\" is invalid: x", "jobs.batch \"\" is invalid: x", false, true},
		{RefusalPrefix + "sj-1-123" + atAdmission + ": jobs.batch \"sj-1-123\" is forbidden: exceeded quota", "jobs.batch \"\" is forbidden: exceeded quota", true, true},
		{"something else", "something else", false, false},
	} {
		cause, admission, ok := Refusal(tc.msg)
		if cause != tc.cause || admission != tc.admission || ok != tc.ok {
			t.Errorf("Refusal(%q) = %q, %v, %v; want %q, %v, %v", tc.msg, cause, admission, ok, tc.cause, tc.admission, tc.ok)
		}
	}
}

func TestWindowRetryStaysWithinTheSlotsWindow(t *testing.T) {
	due := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		w         Window
		refusedAt time.Time
		want      time.Time
		ok        bool
	}{
		{"at once: a second later", Window{Due: due, End: due.Add(time.Minute)}, due, due.Add(time.Second), true},
		{"a quarter of how late", Window{Due: due, End: due.Add(time.Minute)}, due.Add(20 * time.Second), due.Add(25 * time.Second), true},
		{"past the end: the refusal is the result", Window{Due: due, End: due.Add(time.Minute)}, due.Add(50 * time.Second), due.Add(62500 * time.Millisecond), false},
		{"no end (an At without a deadline)", Window{Due: due}, due.Add(time.Hour), due.Add(time.Hour + 5*time.Minute), true},
	} {
		got, ok := tc.w.Retry(tc.refusedAt)
		if !got.Equal(tc.want) || ok != tc.ok {
			t.Errorf("%s: Retry = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
