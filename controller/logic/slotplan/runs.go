package slotplan

import (
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// runHistory is status.runs after looking at the ScheduledJob's Jobs: each Job's record is
// brought up to date, records of Jobs that are gone stay (pruned ones keep their result; one
// that was still running is Deleted), newest first, at most limit.
func runHistory(prev []v1alpha1.ScheduledJobRun, children []*batchv1.Job, limit int) []v1alpha1.ScheduledJobRun {
	if limit <= 0 {
		return nil
	}
	seen := map[string]bool{}
	// slots that have a Job: a run without a Job recorded for one of them (skipped by a pass that
	// did not see the Job yet, refused then retried) is superseded by the Job's run.
	ran := map[int64]bool{}
	var out []v1alpha1.ScheduledJobRun
	for _, j := range children {
		scheduled, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
		if err != nil {
			continue // not a Job of a slot
		}
		seen[j.Name] = true
		if _, runNow := j.Annotations[keys.AnnotationRunNowToken]; !runNow {
			ran[scheduled.Unix()] = true
		}
		result, o := RunOf(j, "")
		rec := v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(scheduled), JobName: j.Name, Result: result, StartTime: j.Status.StartTime.DeepCopy()}
		setResult(&rec, o)
		out = append(out, rec)
	}
	for _, r := range prev {
		if r.JobName != "" && seen[r.JobName] || r.JobName == "" && ran[r.ScheduledTime.Unix()] {
			continue
		}
		if result, _ := RunOf(nil, r.Result); result != r.Result {
			r.Result, r.Reason, r.Message = result, "", ""
		}
		out = append(out, r)
	}
	return capRuns(out, limit)
}

// RunOf is how one run stands, for an At and a ScheduledJob's run alike, from its Job (nil when
// none was found, not even as jobs.Gone remembers it) and the result the status read records for
// it: with a Job, as jobstate.Judge reads it; without one, an ended result (Succeeded, Failed,
// Skipped, Deleted) stands, and any other is Deleted: its Job went before a replica saw it end.
func RunOf(job *batchv1.Job, recorded v1alpha1.RunResult) (v1alpha1.RunResult, jobstate.Outcome) {
	switch {
	case job != nil:
		o := jobstate.Judge(job)
		return v1alpha1.RunResult(o.Phase), o // the phases are run results (TestJobPhasesAreRunResults)
	case recorded == v1alpha1.RunSucceeded, recorded == v1alpha1.RunFailed, recorded == v1alpha1.RunSkipped, recorded == v1alpha1.RunDeleted:
		return recorded, jobstate.Outcome{}
	}
	return v1alpha1.RunDeleted, jobstate.Outcome{}
}

// maxRunReason bounds status.runs[].reason as taken from a Job's condition.
const maxRunReason = 128

// setResult records in rec why its Job stands as it does (RunOf), so the history still says
// why once the Job is pruned.
func setResult(rec *v1alpha1.ScheduledJobRun, o jobstate.Outcome) {
	rec.Reason, rec.Message = o.Reason, runMessage(o.Message)
	if len(rec.Reason) > maxRunReason {
		// Reasons are CamelCase words; whoever may write a Job's status could write more.
		rec.Reason = strings.ToValidUTF8(rec.Reason[:maxRunReason], "")
	}
	if !o.Finished.IsZero() {
		rec.CompletionTime = &metav1.Time{Time: o.Finished}
	}
}

// addRun records a run that has no Job (a slot skipped, a Job refused), once per time.
func addRun(runs []v1alpha1.ScheduledJobRun, run v1alpha1.ScheduledJobRun, limit int) []v1alpha1.ScheduledJobRun {
	if limit <= 0 {
		return nil
	}
	for _, r := range runs {
		if r.JobName == "" && r.ScheduledTime.Time.Equal(run.ScheduledTime.Time) {
			return runs // already said
		}
	}
	return capRuns(append(runs, run), limit)
}

// capRuns sorts runs newest first and keeps limit of them.
func capRuns(runs []v1alpha1.ScheduledJobRun, limit int) []v1alpha1.ScheduledJobRun {
	sort.SliceStable(runs, func(a, b int) bool {
		if !runs[a].ScheduledTime.Time.Equal(runs[b].ScheduledTime.Time) {
			return runs[a].ScheduledTime.After(runs[b].ScheduledTime.Time)
		}
		return runs[a].JobName > runs[b].JobName
	})
	runs = runs[:min(len(runs), limit)]
	if len(runs) == 0 {
		return nil
	}
	return runs
}

// runRecordedDone reports whether the written runs say how Job j ended, or need not: a finished
// Job is pruned only once the status already written records its result, unless it is older
// than every run a full history keeps (or is no slot Job), so nothing is lost by pruning it.
func runRecordedDone(runs []v1alpha1.ScheduledJobRun, j *batchv1.Job, limit int) bool {
	for _, r := range runs {
		if r.JobName == j.Name {
			return r.Result == v1alpha1.RunSucceeded || r.Result == v1alpha1.RunFailed
		}
	}
	scheduled, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
	return err != nil || len(runs) >= limit && scheduled.Before(runs[len(runs)-1].ScheduledTime.Time)
}

// NoSuccessAfter is the ScheduledJob's own threshold of the no-success alert: its
// keys.AnnotationAlertNoSuccessAfter as a Go duration ("26h"); 0 when unset, unparsable or not
// positive (the chart's threshold applies).
func NoSuccessAfter(sj *v1alpha1.ScheduledJob) time.Duration {
	d, err := time.ParseDuration(sj.Annotations[keys.AnnotationAlertNoSuccessAfter])
	if err != nil || d <= 0 {
		return 0
	}
	return d
}
