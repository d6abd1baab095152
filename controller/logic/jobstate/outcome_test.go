package jobstate

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var judgeStart = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

// jobCond is a Job condition as the Job controller writes it, True, a minute after judgeStart.
func jobCond(t batchv1.JobConditionType, reason, msg string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(judgeStart.Add(time.Minute))}
}

// JobStates are the states the Job controller of Kubernetes v1.36 leaves a Job in for each Job
// feature (pkg/controller/job: the interim condition first, the terminal one once the pods are
// gone), and the outcome the add-on reports for each.
func TestJudge(t *testing.T) {
	started := func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: judgeStart} }
	job := func(mods ...func(*batchv1.Job)) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "run-1"}}
		for _, m := range mods {
			m(j)
		}
		return j
	}
	with := func(cs ...batchv1.JobCondition) func(*batchv1.Job) {
		return func(j *batchv1.Job) { j.Status.Conditions = append(j.Status.Conditions, cs...) }
	}
	suspended := func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }
	queued := func(j *batchv1.Job) { j.Labels = map[string]string{QueueNameLabel: "team-a"} }
	managedBy := func(by string) func(*batchv1.Job) { return func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(by) } }
	active := func(j *batchv1.Job) { j.Status.Active = 1; j.Status.Ready = ptr.To[int32](1) }
	completed := func(j *batchv1.Job) { j.Status.CompletionTime = &metav1.Time{Time: judgeStart.Add(2 * time.Minute)} }
	const (
		failJobMsg = "Container main for pod e2e/run-1-x failed with exit code 42 matching FailJob rule at index 0"
		multiKueue = "kueue.x-k8s.io/multikueue"
	)
	for _, tc := range []struct {
		name        string
		job         *batchv1.Job
		phase       Phase
		reason      string
		msgHas      string
		hasFinished bool
	}{
		{name: "a Job not yet synced by the Job controller is running", job: job(), phase: PhaseRunning},
		{name: "a Job with an active pod is running", job: job(started, active), phase: PhaseRunning},
		{name: "completed by its completions, it succeeded at completionTime", job: job(started, completed,
			with(jobCond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
				jobCond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"))),
			phase: PhaseSucceeded, reason: batchv1.JobReasonCompletionsReached, hasFinished: true},
		{name: "podFailurePolicy FailJob: FailureTarget while its pods terminate is still running", job: job(started, active,
			with(jobCond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, failJobMsg))), phase: PhaseRunning},
		{name: "podFailurePolicy FailJob: then Failed, with the rule's reason and message", job: job(started,
			with(jobCond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, failJobMsg), jobCond(batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy, failJobMsg))),
			phase: PhaseFailed, reason: batchv1.JobReasonPodFailurePolicy, msgHas: "exit code 42", hasFinished: true},
		{name: "successPolicy: SuccessCriteriaMet while the other indexes terminate is still running", job: job(started, active,
			with(jobCond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0"))), phase: PhaseRunning},
		{name: "successPolicy: then Complete though an index failed, it succeeded", job: job(started, completed, func(j *batchv1.Job) {
			j.Status.Failed, j.Status.Succeeded = 1, 1
		}, with(jobCond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0"),
			jobCond(batchv1.JobComplete, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0"))),
			phase: PhaseSucceeded, reason: batchv1.JobReasonSuccessPolicy, msgHas: "Matched rules", hasFinished: true},
		{name: "backoffLimitPerIndex: FailureTarget FailedIndexes while the other indexes run is still running", job: job(started, active,
			with(jobCond(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "Job has failed indexes"))), phase: PhaseRunning},
		{name: "backoffLimitPerIndex: then Failed FailedIndexes, though other indexes succeeded", job: job(started, func(j *batchv1.Job) {
			j.Status.Succeeded, j.Status.Failed, j.Status.FailedIndexes = 1, 2, ptr.To("1")
		}, with(jobCond(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "Job has failed indexes"), jobCond(batchv1.JobFailed, batchv1.JobReasonFailedIndexes, "Job has failed indexes"))),
			phase: PhaseFailed, reason: batchv1.JobReasonFailedIndexes, hasFinished: true},
		{name: "maxFailedIndexes exceeded: Failed", job: job(started, with(jobCond(batchv1.JobFailed, batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"))),
			phase: PhaseFailed, reason: batchv1.JobReasonMaxFailedIndexesExceeded, hasFinished: true},
		{name: "backoffLimit exceeded: Failed", job: job(started, with(jobCond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"))),
			phase: PhaseFailed, reason: batchv1.JobReasonBackoffLimitExceeded, hasFinished: true},
		{name: "activeDeadlineSeconds exceeded: Failed", job: job(started, with(jobCond(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline"))),
			phase: PhaseFailed, reason: batchv1.JobReasonDeadlineExceeded, hasFinished: true},
		{name: "created suspended with a Kueue queue label, it waits in the queue", job: job(suspended, queued,
			with(jobCond(batchv1.JobSuspended, "JobSuspended", "Job suspended"))), phase: PhaseWaiting, reason: ReasonJobSuspended, msgHas: "queued in team-a"},
		{name: "suspended before the Job controller synced it, it waits", job: job(suspended), phase: PhaseWaiting, reason: ReasonJobSuspended, msgHas: "spec.suspend"},
		{name: "suspended again while its pods run (a queue preempted it), it waits", job: job(started, active, suspended, queued),
			phase: PhaseWaiting, reason: ReasonJobSuspended},
		{name: "resumed (spec.suspend false), the Suspended condition not yet False, it runs", job: job(queued,
			with(jobCond(batchv1.JobSuspended, "JobSuspended", "Job suspended"))), phase: PhaseRunning},
		{name: "resumed and started, it runs", job: job(started, active, queued, with(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, Reason: "JobResumed"})),
			phase: PhaseRunning},
		{name: "managed by MultiKueue with no status, it waits, managed elsewhere", job: job(managedBy(multiKueue)),
			phase: PhaseWaiting, reason: ReasonManagedElsewhere, msgHas: multiKueue},
		{name: "managed elsewhere and suspended (queued for admission), it waits suspended", job: job(managedBy(multiKueue), suspended, queued),
			phase: PhaseWaiting, reason: ReasonJobSuspended},
		{name: "managed elsewhere, with the status mirrored from where it runs, it runs", job: job(managedBy(multiKueue), started, active), phase: PhaseRunning},
		{name: "managed elsewhere, with a mirrored Complete, it succeeded", job: job(managedBy(multiKueue), started, completed,
			with(jobCond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, ""))), phase: PhaseSucceeded, reason: batchv1.JobReasonCompletionsReached, hasFinished: true},
		{name: "managedBy naming the built-in Job controller is the ordinary case", job: job(managedBy(batchv1.JobControllerName)), phase: PhaseRunning},
		{name: "a suspended Job that finished is judged by its terminal condition", job: job(suspended, with(jobCond(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded, ""))),
			phase: PhaseFailed, reason: batchv1.JobReasonDeadlineExceeded, hasFinished: true},
		{name: "a terminal condition that is False ends nothing", job: job(started, active, with(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionFalse})),
			phase: PhaseRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Judge(tc.job)
			if o.Phase != tc.phase || o.Reason != tc.reason || !strings.Contains(o.Message, tc.msgHas) || o.Finished.IsZero() == tc.hasFinished {
				t.Errorf("Judge = %+v, want phase %s, reason %q, a message with %q, finished time set %v", o, tc.phase, tc.reason, tc.msgHas, tc.hasFinished)
			}
			// A waiting Job is never one whose pods are not created: nothing creates them here.
			if o.Phase == PhaseWaiting {
				if stuck, wait := PodsNotCreated(tc.job, judgeStart.Add(time.Hour), time.Minute); stuck || wait != 0 {
					t.Errorf("PodsNotCreated = %v, %v for a waiting Job, want false, 0", stuck, wait)
				}
			}
		})
	}
}
