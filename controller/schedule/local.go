package schedule

import (
	"fmt"
	"slices"
	"time"
)

// LocalLayout is the layout of a local date-time: an RFC 3339 time without an offset.
const LocalLayout = "2006-01-02T15:04:05"

// ResolveLocal returns the instant a local date-time names in loc, and a note when the answer
// needed a rule:
//   - a local time that does not exist (the clocks jump over it, spring forward) runs later by
//     the length of the jump: 02:30 in a 02:00→03:00 gap is 03:30;
//   - a local time that exists twice (the clocks go back, fall back) runs at the first, earlier
//     one.
//
// These are the rules java.time and most calendars apply; the note says which one was used.
func ResolveLocal(local string, loc *time.Location) (time.Time, string, error) {
	w, err := time.Parse(LocalLayout, local) // the wall clock, read as if it were UTC
	if err != nil {
		return time.Time{}, "", fmt.Errorf("local time %q: want YYYY-MM-DDTHH:MM:SS without an offset: %w", local, err)
	}
	// The offsets in force around that wall time: a transition is never closer than 36 hours to
	// another one, so these include both sides of any transition near it.
	var found []time.Time
	var before int
	for i, probe := range []time.Time{w.Add(-36 * time.Hour), w, w.Add(36 * time.Hour)} {
		_, off := probe.In(loc).Zone()
		if i == 0 {
			before = off
		}
		t := w.Add(-time.Duration(off) * time.Second)
		if sameWall(t.In(loc), w) && !slices.ContainsFunc(found, t.Equal) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		t := w.Add(-time.Duration(before) * time.Second)
		return t, fmt.Sprintf("%s does not exist in %s (the clocks jump forward over it): runs at %s, later by the jump",
			local, loc, t.In(loc).Format(time.RFC3339)), nil
	case 1:
		return found[0], "", nil
	default:
		first := slices.MinFunc(found, time.Time.Compare)
		return first, fmt.Sprintf("%s occurs twice in %s (the clocks go back): runs at the first, %s",
			local, loc, first.In(loc).Format(time.RFC3339)), nil
	}
}

func sameWall(t, w time.Time) bool {
	return t.Year() == w.Year() && t.YearDay() == w.YearDay() && t.Hour() == w.Hour() && t.Minute() == w.Minute() && t.Second() == w.Second()
}
