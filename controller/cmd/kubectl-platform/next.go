package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/slots"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// maxCount bounds -c: the slots are computed here, not by the cluster, but a typo of 10000000
// should not spin.
const maxCount = 1000

// nextReport is what next prints with -o json|yaml.
type nextReport struct {
	// ScheduledJob is namespace/name, empty for --schedule.
	ScheduledJob string   `json:"scheduledJob,omitempty"`
	Schedules    []string `json:"schedules"`
	TimeZone     string   `json:"timeZone"`
	// Jitter is the fixed delay of this ScheduledJob's starts after their slots (spec.jitter).
	Jitter    string     `json:"jitter,omitempty"`
	Suspended bool       `json:"suspended,omitempty"`
	Slots     []nextSlot `json:"slots"`
}

// nextSlot is one slot, or (dst Skipped) local times a spring-forward night removes.
type nextSlot struct {
	// Time is the slot in the schedule's zone (RFC 3339), UTC the same instant in UTC; for a
	// Skipped entry both are the change, and Local the first local time that does not exist.
	Time string `json:"time"`
	UTC  string `json:"utc"`
	// Start is when the Job is created: the slot plus the jitter offset (only with jitter).
	Start string `json:"start,omitempty"`
	// Local is the slot's wall-clock time, as the schedule names it.
	Local string `json:"local"`
	// DST is RunsOnce, RunsTwice, Repeat or Skipped (schedule.DST); Note says it in words.
	DST  string `json:"dst,omitempty"`
	Note string `json:"note,omitempty"`
}

