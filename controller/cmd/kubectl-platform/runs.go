package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// runsReport is what runs prints with -o json|yaml: the object and its runs as status.runs
// (newest first) holds them; an At has at most one.
type runsReport struct {
	Kind      string                     `json:"kind"`
	Name      string                     `json:"name"`
	Namespace string                     `json:"namespace"`
	TimeZone  string                     `json:"timeZone,omitempty"`
	Runs      []v1alpha1.ScheduledJobRun `json:"runs"`
}

func (c *cli) runsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "runs (SCHEDULEDJOB | scheduledjob/NAME | at/NAME)",
		Short: "Print the last runs of a ScheduledJob (status.runs) or the run of an At",
		Long: `Prints status.runs, newest first: each run's Job, its slot, when it started and finished, and
how it ended (Running, Succeeded, Failed, Skipped, Deleted) with the reason. Times are in the
ScheduledJob's time zone. The runs stay after their Jobs are pruned (spec.runHistoryLimit).`,
		Example: `  kubectl platform runs nightly-report -n reports
  kubectl platform runs at/migrate-once -n reports -o yaml`,
		Args: args(1, "a ScheduledJob's name, or at/NAME"),
		RunE: func(cmd *cobra.Command, a []string) error {
			kind, name := "scheduledjob", a[0]
			if k, n, ok := strings.Cut(a[0], "/"); ok {
				kind, name = strings.ToLower(k), n
			}
			cl, ns, err := c.clientIn()
			if err != nil {
				return err
			}
			key := types.NamespacedName{Namespace: ns, Name: name}
			rep := runsReport{Name: name, Namespace: ns}
			switch kind {
			case "scheduledjob", "scheduledjobs", "sj", "scheduledjob.ops.platform-operators.io":
				sj := &v1alpha1.ScheduledJob{}
				if err := cl.Get(cmd.Context(), key, sj); err != nil {
					return fmt.Errorf("scheduledjob %s/%s: %w", ns, name, err)
				}
				rep.Kind, rep.TimeZone, rep.Runs = "ScheduledJob", ptr.Deref(sj.Spec.TimeZone, ""), sj.Status.Runs
			case "at", "ats", "at.ops.platform-operators.io":
				at := &v1alpha1.At{}
				if err := cl.Get(cmd.Context(), key, at); err != nil {
					return fmt.Errorf("at %s/%s: %w", ns, name, err)
				}
				rep.Kind, rep.Runs = "At", atRuns(at)
			default:
				return usagef("runs knows scheduledjob/NAME and at/NAME, not %q", kind)
			}
			if rep.Runs == nil {
				rep.Runs = []v1alpha1.ScheduledJobRun{}
			}
			loc := time.UTC // also for a time zone this binary does not know
			if l, err := time.LoadLocation(rep.TimeZone); err == nil {
				loc = l
			}
			return printReport(c, rep, func(w io.Writer, rep runsReport) { runsTable(w, rep.Runs, loc) })
		},
	}
}

// atRuns is an At's one run in the shape of a ScheduledJob's: none while it waits for its time.
func atRuns(at *v1alpha1.At) []v1alpha1.ScheduledJobRun {
	st := at.Status
	if st.ScheduledTime == nil || (st.JobName == "" && st.Phase != v1alpha1.AtFailed) {
		return nil
	}
	r := v1alpha1.ScheduledJobRun{ScheduledTime: *st.ScheduledTime, JobName: st.JobName, StartTime: st.StartTime, CompletionTime: st.CompletionTime, Message: st.Message}
	switch st.Phase {
	case v1alpha1.AtSucceeded:
		r.Result = v1alpha1.RunSucceeded
	case v1alpha1.AtFailed:
		r.Result = v1alpha1.RunFailed
	default:
		r.Result = v1alpha1.RunRunning
	}
	return []v1alpha1.ScheduledJobRun{r}
}

// runLayout shows a run's times to the second, in the schedule's zone.
const runLayout = "2006-01-02 15:04:05 MST"

// runsTable writes the runs as kubectl writes tables, newest first as status.runs holds them.
func runsTable(w io.Writer, runs []v1alpha1.ScheduledJobRun, loc *time.Location) {
	if len(runs) == 0 {
		fmt.Fprintln(w, "No runs yet.")
		return
	}
	fmt.Fprintln(w, "JOB\tSCHEDULED\tSTARTED\tFINISHED\tDURATION\tRESULT\tREASON")
	for _, r := range runs {
		dur := "-"
		if r.StartTime != nil && r.CompletionTime != nil {
			dur = r.CompletionTime.Sub(r.StartTime.Time).Round(time.Second).String()
		}
		reason := r.Reason
		if r.Message != "" {
			reason = strings.TrimSpace(reason + ": " + oneLine(r.Message, 80))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(r.JobName), r.ScheduledTime.In(loc).Format(runLayout),
			when(r.StartTime, loc), when(r.CompletionTime, loc), dur, r.Result, orDash(strings.TrimPrefix(reason, ": ")))
	}
}

func when(t *metav1.Time, loc *time.Location) string {
	if t == nil {
		return "-"
	}
	return t.In(loc).Format(runLayout)
}

// oneLine cuts a message to one line of at most n characters, for a table cell.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
