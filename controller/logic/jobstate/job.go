package jobstate

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Finished reports whether the Job has finished and how: batch/v1 JobComplete or JobFailed,
// with the time it finished (completionTime, else the condition's transition time).
func Finished(j *batchv1.Job) (bool, batchv1.JobConditionType, time.Time) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			at := c.LastTransitionTime.Time
			if c.Type == batchv1.JobComplete && j.Status.CompletionTime != nil {
				at = j.Status.CompletionTime.Time
			}
			return true, c.Type, at
		}
	}
	return false, "", time.Time{}
}

// FailureMessage is the reason and message of the Job's Failed condition, if any.
func FailureMessage(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			if c.Message != "" {
				return c.Reason + ": " + c.Message
			}
			return c.Reason
		}
	}
	return ""
}

// SortByStartTime sorts Jobs oldest first by status.startTime (Jobs not started last), names
// breaking ties, as upstream does before pruning history.
func SortByStartTime(js []*batchv1.Job) {
	sort.SliceStable(js, func(a, b int) bool {
		x, y := js[a].Status.StartTime, js[b].Status.StartTime
		switch {
		case x == nil && y != nil:
			return false
		case x != nil && y == nil:
			return true
		case x == nil && y == nil, x.Equal(y):
			return js[a].Name < js[b].Name
		}
		return x.Before(y)
	})
}
