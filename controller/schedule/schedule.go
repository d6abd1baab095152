package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Padding is added to every requeue so that a wake-up a little early (timer granularity) still
// finds the slot due. Upstream uses 100ms; every Job of a slot is that much later. Go's timers
// fire within about a millisecond, and a wake-up that is early anyway (the wall clock stepped
// or slewed while waiting) finds nothing due and waits again for the remainder, so 10ms is
// enough.
const Padding = 10 * time.Millisecond

// TooManyMissed is the number of missed slots above which upstream warns (TooManyMissedTimes).
const TooManyMissed = 100

var (
	// ErrUnknownTimeZone means the time zone is not in the IANA database the manager has.
	ErrUnknownTimeZone = errors.New("unknown time zone")
	// ErrUnparseable means the cron expression does not parse.
	ErrUnparseable = errors.New("unparseable schedule")
	// ErrNeverFires means the expression parses but names no real time, e.g. "0 0 30 2 *".
	ErrNeverFires = errors.New("schedule never fires")
)

// Schedule is a parsed cron schedule in its time zone.
type Schedule struct {
	cron cron.Schedule
	loc  *time.Location
	// every is the interval of an @every schedule (robfig's, in whole seconds), zero otherwise.
	every time.Duration
	// anchor, when set (Anchored), is where an @every schedule's slots count from: they are
	// anchor + k*every, k >= 1, whatever instant Next is asked about.
	anchor time.Time
	// dedupeRepeatedHour is set when the hour field does not start with * or ? (see Next):
	// then a local time that a fall-back DST change repeats runs only at its first occurrence.
	dedupeRepeatedHour bool
}

// Parse parses a five-field cron expression or an @-descriptor, read in timeZone (IANA name;
// "" means UTC). The error wraps ErrUnknownTimeZone, ErrUnparseable or ErrNeverFires.
// A schedule that parses but never fires is detected by looking for its next slot after from
// (robfig/cron gives up after five years and returns the zero time).
func Parse(spec, timeZone string, from time.Time) (Schedule, error) {
	loc := time.UTC
	if timeZone != "" {
		l, err := time.LoadLocation(timeZone)
		if err != nil {
			return Schedule{}, fmt.Errorf("%w %q: %w", ErrUnknownTimeZone, timeZone, err)
		}
		loc = l
	}
	if strings.Contains(spec, "TZ=") {
		return Schedule{}, fmt.Errorf("%w %q: TZ= and CRON_TZ= are not supported, use timeZone", ErrUnparseable, spec)
	}
	s, err := parseWithRecovery(strings.TrimSpace(spec))
	if err != nil {
		return Schedule{}, fmt.Errorf("%w %q: %w", ErrUnparseable, spec, err)
	}
	if err := checkEvery(strings.TrimSpace(spec)); err != nil {
		return Schedule{}, err
	}
	out := Schedule{cron: s, loc: loc}
	switch cs := s.(type) {
	case *cron.SpecSchedule:
		cs.Location = loc // evaluate in our zone
		out.dedupeRepeatedHour = !hourIsWildcard(strings.TrimSpace(spec))
	case cron.ConstantDelaySchedule:
		out.every = cs.Delay
	}
	if out.Next(from).IsZero() {
		return Schedule{}, fmt.Errorf("%w: %q names no time that exists (checked five years ahead)", ErrNeverFires, spec)
	}
	return out, nil
}

// parseWithRecovery parses like upstream (cron.ParseStandard), which can panic on some input.
func parseWithRecovery(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parser panicked: %v", r)
		}
	}()
	return cron.ParseStandard(spec)
}

// Anchored returns the schedule with an @every schedule's slots counted from at (truncated to
// the second): at+d, at+2d, ... An unanchored @every counts from whatever Next is asked about
// (robfig's Next(t) is t+d), which is a schedule only if every question starts at its last
// slot; in a Union, whose Next asks from the last slot of any entry, it would never fire next to
// a more frequent entry. Other schedules are returned unchanged.
func (s Schedule) Anchored(at time.Time) Schedule {
	if s.every > 0 {
		s.anchor = at.Truncate(time.Second)
	}
	return s
}

// hourIsWildcard reports whether a five-field spec's hour field (the second) starts with * or ?
// (`*`, `*/2`, `?`, `*,5`), or a descriptor repeats within the day (@hourly): the rule of Vixie
// cron and cronie (HR_STAR), read from the text. robfig's own marker for * is no guide: it drops
// it for a step (`*/2`), which would make "every two hours" a list of fixed hours.
func hourIsWildcard(spec string) bool {
	if strings.HasPrefix(spec, "@") {
		return spec == "@hourly" || strings.HasPrefix(spec, "@every")
	}
	fields := strings.Fields(spec)
	return len(fields) > 1 && (strings.HasPrefix(fields[1], "*") || strings.HasPrefix(fields[1], "?"))
}

