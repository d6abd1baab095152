package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// DST says how a slot (or a local time that gets none) meets a daylight-saving change of the
// schedule's time zone. The values are what `kubectl platform next` prints.
type DST string

const (
	// DSTNone: no change touches the slot.
	DSTNone DST = ""
	// DSTRunsOnce: the slot is in the first copy of a local hour a fall-back change repeats, and
	// the same local time in the second copy does not run (a fixed hour field, @daily).
	DSTRunsOnce DST = "RunsOnce"
	// DSTRunsTwice: the slot is in the first copy of a repeated hour and the same local time
	// runs again in the second copy (an hour field starting with * or ?, @hourly, @every).
	DSTRunsTwice DST = "RunsTwice"
	// DSTRepeat: the slot is in the second copy of a repeated hour: the same local time ran
	// before, an offset earlier.
	DSTRepeat DST = "Repeat"
	// DSTSkipped: the schedule names local times a spring-forward change removed that day; they
	// do not run, and nothing runs in their place. Not a slot: Planned.At is the change.
	DSTSkipped DST = "Skipped"
)

// Planned is one entry of Plan: a slot, or local times a spring-forward change skips.
type Planned struct {
	// At is the slot; for DSTSkipped, the instant of the change.
	At time.Time
	// DST is how a daylight-saving change touches it (DSTNone: not at all).
	DST DST
	// Twin is, for DSTRunsOnce, DSTRunsTwice and DSTRepeat, the other instant with the same
	// local time (the repeat, or the first occurrence).
	Twin time.Time
	// Wall is, for DSTSkipped, the first local time that does not exist and is skipped, as
	// "2006-01-02 15:04"; Count how many such local times the schedules name in the gap.
	Wall  string
	Count int
}

// Plan returns the next n slots of the union strictly after from (as Next gives them: what the
// controller runs), each marked with how a daylight-saving change touches it, with an entry
// for every spring-forward change between them that skips local times the schedules name.
// n above 10,000 is cut to 10,000. An @every entry counts elapsed time, not local time: it
// skips nothing.
func (u Union) Plan(from time.Time, n int) []Planned {
	n = min(n, 10000)
	var out []Planned
	prev := from
	for range n {
		next := u.Next(prev)
		end := next
		if next.IsZero() {
			end = prev.AddDate(1, 0, 0) // no more slots: report the gaps within a year
		}
		out = append(out, u.skippedSince(prev, end)...)
		if next.IsZero() {
			break
		}
		out = append(out, u.mark(next))
		prev = next
	}
	return out
}

// mark returns slot t with its DST mark: whether it lies in either copy of a local hour a
// fall-back change repeats, and, in the first copy, whether Next also runs the repeat.
func (u Union) mark(t time.Time) Planned {
	p := Planned{At: t}
	loc := u.Location()
	local := t.In(loc)
	start, end := local.ZoneBounds()
	_, off := local.Zone()
	if !end.IsZero() {
		if _, offAfter := end.In(loc).Zone(); offAfter < off {
			shift := time.Duration(off-offAfter) * time.Second
			if !t.Before(end.Add(-shift)) { // the first copy: [change-shift, change)
				p.Twin = t.Add(shift)
				p.DST = DSTRunsOnce
				if u.Next(p.Twin.Add(-time.Second)).Equal(p.Twin) {
					p.DST = DSTRunsTwice
				}
				return p
			}
		}
	}
	if !start.IsZero() {
		if _, offBefore := start.Add(-time.Second).In(loc).Zone(); offBefore > off {
			shift := time.Duration(offBefore-off) * time.Second
			if t.Before(start.Add(shift)) { // the second copy: [change, change+shift)
				p.DST, p.Twin = DSTRepeat, t.Add(-shift)
			}
		}
	}
	return p
}

// skippedSince returns an entry for each spring-forward change in (from, to] whose removed
// local times the schedules name. Each cron entry is asked, on a clock that reads local time
// as UTC (no DST), whether it fires in the removed span.
func (u Union) skippedSince(from, to time.Time) []Planned {
	if from.IsZero() || !to.After(from) {
		return nil
	}
	loc := u.Location()
	var out []Planned
	for t := from; ; {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || end.After(to) {
			return out
		}
		_, offBefore := end.Add(-time.Second).In(loc).Zone()
		_, offAfter := end.In(loc).Zone()
		if offAfter > offBefore {
			// The removed span in local time: from the change read in the old offset, for the shift.
			wall := end.In(time.FixedZone("", offBefore))
			gapStart := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, time.UTC)
			gapEnd := gapStart.Add(time.Duration(offAfter-offBefore) * time.Second)
			first, count := u.wallSlots(gapStart, gapEnd)
			if count > 0 {
				out = append(out, Planned{At: end, DST: DSTSkipped, Wall: first.Format("2006-01-02 15:04"), Count: count})
			}
		}
		t = end
	}
}

// wallSlots counts the local times in [start, end) (local time written as UTC) that any cron
// entry of the union names, and returns the first.
func (u Union) wallSlots(start, end time.Time) (time.Time, int) {
	seen := map[time.Time]bool{}
	var first time.Time
	for _, s := range u.parts {
		spec, ok := s.cron.(*cron.SpecSchedule)
		if !ok {
			continue // @every counts elapsed time
		}
		wall := *spec
		wall.Location = time.UTC
		for w := wall.Next(start.Add(-time.Second)); !w.IsZero() && w.Before(end); w = wall.Next(w) {
			if !seen[w] {
				seen[w] = true
				if first.IsZero() || w.Before(first) {
					first = w
				}
			}
		}
	}
	return first, len(seen)
}
