package jobstate

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// DefaultPodsStuckAfter is how long a started Job may go without any pod before its owner
// reports it (--job-pods-stuck-after).
const DefaultPodsStuckAfter = 2 * time.Minute

// PodsNotCreated reports whether j has had no pod for at least after (stuck), or else how long
// until it would count (wait; 0 when it never can; after <= 0 turns the check off). It is the
// shape the Job controller leaves a Job in when admission refuses every pod create: startTime
// set, no pod in any count, no terminal or interim condition. The wait counts from
// status.startTime (reset when a suspended Job resumes), or from creation before the first sync.
func PodsNotCreated(j *batchv1.Job, now time.Time, after time.Duration) (stuck bool, wait time.Duration) {
	// Suspended, parallelism 0, or managed by another controller (spec.managedBy): no pod by
	// design, not a refusal.
	if after <= 0 || ptr.Deref(j.Spec.Suspend, false) || j.DeletionTimestamp != nil || ptr.Deref(j.Spec.Parallelism, 1) == 0 {
		return false, 0
	}
	if _, elsewhere := ManagedElsewhere(j); elsewhere {
		return false, 0
	}
	s := j.Status
	if s.Active != 0 || s.Succeeded != 0 || s.Failed != 0 || ptr.Deref(s.Ready, 0) != 0 || ptr.Deref(s.Terminating, 0) != 0 {
		return false, 0
	}
	if u := s.UncountedTerminatedPods; u != nil && (len(u.Succeeded) > 0 || len(u.Failed) > 0) {
		return false, 0
	}
	for _, c := range s.Conditions {
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobFailed, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet, batchv1.JobSuspended:
			if c.Status == corev1.ConditionTrue {
				return false, 0
			}
		}
	}
	since := j.CreationTimestamp.Time
	if s.StartTime != nil {
		since = s.StartTime.Time
	}
	if left := since.Add(after).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// PodsNotCreatedMessage says that Job name has created no pod within after, and where to see why.
func PodsNotCreatedMessage(name string, after time.Duration) string {
	return "Job " + name + " has created no pod in " + after.String() + ": its pods are refused (Pod Security admission, a ResourceQuota, an admission webhook) or cannot be created; " +
		"\"kubectl describe job " + name + "\" shows the Job controller's FailedCreate events. It may still run once the cause is removed"
}
