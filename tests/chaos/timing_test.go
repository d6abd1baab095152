package main

import (
	"testing"
	"time"
)

// TestCheckAtLeavesTheControllerSettleAfterItIsBack: a slot scenario checks settle after the later
// of the slot and the fault's end, never while a failover is still under way. With the default
// Lease (90 s) a kill -9 at +0.5 s is followed by a takeover about 95 s later; a check at
// slot+settle (the harness before this) would run 10 s after the new leader took over and report
// the slots it had not reached yet as lost.
func TestCheckAtLeavesTheControllerSettleAfterItIsBack(t *testing.T) {
	slot := time.Date(2026, 11, 29, 8, 21, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		back time.Time
		want time.Time
	}{
		{"upgrade: back at the slot", slot, slot.Add(settle)},
		{"API server kill at +0.5 s, Lease kept", slot.Add(500 * time.Millisecond), slot.Add(500*time.Millisecond + settle)},
		{"back before the slot", slot.Add(-8 * time.Second), slot.Add(settle)},
		{"kill -9, 90 s Lease taken 94.5 s after", slot.Add(96 * time.Second), slot.Add(96*time.Second + settle)},
		{"SIGSTOP 97 s, Lease taken at +92 s", slot.Add(92 * time.Second), slot.Add(92*time.Second + settle)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkAt(slot, tc.back)
			if !got.Equal(tc.want) {
				t.Fatalf("checkAt(slot, back) = slot%+v, want slot%+v", got.Sub(slot), tc.want.Sub(slot))
			}
			// The controller has settle after it is back and after the slot, whichever is later.
			if got.Sub(tc.back) < settle || got.Sub(slot) < settle {
				t.Fatalf("check at slot%+v leaves less than %s after back (slot%+v)", got.Sub(slot), settle, tc.back.Sub(slot))
			}
			// The faulted slot is among the checked ones: finish checks minutes at least 45 s old.
			if until := got.Add(-45 * time.Second).Truncate(time.Minute); until.Before(slot) {
				t.Fatalf("the check at slot%+v does not cover the slot", got.Sub(slot))
			}
		})
	}
}

// TestTakeoverWithinCoversAFailoverAfterAKill: after a kill -9 a standby takes the Lease about the
// Lease duration after it last saw it change, plus up to two retries of at most 4.4 s (retry
// period 2 s, jittered); the wait must outlast that, for the default Lease and controller-runtime's.
func TestTakeoverWithinCoversAFailoverAfterAKill(t *testing.T) {
	for _, lease := range []time.Duration{15 * time.Second, 90 * time.Second} {
		worst := lease + 2*4400*time.Millisecond
		if got := takeoverWithin(lease); got < worst {
			t.Errorf("takeoverWithin(%s) = %s, shorter than the worst takeover %s", lease, got, worst)
		}
	}
}
