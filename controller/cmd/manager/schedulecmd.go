package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/platform-operators/platform-operators/controller/schedule"
)

// maxScheduleCount bounds --count: a day of a minutely schedule, with room to spare.
const maxScheduleCount = 10000

// scheduleUsage opens `manager schedule --help`.
const scheduleUsage = `Usage: manager schedule --schedule CRON [--time-zone ZONE] [--from RFC3339] [--count N]

Prints when a ScheduledJob with this spec.schedule and spec.timeZone runs: one line per run, the
time in UTC, a tab, and the same time in the time zone. A schedule or time zone the ScheduledJob
controller would refuse is a usage error (exit 2), with the message its Ready condition would show.

Flags:
`

// scheduleCommand runs `manager schedule`: when will a ScheduledJob with this schedule and time
// zone fire? The clock is read once, here, for the default --from.
func scheduleCommand(args []string, stdout, stderr io.Writer) error {
	return runSchedule(args, time.Now(), stdout, stderr)
}

// runSchedule parses the flags and prints the next --count run times at or after --from (default
// now), one per line: the time in UTC and, after a tab, the same instant in the schedule's time
// zone, both RFC 3339. The schedule and zone are read by schedule.Parse, as the ScheduledJob
// controller reads spec.schedule and spec.timeZone, so an error here is the error the
// ScheduledJob's Ready condition would show, and the times are the times it would run.
func runSchedule(args []string, now time.Time, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	spec := fs.String("schedule", "", "Cron schedule as in a ScheduledJob's spec.schedule: five fields or an @-descriptor (required).")
	timeZone := fs.String("time-zone", "", "IANA time zone as in spec.timeZone, e.g. Asia/Seoul (default: UTC).")
	fromFlag := fs.String("from", "", "List runs at or after this time, RFC 3339 (default: now).")
	count := fs.Int("count", 5, fmt.Sprintf("How many runs to list (1 to %d).", maxScheduleCount))
	if err := parseCommandLine(fs, scheduleUsage, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %q (quote the schedule: --schedule '0 9 * * *')", fs.Args())
	}
	if *spec == "" {
		return usagef("--schedule is required")
	}
	if *count < 1 || *count > maxScheduleCount {
		return usagef("--count must be between 1 and %d, not %d", maxScheduleCount, *count)
	}
	from := now
	if *fromFlag != "" {
		t, err := time.Parse(time.RFC3339, *fromFlag)
		if err != nil {
			return usagef("--from %q is not an RFC 3339 time such as 2026-01-01T00:00:00Z", *fromFlag)
		}
		from = t
	}
	sched, err := schedule.Parse(*spec, *timeZone, from)
	if err != nil {
		return usageError{err}
	}
	// Next is strictly after its argument and works in whole seconds: one nanosecond earlier
	// makes --from itself count when it is a slot (and a fractional --from rounds up, not down).
	t := from.Add(-time.Nanosecond)
	for range *count {
		t = sched.Next(t)
		// Parse found one run, but a later one may lie beyond the five years the cron library
		// searches: 29 February after 2096 comes back in 2104.
		if t.IsZero() {
			return errors.New("no further run within five years of the last one listed")
		}
		fmt.Fprintf(stdout, "%s\t%s\n", t.UTC().Format(time.RFC3339), t.In(sched.Location()).Format(time.RFC3339))
	}
	return nil
}
