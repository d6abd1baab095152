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
	// dedupeRepeatedHour is set when the hour field names specific hours: then a local time
	// that a fall-back DST change repeats runs only at its first occurrence.
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
	if ss, ok := s.(*cron.SpecSchedule); ok {
		// Evaluate in our zone; robfig's starBit (1<<63) marks a field that began with * or ?.
		ss.Location = loc
		out.dedupeRepeatedHour = ss.Hour&(1<<63) == 0
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

// Next returns the first slot strictly after t, or the zero time if there is none.
//
// DST rule: when the hour field names specific hours (e.g. "30 2 * * *"), a local time repeated
// by a fall-back change runs once, at its first occurrence. Schedules whose hour field starts
// with * run by elapsed time, so an hourly job runs in both copies of the repeated hour. A local
// time skipped by a spring-forward change does not run that day (as upstream).
func (s Schedule) Next(t time.Time) time.Time {
	n := s.cron.Next(t)
	for i := 0; s.dedupeRepeatedHour && !n.IsZero() && i < 4 && s.isRepeat(n); i++ {
		n = s.cron.Next(n)
	}
	return n
}

// isRepeat reports whether the wall-clock time of n (in the schedule's zone) already occurred
// earlier under a larger UTC offset, i.e. n is the second copy of a repeated local time.
func (s Schedule) isRepeat(n time.Time) bool {
	local := n.In(s.loc)
	_, offNow := local.Zone()
	// Look a few hours back for a larger offset: that is a fall-back change before n.
	_, offBefore := n.Add(-3 * time.Hour).In(s.loc).Zone()
	if offBefore <= offNow {
		return false
	}
	first := n.Add(-time.Duration(offBefore-offNow) * time.Second).In(s.loc)
	_, offFirst := first.Zone()
	return offFirst != offNow && sameWallClock(first, local)
}

func sameWallClock(a, b time.Time) bool {
	y1, m1, d1 := a.Date()
	y2, m2, d2 := b.Date()
	return y1 == y2 && m1 == m2 && d1 == d2 && a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
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
	gap := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if gap < 1 {
		gap = 1
	}
	missed := int64(now.Sub(t1).Seconds())/gap + 1
	// Start one interval before the estimate and walk forward: exact for regular schedules and
	// @every, and correct for irregular ones such as "30 6-16/4 * * 1-5".
	var recent time.Time
	for t := s.Next(t1.Add(time.Duration((missed-2)*gap) * time.Second)); !t.IsZero() && !t.After(now); t = s.Next(t) {
		recent = t
	}
	kind := FewMissed
	if missed > TooManyMissed {
		kind = ManyMissed
	}
	if recent.IsZero() {
		return nil, kind
	}
	return &recent, kind
}

// RequeueAfter is how long to wait from now until the first slot after the later of earliest
// and now, plus Padding. It is always positive. ok is false when no slot follows (the caller
// should not requeue).
func (s Schedule) RequeueAfter(earliest, now time.Time) (time.Duration, time.Time, bool) {
	from := now
	if earliest.After(now) {
		from = earliest
	}
	next := s.Next(from)
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
		if m > missed {
			missed = m
		}
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
	from := now
	if earliest.After(now) {
		from = earliest
	}
	next := u.Next(from)
	if next.IsZero() {
		return 0, time.Time{}, false
	}
	d := next.Sub(now) + Padding
	if d <= 0 {
		d = Padding
	}
	return d, next, true
}
