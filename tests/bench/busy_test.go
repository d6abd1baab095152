package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMilliListParsesCPUQuantities(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []int64
		err      bool
	}{
		{"millicores and cores", "10m,0.1,1", []int64{10, 100, 1000}, false},
		{"spaces around items", " 50m , 200m", []int64{50, 200}, false},
		{"zero is refused", "0", nil, true},
		{"a word is refused", "fast", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := milliList("-x", tc.in)
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
				t.Fatalf("milliList(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestBusyRatiosArePerPair(t *testing.T) {
	c := busyCell{
		floor: []time.Duration{2 * time.Second, 4 * time.Second, 0},
		ours:  []time.Duration{3 * time.Second, 2 * time.Second, time.Second},
	}
	got := c.ratios()
	if want := []float64{1.5, 0.5}; !slices.Equal(got, want) {
		t.Fatalf("ratios = %v, want %v (a pair without a floor is left out)", got, want)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of 3 = %v, want 2", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median of 4 = %v, want 2.5", m)
	}
}

func TestTogetherTableShowsEachSlotsOutcome(t *testing.T) {
	c := busyCell{milli: 200, mode: "contended", slots: []tally{{}, {}},
		slotRuns: []slotRun{{outcome: slotOutcomes{onTime: 1000}}, {outcome: slotOutcomes{onTime: 990, late: 8, missing: 2}}},
		outcomes: slotOutcomes{onTime: 1990, late: 8, missing: 2},
		during:   []fanOutRun{{d: 20 * time.Second, seen: 1000, n: 1000}}}
	var b strings.Builder
	writeTogether(&b, &busyResult{cells: []busyCell{c}}, busyOptions{together: true, slots: 2, namespaces: 1000, schedules: 1000})
	row := "| 200m | contended | 1 / 1 | 20.00 s | 1990 / 8 / 2 | 1000 / 0 / 0, 990 / 8 / 2 | 0 | **missed** |"
	if !strings.Contains(b.String(), row) {
		t.Fatalf("the table has no row %q:\n%s", row, b.String())
	}
}

func TestTheContendedSlotTargetIsTheFloorPlusOneSecond(t *testing.T) {
	run := func(p99 time.Duration) slotRun { return slotRun{t: tally{skews: []time.Duration{p99}}} }
	floor := func(id string, p99 time.Duration) jobFloorRun {
		return jobFloorRun{identity: id, visible: []time.Duration{p99}}
	}
	floors := []jobFloorRun{floor("admin", 9*time.Second), floor("manager", 10*time.Second)}
	cases := []struct {
		name  string
		cell  busyCell
		worst time.Duration
		want  bool
	}{
		{"at the floor", busyCell{slotRuns: []slotRun{run(9 * time.Second), run(10 * time.Second)}, floors: floors}, 10 * time.Second, true},
		{"one second over the slower floor's median is over the faster's", busyCell{slotRuns: []slotRun{run(11 * time.Second)}, floors: floors}, 11 * time.Second, false},
		{"within 1 s of both", busyCell{slotRuns: []slotRun{run(9900 * time.Millisecond)}, floors: floors}, 9900 * time.Millisecond, true},
		{"no floor: 2 s", busyCell{slotRuns: []slotRun{run(1900 * time.Millisecond)}}, 1900 * time.Millisecond, true},
		{"no floor, over 2 s", busyCell{slotRuns: []slotRun{run(3 * time.Second)}}, 3 * time.Second, false},
	}
	for _, c := range cases {
		if got := slotsNearFloor(c.cell, c.worst); got != c.want {
			t.Errorf("%s: slotsNearFloor = %v, want %v", c.name, got, c.want)
		}
	}
}