func (c *cli) nextCmd() *cobra.Command {
	var specs []string
	var tz string
	var count int
	var fromFlag string
	cmd := &cobra.Command{
		Use:   "next [SCHEDULEDJOB]",
		Short: "List the next slots of a ScheduledJob, or of a schedule in a time zone, DST nights marked",
		Long: `Lists the next slots as the controller computes them (controller/schedule: the same code), in the
schedule's time zone and in UTC. Slots on a daylight-saving night are marked: a fixed local time in
the hour a fall-back change repeats runs once (RunsOnce), an hour field starting with * runs in both
copies (RunsTwice, then Repeat), and local times a spring-forward change removes do not run that
night (Skipped, listed between the slots). A ScheduledJob's jitter delays each start (START).`,
		Example: `  kubectl platform next nightly-report -n reports -c 5
  kubectl platform next --schedule '30 2 * * *' --time-zone Europe/Berlin -c 3
  kubectl platform next --schedule '30 2 * * *' --time-zone Europe/Berlin --from 2026-03-28T12:00:00Z -c 2
  kubectl platform next --schedule '0 9 * * 1-5' --schedule '0 12 * * 6' --time-zone America/New_York`,
		Args: func(_ *cobra.Command, a []string) error {
			switch {
			case len(a) == 1 && len(specs) > 0:
				return usagef("give a ScheduledJob or --schedule, not both")
			case len(a) == 0 && len(specs) == 0:
				return usagef("give a ScheduledJob's name, or --schedule with a cron expression")
			case len(a) > 1:
				return usagef("expected one ScheduledJob, got %d arguments", len(a))
			case len(a) == 0 && c.namespaceSet():
				return usagef("-n names a ScheduledJob's namespace; with --schedule there is none")
			}
			if count < 1 || count > maxCount {
				return usagef("--count must be 1 to %d", maxCount)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			now := c.now()
			if fromFlag != "" {
				t, err := time.Parse(time.RFC3339, fromFlag)
				if err != nil {
					return usagef("--from %q: an RFC 3339 time, e.g. 2026-03-28T00:00:00Z", fromFlag)
				}
				now = t
			}
			rep := nextReport{Schedules: specs, TimeZone: tz}
			var jitter time.Duration
			stopped := false
			anchor := now.Truncate(time.Minute) // a schedule created now: @every counts from here
			if len(a) == 1 {
				cl, ns, err := c.clientIn()
				if err != nil {
					return err
				}
				sj := &v1alpha1.ScheduledJob{}
				if err := cl.Get(cmd.Context(), types.NamespacedName{Namespace: ns, Name: a[0]}, sj); err != nil {
					return fmt.Errorf("scheduledjob %s/%s: %w", ns, a[0], err)
				}
				rep.ScheduledJob = ns + "/" + a[0]
				rep.Schedules, rep.TimeZone = slots.Schedules(sj), ptr.Deref(sj.Spec.TimeZone, "")
				stopped = sj.Status.Stop != nil
				rep.Suspended = ptr.Deref(sj.Spec.Suspend, false) || stopped
				// The controller's anchor: when the schedules were first seen, or last edited (an
				// edit not yet seen is seen on the controller's next pass: about now).
				since, _ := slots.ObservedSince(sj, now)
				anchor = since.Truncate(time.Minute)
				if jitter = slots.JitterOffset(sj); jitter > 0 {
					rep.Jitter = jitter.String()
				}
			}
			sched, err := schedule.ParseAll(rep.Schedules, rep.TimeZone, now)
			if err != nil {
				return err
			}
			sched = sched.Anchored(anchor)
			rep.Slots = nextSlots(sched.Plan(now, count), sched.Location(), jitter)
			switch {
			case stopped:
				c.warn("scheduledjob %s is stopped by its stopStrategy (status.stop): these slots do not run until its spec changes", rep.ScheduledJob)
			case rep.Suspended:
				c.warn("scheduledjob %s is suspended: these slots do not run until spec.suspend is false", rep.ScheduledJob)
			}
			return printReport(c, rep, nextTable)
		},
	}
	cmd.Flags().StringArrayVar(&specs, "schedule", nil, "A cron expression (five fields or @daily, @every 90m, ...) instead of a ScheduledJob; repeat it for several (spec.schedules).")
	cmd.Flags().StringVar(&tz, "time-zone", "", "With --schedule: the IANA time zone it is read in, e.g. Europe/Berlin (default UTC).")
	cmd.Flags().StringVar(&fromFlag, "from", "", "List the slots after this RFC 3339 time instead of now (to look at a DST night).")
	cmd.Flags().IntVarP(&count, "count", "c", 5, fmt.Sprintf("How many slots (1 to %d).", maxCount))
	return cmd
}

// localLayout is how a slot's local time is shown: the weekday, because DST nights and
// day-of-week schedules are about days.
const localLayout = "Mon 2006-01-02 15:04 MST"

// nextSlots turns the schedule's plan into rows: each slot in the zone and in UTC, its start
// after jitter, and a note on a DST night saying what the controller does.
func nextSlots(plan []schedule.Planned, loc *time.Location, jitter time.Duration) []nextSlot {
	out := make([]nextSlot, 0, len(plan))
	for _, p := range plan {
		at := p.At.In(loc)
		s := nextSlot{Time: at.Format(time.RFC3339), UTC: p.At.UTC().Format(time.RFC3339), Local: at.Format(localLayout), DST: string(p.DST)}
		if jitter > 0 && p.DST != schedule.DSTSkipped {
			s.Start = p.At.Add(jitter).In(loc).Format(time.RFC3339)
		}
		twin := p.Twin.In(loc).Format("15:04 MST")
		switch p.DST {
		case schedule.DSTSkipped:
			// The change read on the clock before it (02:00 CET), and after it (03:00 CEST).
			name, off := p.At.Add(-time.Second).In(loc).Zone()
			before := p.At.In(time.FixedZone(name, off)).Format("15:04 MST")
			s.Local = p.Wall + " (does not exist)"
			if w, err := time.Parse("2006-01-02 15:04", p.Wall); err == nil {
				s.Local = w.Format("Mon 2006-01-02 15:04") + " (does not exist)"
			}
			s.Note = fmt.Sprintf("clocks jump from %s to %s: %s does not run that night, nothing runs in its place", before, at.Format("15:04 MST"), p.Wall[len("2006-01-02 "):])
			if p.Count > 1 {
				s.Note = fmt.Sprintf("clocks jump from %s to %s: %d slots from %s do not run that night, nothing runs in their place", before, at.Format("15:04 MST"), p.Count, p.Wall[len("2006-01-02 "):])
			}
		case schedule.DSTRunsOnce:
			s.Note = fmt.Sprintf("the clocks go back after it: the repeat at %s (%s) does not run", twin, p.Twin.UTC().Format("15:04Z"))
		case schedule.DSTRunsTwice:
			s.Note = fmt.Sprintf("the clocks go back after it: it runs again at %s (%s)", twin, p.Twin.UTC().Format("15:04Z"))
		case schedule.DSTRepeat:
			s.Note = fmt.Sprintf("second time this local time: it ran at %s (%s)", twin, p.Twin.UTC().Format("15:04Z"))
		}
		out = append(out, s)
	}
	return out
}

// nextTable writes the rows as kubectl writes tables.
func nextTable(w io.Writer, rep nextReport) {
	cols := []string{"SLOT (" + cmp.Or(rep.TimeZone, "UTC") + ")", "UTC"}
	if rep.Jitter != "" {
		cols = append(cols, "START (+"+rep.Jitter+")")
	}
	cols = append(cols, "DST")
	fmt.Fprintln(w, strings.Join(cols, "\t"))
	for _, s := range rep.Slots {
		row := []string{s.Local, s.UTC}
		if s.DST == string(schedule.DSTSkipped) {
			row[1] = "-"
		}
		if rep.Jitter != "" {
			start := "-"
			if t, err := time.Parse(time.RFC3339, s.Start); err == nil {
				start = t.Format("15:04:05")
			}
			row = append(row, start)
		}
		dst := s.DST
		if s.Note != "" {
			dst += " (" + s.Note + ")"
		}
		row = append(row, orDash(strings.TrimSpace(dst)))
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
