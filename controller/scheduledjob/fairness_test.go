package scheduledjob

import (
	"testing"
	"time"
)

func TestFairShareRanksWithinANamespacePerInstant(t *testing.T) {
	slot := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	now := slot.Add(-30 * time.Second)
	type ask struct {
		namespace, name string
		at              time.Time
		want            int
	}
	cases := []struct {
		name string
		asks []ask
	}{
		{"a namespace's first is served with every other namespace's first", []ask{
			{"big", "a", slot, slotPriority},
			{"big", "b", slot, slotPriority - 1},
			{"big", "c", slot, slotPriority - 2},
			{"small", "x", slot, slotPriority},
			{"big", "d", slot, slotPriority - 3},
			{"small", "y", slot, slotPriority - 1},
		}},
		{"asking again keeps the rank", []ask{
			{"big", "a", slot, slotPriority},
			{"big", "b", slot, slotPriority - 1},
			{"big", "a", slot, slotPriority},
			{"big", "b", slot, slotPriority - 1},
		}},
		{"another instant ranks afresh", []ask{
			{"big", "a", slot, slotPriority},
			{"big", "b", slot, slotPriority - 1},
			{"big", "b", slot.Add(time.Minute), slotPriority},
			{"big", "a", slot.Add(time.Minute), slotPriority - 1},
		}},
		{"within the same second is the same instant", []ask{
			{"big", "a", slot.Add(100 * time.Millisecond), slotPriority},
			{"big", "b", slot.Add(900 * time.Millisecond), slotPriority - 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f fairShare
			for i, a := range tc.asks {
				got := f.priority(a.namespace, a.name, a.at, now)
				if got != a.want {
					t.Errorf("ask %d (%s/%s at %s): priority %d, want %d", i, a.namespace, a.name, a.at.Format(time.TimeOnly), got, a.want)
				}
				if got <= 0 {
					t.Errorf("ask %d: priority %d is not above a watch event's (0)", i, got)
				}
			}
		})
	}
}

func TestFairShareForgetsPastInstants(t *testing.T) {
	slot := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	var f fairShare
	for i, name := range []string{"a", "b", "c"} {
		if got := f.priority("ns", name, slot, slot.Add(-time.Second)); got != slotPriority-i {
			t.Fatalf("%s: %d", name, got)
		}
	}
	// Two minutes on, the instant is pruned: its map is gone, and the next slot starts afresh.
	f.priority("ns", "a", slot.Add(3*time.Minute), slot.Add(2*time.Minute))
	if _, ok := f.due[slot.Unix()]; ok {
		t.Errorf("the instant %s is still remembered two minutes later", slot.Format(time.TimeOnly))
	}
	if len(f.due) != 1 {
		t.Errorf("remembers %d instants, want 1", len(f.due))
	}
}
