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
