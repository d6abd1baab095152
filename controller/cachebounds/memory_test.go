package cachebounds

import (
	"testing"
	"time"
)

func TestReturnDue(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	const quiet, gap = 5 * time.Second, 30 * time.Second
	for _, c := range []struct {
		name         string
		now, last    time.Time
		pendingSince time.Time
		pending      bool
		want         time.Time
	}{
		{"the first heavy event: returned once the events have stopped for the quiet time", s(0), time.Time{}, time.Time{}, false, s(5)},
		{"another one pushes it on", s(3), time.Time{}, s(0), true, s(8)},
		{"not sooner than the gap after the last return", s(40), s(20), time.Time{}, false, s(50)},
		{"long after the last return: the quiet time only", s(100), s(20), time.Time{}, false, s(105)},
		{"a flood that never pauses still returns once per gap", s(29), time.Time{}, s(0), true, s(30)},
		{"and goes on doing so after a return", s(58), s(30), s(31), true, s(61)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := returnDue(c.now, c.last, c.pendingSince, c.pending, quiet, gap); !got.Equal(c.want) {
				t.Errorf("due %s, want %s", got.Sub(t0), c.want.Sub(t0))
			}
		})
	}
}

// The returner frees once for a burst of heavy events, after they stop.
func TestMemoryIsReturnedOnceAfterABurst(t *testing.T) {
	freed := make(chan time.Time, 10)
	r := &memoryReturner{quiet: 50 * time.Millisecond, gap: time.Hour, now: time.Now, free: func() { freed <- time.Now() }}
	start := time.Now()
	for range 5 {
		r.heavy()
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case at := <-freed:
		if at.Sub(start) < 90*time.Millisecond {
			t.Errorf("freed %s after the burst began, before the events had stopped for the quiet time", at.Sub(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("memory was not handed back after the burst")
	}
	r.heavy() // within the gap: not before an hour
	select {
	case <-freed:
		t.Error("freed again within the gap")
	case <-time.After(200 * time.Millisecond):
	}
}