// Next returns the first slot strictly after t, or the zero time if there is none.
//
// DST rule (docs/scheduling.md, "Daylight saving time"): when the hour field does not start with
// * or ? (e.g. "30 2 * * *", "*/10 2 * * *", "0 1-3 * * *", @daily), a slot inside the second
// copy of a local hour repeated by a fall-back change is dropped, however many there are: each
// local time runs once, at its first occurrence. Schedules whose hour field starts with * or ?
// (e.g. "30 * * * *", "0 */2 * * *", @hourly) and @every run at every instant that matches, so
// in both copies. A local time skipped by a spring-forward change does not run that day (robfig,
// as upstream).
func (s Schedule) Next(t time.Time) time.Time {
	if s.every > 0 && !s.anchor.IsZero() {
		k := int64(1)
		if !t.Before(s.anchor) {
			k = int64(t.Sub(s.anchor)/s.every) + 1
		}
		return s.anchor.Add(time.Duration(k) * s.every)
	}
	n := s.cron.Next(t)
	for s.dedupeRepeatedHour && !n.IsZero() {
		end := s.repeatEnd(n)
		if end.IsZero() {
			break
		}
		// Every instant before end repeats a wall-clock time: resume the search at end. Each
		// round passes a fall-back change, so this ends (robfig gives up after five years).
		n = s.cron.Next(end.Add(-time.Second))
	}
	return n
}

// repeatEnd returns, when n lies in the second copy of a local time repeated by a fall-back
// change (its wall-clock time already occurred, under the larger offset before the change), the
// end of that second copy; otherwise the zero time. The second copy is [change, change+shift):
// in Berlin 02:00-03:00 CET after 03:00 CEST, in Lord Howe 30 minutes.
func (s Schedule) repeatEnd(n time.Time) time.Time {
	local := n.In(s.loc)
	change, _ := local.ZoneBounds()
	if change.IsZero() {
		return time.Time{} // the zone has had this offset forever (UTC)
	}
	_, offNow := local.Zone()
	_, offBefore := change.Add(-time.Second).In(s.loc).Zone()
	if offBefore <= offNow {
		return time.Time{} // not a fall-back change
	}
	end := change.Add(time.Duration(offBefore-offNow) * time.Second)
	if !n.Before(end) {
		return time.Time{}
	}
	return end
}

// Location is the schedule's time zone.
func (s Schedule) Location() *time.Location { return s.loc }

// Missed says how many slots passed unmet, as upstream reports it.
type Missed int

const (
	// NoneMissed means no slot passed since earliest.
	NoneMissed Missed = iota
	// FewMissed means at least one slot passed.
	FewMissed
	// ManyMissed means more than TooManyMissed slots passed: upstream's TooManyMissedTimes.
	ManyMissed
)

