package scheduledjob

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The memory of replaced Jobs keeps a delete for an hour, forgets it within the minute after,
// and sweeps at most once a minute: a slot that replaces a thousand Jobs does not walk the
// memory a thousand times.
func TestDeletionsForgetAfterAnHourAndSweepOnceAMinute(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var d deletions
	d.add("old", t0)
	for i := range 1000 {
		d.add(types.UID(fmt.Sprint("slot-", i)), t0.Add(30*time.Second))
	}
	if !d.has("old") || len(d.uids) != 1001 {
		t.Fatalf("has(old) %v, %d entries; want true and 1001", d.has("old"), len(d.uids))
	}
	if d.swept != t0 {
		t.Errorf("swept at %v, want only at the first add (%v): once a minute", d.swept, t0)
	}
	d.add("late", t0.Add(time.Hour+2*time.Minute))
	if d.has("old") || d.has("slot-0") || !d.has("late") || len(d.uids) != 1 {
		t.Errorf("after an hour: has(old) %v, has(slot-0) %v, has(late) %v, %d entries; want false, false, true, 1", d.has("old"), d.has("slot-0"), d.has("late"), len(d.uids))
	}
}
