package jobstate

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// refusedJob is a Job as the Job controller of Kubernetes 1.36 leaves it when admission refuses
// every pod create: startTime set at its first sync, ready and terminating 0 (not nil), an empty
// uncountedTerminatedPods, no condition.
func refusedJob(started time.Time, opts ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "run", CreationTimestamp: metav1.NewTime(started.Add(-time.Second))}}
	j.Status = batchv1.JobStatus{StartTime: &metav1.Time{Time: started}, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}
	for _, o := range opts {
		o(j)
	}
	return j
}

func TestPodsNotCreated(t *testing.T) {
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	const after = 2 * time.Minute
	cond := func(c batchv1.JobConditionType) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
		}
	}
	for _, tc := range []struct {
		name  string
		job   *batchv1.Job
		now   time.Time
		after time.Duration
		stuck bool
		wait  time.Duration
	}{
		{name: "a refused Job younger than the threshold is not stuck yet: look again when it would be", job: refusedJob(start),
			now: start.Add(30 * time.Second), after: after, wait: 90 * time.Second},
		{name: "a refused Job at the threshold is stuck", job: refusedJob(start), now: start.Add(after), after: after, stuck: true},
		{name: "the wait counts from startTime, not creation (a resumed Job)", job: refusedJob(start, func(j *batchv1.Job) {
			j.CreationTimestamp = metav1.NewTime(start.Add(-time.Hour))
		}), now: start.Add(time.Minute), after: after, wait: time.Minute},
		{name: "a Job the Job controller never synced counts from its creation", job: refusedJob(start, func(j *batchv1.Job) {
			j.Status = batchv1.JobStatus{}
		}), now: start.Add(after), after: after, stuck: true},
		{name: "an active pod is progress", job: refusedJob(start, func(j *batchv1.Job) { j.Status.Active = 1 }), now: start.Add(time.Hour), after: after},
		{name: "a ready pod is progress", job: refusedJob(start, func(j *batchv1.Job) { j.Status.Ready = ptr.To[int32](1) }), now: start.Add(time.Hour), after: after},
		{name: "a terminating pod is progress", job: refusedJob(start, func(j *batchv1.Job) { j.Status.Terminating = ptr.To[int32](1) }), now: start.Add(time.Hour), after: after},
		{name: "a succeeded pod is progress", job: refusedJob(start, func(j *batchv1.Job) { j.Status.Succeeded = 1 }), now: start.Add(time.Hour), after: after},
		{name: "a failed pod is progress", job: refusedJob(start, func(j *batchv1.Job) { j.Status.Failed = 1 }), now: start.Add(time.Hour), after: after},
		{name: "an uncounted finished pod is progress", job: refusedJob(start, func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods.Failed = []types.UID{"p"}
		}), now: start.Add(time.Hour), after: after},
		{name: "a finished Job is not stuck", job: refusedJob(start, cond(batchv1.JobFailed)), now: start.Add(time.Hour), after: after},
		{name: "a Job about to fail (FailureTarget) is not stuck", job: refusedJob(start, cond(batchv1.JobFailureTarget)), now: start.Add(time.Hour), after: after},
		{name: "a suspended Job (a queue holds it) is not stuck", job: refusedJob(start, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
			now: start.Add(time.Hour), after: after},
		{name: "a Job the Job controller reports suspended is not stuck", job: refusedJob(start, cond(batchv1.JobSuspended)), now: start.Add(time.Hour), after: after},
		{name: "a Job with parallelism 0 asks for no pod and is not stuck", job: refusedJob(start, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](0) }),
			now: start.Add(time.Hour), after: after},
		{name: "a Job with parallelism 1 is checked as any Job", job: refusedJob(start, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) }),
			now: start.Add(after), after: after, stuck: true},
		{name: "a Job another controller manages (spec.managedBy) gets no pod from the Job controller and is not stuck", job: refusedJob(start, func(j *batchv1.Job) {
			j.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
		}), now: start.Add(time.Hour), after: after},
		{name: "managedBy naming the built-in Job controller is checked as any Job", job: refusedJob(start, func(j *batchv1.Job) {
			j.Spec.ManagedBy = ptr.To(batchv1.JobControllerName)
		}), now: start.Add(after), after: after, stuck: true},
		{name: "a threshold of 0 turns the check off", job: refusedJob(start), now: start.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stuck, wait := PodsNotCreated(tc.job, tc.now, tc.after)
			if stuck != tc.stuck || wait != tc.wait {
				t.Errorf("PodsNotCreated = %t, %v; want %t, %v", stuck, wait, tc.stuck, tc.wait)
			}
		})
	}
}