// Earliest is the time after which slots count: the latest of the object's creation, the last
// scheduled slot, the time the current schedule was first seen, and (when deadline is set and
// withDeadline) now minus the deadline.
func Earliest(created time.Time, lastSchedule, scheduleSeen *time.Time, deadlineSeconds *int64, now time.Time, withDeadline bool) time.Time {
	earliest := created
	for _, t := range []*time.Time{lastSchedule, scheduleSeen} {
		if t != nil && t.After(earliest) {
			earliest = *t
		}
	}
	if withDeadline && deadlineSeconds != nil {
		if d := now.Add(-time.Duration(*deadlineSeconds) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	return earliest
}

// MostRecent returns the most recent slot in (earliest, now], or nil if none, and how many slots
// were missed. Only that most recent slot is ever run ("one catch-up run"), as upstream. The
// count of missed slots is estimated from the gap between the first two slots, as upstream
// does, so that decades of missed minutes cost no CPU.
func (s Schedule) MostRecent(earliest, now time.Time) (*time.Time, Missed) {
	t1 := s.Next(earliest)
	if t1.IsZero() || now.Before(t1) {
		return nil, NoneMissed
	}
	t2 := s.Next(t1)
	if t2.IsZero() || now.Before(t2) {
		return &t1, NoneMissed
	}
	gap := max(t2.Sub(t1).Round(time.Second), time.Second)
	kind := FewMissed
	if int64(now.Sub(t1)/gap)+1 > TooManyMissed {
		kind = ManyMissed
	}
	recent := s.lastUpTo(t2, now, gap)
	return &recent, kind
}

// lastUpTo returns the last slot in [known, now], given that known is a slot at or before now.
// It walks forward from about now-window, doubling the window (first the gap between the first
// two slots) until the window holds a slot or reaches back to known. Upstream walks from one
// estimate only, which for an irregular schedule ("30 6-16/4 * * 1-5": 4 h gaps by day, 64 h
// over a weekend) can start after the most recent slot and find none: the catch-up run was lost
// silently. The cost stays bounded by the slots in twice the time since the most recent one,
// not by the time since earliest.
func (s Schedule) lastUpTo(known, now time.Time, gap time.Duration) time.Time {
	span := now.Sub(known)
	window := gap
	for {
		from := known
		if window < span {
			// Whole gaps after known: on the grid of a regular schedule, which @every needs
			// (its Next counts from its argument).
			gaps := int64((span - window) / gap) // whole gaps: a count, times the gap below
			from = known.Add(time.Duration(gaps) * gap)
		}
		last := time.Time{}
		for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
			last = t
		}
		switch {
		case !last.IsZero():
			return last
		case window >= span:
			return known
		case window > span/2:
			window = span
		default:
			window *= 2
		}
	}
}

// RequeueAfter is how long to wait from now until the first slot after the later of earliest
// and now, plus Padding. It is always positive. ok is false when no slot follows (the caller
// should not requeue).
func (s Schedule) RequeueAfter(earliest, now time.Time) (time.Duration, time.Time, bool) {
	return requeueAfter(s.Next, earliest, now)
}

func requeueAfter(nextAfter func(time.Time) time.Time, earliest, now time.Time) (time.Duration, time.Time, bool) {
	from := now
	if earliest.After(now) {
		from = earliest
	}
	next := nextAfter(from)
	if next.IsZero() {
		return 0, time.Time{}, false
	}
	d := next.Sub(now) + Padding
	if d <= 0 {
		d = Padding
	}
	return d, next, true
}

// Union is several schedules in one time zone, as one: its slots are those of any of them, and
// a minute two of them share is one slot (Next returns each instant once).
type Union struct {
	parts []Schedule
}

// ParseAll parses each spec as Parse does, in the same time zone. The error names the spec
// (by its index) that failed.
func ParseAll(specs []string, timeZone string, from time.Time) (Union, error) {
	if len(specs) == 0 {
		return Union{}, fmt.Errorf("%w: no schedule", ErrUnparseable)
	}
	u := Union{}
	for i, spec := range specs {
		s, err := Parse(spec, timeZone, from)
		if err != nil {
			if len(specs) > 1 {
				return Union{}, fmt.Errorf("schedules[%d]: %w", i, err)
			}
			return Union{}, err
		}
		u.parts = append(u.parts, s)
	}
	return u, nil
}

// Next returns the first slot strictly after t of any of the schedules, or the zero time.
func (u Union) Next(t time.Time) time.Time {
	var next time.Time
	for _, s := range u.parts {
		if n := s.Next(t); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// Anchored returns the union with each @every entry's slots counted from at (Schedule.Anchored).
// A ScheduledJob anchors at status.observedScheduleTime: its creation, or the last edit of its
// schedules.
func (u Union) Anchored(at time.Time) Union {
	out := Union{parts: make([]Schedule, len(u.parts))}
	for i, s := range u.parts {
		out.parts[i] = s.Anchored(at)
	}
	return out
}

// Location is the schedules' time zone.
func (u Union) Location() *time.Location { return u.parts[0].loc }

// MostRecent returns the most recent slot of any of the schedules in (earliest, now], and how
// many were missed (the most of any one schedule).
func (u Union) MostRecent(earliest, now time.Time) (*time.Time, Missed) {
	var recent *time.Time
	missed := NoneMissed
	for _, s := range u.parts {
		r, m := s.MostRecent(earliest, now)
		if r != nil && (recent == nil || r.After(*recent)) {
			recent = r
		}
		missed = max(missed, m)
	}
	if recent != nil && missed == NoneMissed && u.countUpTo(earliest, *recent, 2) > 1 {
		missed = FewMissed // two schedules each with one slot: one of them was missed
	}
	return recent, missed
}

// countUpTo counts the union's slots in (earliest, until], stopping at limit.
func (u Union) countUpTo(earliest, until time.Time, limit int) int {
	n := 0
	for t := u.Next(earliest); !t.IsZero() && !t.After(until) && n < limit; t = u.Next(t) {
		n++
	}
	return n
}

// RequeueAfter is Schedule.RequeueAfter over the union.
func (u Union) RequeueAfter(earliest, now time.Time) (time.Duration, time.Time, bool) {
	return requeueAfter(u.Next, earliest, now)
}
