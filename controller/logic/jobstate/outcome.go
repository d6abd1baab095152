package jobstate

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// QueueNameLabel is the label by which Kueue queues a Job (the Job is created suspended and
// Kueue resumes it once admitted). Trim keeps it so that a waiting run can name its queue.
const QueueNameLabel = "kueue.x-k8s.io/queue-name"

// Reasons a Job that has not finished waits rather than runs.
const (
	// ReasonJobSuspended: spec.suspend is true, from the template (a queue such as Kueue holds
	// the Job until it admits it) or set later (a queue preempted it). The Job creates no pod
	// until something resumes it.
	ReasonJobSuspended = "JobSuspended"
	// ReasonManagedElsewhere: spec.managedBy names a controller other than the built-in Job
	// controller (Kueue's MultiKueue runs it in another cluster), which has not reported it
	// started. The built-in Job controller ignores such a Job: it gets no pod and no status here.
	ReasonManagedElsewhere = "ManagedElsewhere"
)

// Phase is how a Job stands as the At and ScheduledJob controllers report it.
type Phase string

const (
	// PhaseRunning: not finished, and not waiting (pods may be running, starting, or
	// terminating after an interim FailureTarget or SuccessCriteriaMet condition).
	PhaseRunning Phase = "Running"
	// PhaseWaiting: not finished and held: suspended, or managed by another controller that
	// has not started it. Reason says which.
	PhaseWaiting Phase = "Waiting"
	// PhaseSucceeded: the Job's Complete condition is True.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: the Job's Failed condition is True.
	PhaseFailed Phase = "Failed"
)

// Outcome is the judgement of one Job (Judge).
type Outcome struct {
	Phase Phase
	// Reason is the reason of the Job's terminal condition (CompletionsReached, SuccessPolicy,
	// BackoffLimitExceeded, PodFailurePolicy, FailedIndexes, ...) when finished, ReasonJobSuspended
	// or ReasonManagedElsewhere when waiting, "" when running.
	Reason string
	// Message is the terminal condition's message when finished; for a waiting Job, what holds
	// it (the queue's name, the managing controller).
	Message string
	// Finished is when it finished (Finished's time); zero unless Succeeded or Failed.
	Finished time.Time
}

// Judge says how Job j stands, from its own conditions and spec, as upstream's CronJob
// controller reads them: only the terminal conditions Complete and Failed end a run, whatever led
// to them. Under the interim conditions FailureTarget and SuccessCriteriaMet the run is still
// Running (its pods hold resources, as upstream counts it active) until the terminal one follows.
// A Job not finished Waits while suspended (JobSuspended) or managed by another controller that
// has not reported it started (ManagedElsewhere); otherwise it is Running. Pure.
func Judge(j *batchv1.Job) Outcome {
	if finished, how, when := Finished(j); finished {
		o := Outcome{Phase: PhaseFailed, Finished: when}
		if how == batchv1.JobComplete {
			o.Phase = PhaseSucceeded
		}
		for _, c := range j.Status.Conditions {
			if c.Type == how && c.Status == corev1.ConditionTrue {
				o.Reason, o.Message = c.Reason, c.Message
				break
			}
		}
		return o
	}
	if ptr.Deref(j.Spec.Suspend, false) {
		msg := "Job " + j.Name + " is suspended (spec.suspend): it creates no pod until it is resumed"
		if q := j.Labels[QueueNameLabel]; q != "" {
			msg = "Job " + j.Name + " is suspended, queued in " + q + " (" + QueueNameLabel + "): it starts when the queue admits it"
		}
		return Outcome{Phase: PhaseWaiting, Reason: ReasonJobSuspended, Message: msg}
	}
	if by, elsewhere := ManagedElsewhere(j); elsewhere && j.Status.StartTime == nil && j.Status.Active == 0 && ptr.Deref(j.Status.Ready, 0) == 0 {
		return Outcome{Phase: PhaseWaiting, Reason: ReasonManagedElsewhere,
			Message: "Job " + j.Name + " is managed by " + by + " (spec.managedBy), not the built-in Job controller: its pods and status come from there, and it has not reported the Job started"}
	}
	return Outcome{Phase: PhaseRunning}
}

// ManagedElsewhere returns the controller spec.managedBy names, and whether that is another
// controller than the built-in Job controller (which then leaves the Job alone: no pod, no
// status; the named controller writes its status, as Kueue's MultiKueue mirrors a remote Job's).
func ManagedElsewhere(j *batchv1.Job) (string, bool) {
	by := ptr.Deref(j.Spec.ManagedBy, "")
	return by, by != "" && by != batchv1.JobControllerName
}

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

// SortByStartTime sorts Jobs oldest first by status.startTime (Jobs not started last), names
// breaking ties, as upstream does before pruning history.
func SortByStartTime(js []*batchv1.Job) {
	sort.SliceStable(js, func(a, b int) bool {
		x, y := js[a].Status.StartTime, js[b].Status.StartTime
		switch {
		case (x == nil) != (y == nil):
			return y == nil // not started: last
		case x == nil || x.Equal(y):
			return js[a].Name < js[b].Name
		}
		return x.Before(y)
	})
}

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
	_, elsewhere := ManagedElsewhere(j)
	if after <= 0 || elsewhere || ptr.Deref(j.Spec.Suspend, false) || j.DeletionTimestamp != nil || ptr.Deref(j.Spec.Parallelism, 1) == 0 {
		return false, 0
	}
	s, u := j.Status, j.Status.UncountedTerminatedPods
	if s.Active != 0 || s.Succeeded != 0 || s.Failed != 0 || ptr.Deref(s.Ready, 0) != 0 || ptr.Deref(s.Terminating, 0) != 0 ||
		u != nil && (len(u.Succeeded) > 0 || len(u.Failed) > 0) {
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
