package at

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

func TestDecide(t *testing.T) {
	runAt := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	at := func(opts ...func(*v1alpha1.At)) *v1alpha1.At {
		a := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "team-a", Generation: 2},
			Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(runAt), Command: "echo hi"}}
		for _, o := range opts {
			o(a)
		}
		return a
	}
	job := func(cond batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "backup-29581290", CreationTimestamp: metav1.NewTime(runAt.Add(time.Second))}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(runAt.Add(time.Minute))}}
		}
		return j
	}
	cases := []struct {
		name       string
		at         *v1alpha1.At
		job        *batchv1.Job
		now        time.Time
		phase      v1alpha1.AtPhase
		reason     string
		create     bool
		requeue    time.Duration
		eventWhy   []string
		completion bool
	}{
		{name: "before its time it waits, and looks again just after the time", at: at(), now: runAt.Add(-time.Hour),
			phase: v1alpha1.AtPending, reason: ReasonWaiting, requeue: time.Hour + schedule.Padding},
		{name: "at its time it creates the Job", at: at(), now: runAt, create: true},
		{name: "later but within the start deadline it still creates the Job", at: at(func(a *v1alpha1.At) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](60) }),
			now: runAt.Add(time.Minute), create: true},
		{name: "past the start deadline it fails once, with a Warning", at: at(func(a *v1alpha1.At) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](60) }),
			now: runAt.Add(61 * time.Second), phase: v1alpha1.AtFailed, reason: ReasonMissedDeadline, eventWhy: []string{ReasonMissedDeadline}, completion: true},
		{name: "a failure decided without a Job is not decided again for the same generation", at: at(func(a *v1alpha1.At) {
			a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtFailed, ObservedGeneration: 2}
		}), now: runAt, phase: v1alpha1.AtFailed},
		{name: "an edit of a failed At decides again", at: at(func(a *v1alpha1.At) {
			a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtFailed, ObservedGeneration: 1}
		}), now: runAt, phase: v1alpha1.AtFailed, create: true},
		{name: "its running Job makes it Running", at: at(), job: job(""), now: runAt.Add(time.Second), phase: v1alpha1.AtRunning, reason: ReasonRunning},
		{name: "its complete Job makes it Succeeded at the Job's completion", at: at(), job: job(batchv1.JobComplete), now: runAt.Add(time.Hour),
			phase: v1alpha1.AtSucceeded, reason: ReasonJobComplete, completion: true},
		{name: "its failed Job makes it Failed", at: at(), job: job(batchv1.JobFailed), now: runAt.Add(time.Hour),
			phase: v1alpha1.AtFailed, reason: ReasonJobFailed, completion: true},
		{name: "a Job deleted before it finished fails the At and never runs it again", at: at(func(a *v1alpha1.At) {
			a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtRunning, JobName: "backup-29581290", ObservedGeneration: 2}
		}), now: runAt.Add(time.Hour), phase: v1alpha1.AtFailed, reason: ReasonJobDeleted, eventWhy: []string{ReasonJobDeleted}, completion: true},
		{name: "a Job held by a queue and deleted fails the At and never runs it again", at: at(func(a *v1alpha1.At) {
			a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtPending, JobName: "backup-29581290", ObservedGeneration: 2}
		}), now: runAt.Add(time.Hour), phase: v1alpha1.AtFailed, reason: ReasonJobDeleted, eventWhy: []string{ReasonJobDeleted}, completion: true},
		{name: "a Job deleted after it finished (a TTL) changes nothing", at: at(func(a *v1alpha1.At) {
			a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtSucceeded, JobName: "backup-29581290", ObservedGeneration: 2}
		}), now: runAt.Add(time.Hour), phase: v1alpha1.AtSucceeded},
		{name: "its time edited after its Job ran, it never runs again: its one slot is the At's, whatever time it names", at: at(func(a *v1alpha1.At) {
			a.Generation, a.Spec.Schedule = 3, metav1.NewTime(runAt.Add(time.Hour))
			a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtSucceeded, JobName: "backup-29581290", ObservedGeneration: 2}
		}), now: runAt.Add(time.Hour), phase: v1alpha1.AtSucceeded},
		{name: "a time zone the manager does not know fails it with a Warning", at: at(func(a *v1alpha1.At) {
			a.Spec.LocalTime, a.Spec.TimeZone = "2026-03-29T02:30:00", ptr.To("Mars/Olympus_Mons")
		}), now: runAt, phase: v1alpha1.AtFailed, reason: ReasonUnknownTimeZone, eventWhy: []string{ReasonUnknownTimeZone}, completion: true},
		{name: "a local time the clocks jump over is resolved, said in an Event, and waited for", at: at(func(a *v1alpha1.At) {
			a.Spec.LocalTime, a.Spec.TimeZone = "2026-03-29T02:30:00", ptr.To("Europe/Berlin")
		}), now: runAt.Add(-time.Hour), phase: v1alpha1.AtPending, reason: ReasonWaiting, eventWhy: []string{ReasonLocalTimeResolved},
			requeue: time.Hour + schedule.Padding}, // 02:30 CET does not exist: 03:30 CEST, 01:30 UTC
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.at.DeepCopy()
			d := decide(tc.at, tc.job, tc.now, 0)
			if d.status.Phase != tc.phase {
				t.Errorf("phase = %q, want %q", d.status.Phase, tc.phase)
			}
			if tc.reason != "" {
				if c := meta.FindStatusCondition(d.status.Conditions, ConditionSucceeded); c == nil || c.Reason != tc.reason {
					t.Errorf("conditions = %+v, want reason %s", d.status.Conditions, tc.reason)
				}
			}
			if d.create != tc.create {
				t.Errorf("create = %t, want %t", d.create, tc.create)
			}
			if d.requeue != tc.requeue {
				t.Errorf("requeue = %v, want %v", d.requeue, tc.requeue)
			}
			var why []string
			for _, e := range d.events {
				why = append(why, e.Reason)
			}
			if len(why) != len(tc.eventWhy) || (len(why) > 0 && why[0] != tc.eventWhy[0]) {
				t.Errorf("events = %v, want %v", why, tc.eventWhy)
			}
			if (d.status.CompletionTime != nil) != tc.completion {
				t.Errorf("completionTime = %v, want set: %t", d.status.CompletionTime, tc.completion)
			}
			if d.status.ObservedGeneration != tc.at.Generation {
				t.Errorf("observedGeneration = %d, want %d", d.status.ObservedGeneration, tc.at.Generation)
			}
			if before.Status.Phase != tc.at.Status.Phase || len(before.Status.Conditions) != len(tc.at.Status.Conditions) {
				t.Errorf("decide changed the At it was given")
			}
		})
	}
}

func TestRecordCreate(t *testing.T) {
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "backup-1"}}
	for _, tc := range []struct {
		name    string
		created *batchv1.Job
		answer  jobs.Answer
		phase   v1alpha1.AtPhase
		reason  string
		event   string
	}{
		{name: "a created Job makes it Running", created: job, answer: jobs.Created, phase: v1alpha1.AtRunning, reason: ReasonRunning, event: "SuccessfulCreate"},
		{name: "an adopted Job makes it Running", created: job, answer: jobs.Adopted, phase: v1alpha1.AtRunning, reason: ReasonRunning, event: "AdoptedJob"},
		{name: "a refused Job fails it until it is edited", answer: jobs.Refused, phase: v1alpha1.AtFailed, reason: ReasonJobRejected, event: ReasonJobRejected},
		{name: "a name taken by a Job not ours fails it", answer: jobs.NameTaken, phase: v1alpha1.AtFailed, reason: ReasonJobNotOurs, event: ReasonJobNotOurs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decision{}
			// The Event is Create's (TestCreateAnswersEveryOutcomeOfTheClaim): sent as it is.
			recordCreate(&v1alpha1.At{}, &d, tc.created, tc.answer, slotplan.Event{Kind: "Normal", Reason: tc.event, Note: "the answer"}, now)
			st, ev := &d.status, d.events[0]
			if c := meta.FindStatusCondition(st.Conditions, ConditionSucceeded); st.Phase != tc.phase || c == nil || c.Reason != tc.reason {
				t.Errorf("status = %s %+v, want %s with reason %s", st.Phase, st.Conditions, tc.phase, tc.reason)
			}
			if ev.Reason != tc.event || ev.Note != "the answer" {
				t.Errorf("event %+v, want %s with the answer's message", ev, tc.event)
			}
			if tc.created != nil && st.JobName != tc.created.Name {
				t.Errorf("jobName = %q, want %q", st.JobName, tc.created.Name)
			}
		})
	}
}

func TestDecidePodsNotCreated(t *testing.T) {
	runAt := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	const after = 2 * time.Minute
	running := func(reason string) *v1alpha1.At {
		a := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "team-a", Generation: 1},
			Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(runAt), Command: "id"}}
		a.Status = v1alpha1.AtStatus{Phase: v1alpha1.AtRunning, JobName: "backup-29581290", ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: reason}}}
		return a
	}
	// What the Job controller leaves when admission refuses every pod: startTime, ready and
	// terminating 0, no condition (Kubernetes 1.36).
	refused := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "backup-29581290", CreationTimestamp: metav1.NewTime(runAt)},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: runAt.Add(time.Second)}, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}}
	withPod := refused.DeepCopy()
	withPod.Status.Active = 1
	for _, tc := range []struct {
		name     string
		at       *v1alpha1.At
		job      *batchv1.Job
		now      time.Time
		reason   string
		requeue  time.Duration
		eventWhy []string
	}{
		{name: "a Job with no pod yet is Running, looked at again when the threshold is reached", at: running(ReasonRunning), job: refused,
			now: runAt.Add(31 * time.Second), reason: ReasonRunning, requeue: 90 * time.Second},
		{name: "a Job with no pod past the threshold says PodsNotCreated, stays Running, with one Warning", at: running(ReasonRunning), job: refused,
			now: runAt.Add(time.Second + after), reason: ReasonPodsNotCreated, eventWhy: []string{ReasonPodsNotCreated}},
		{name: "said once: the next pass sends no second Warning and does not poll", at: running(ReasonPodsNotCreated), job: refused,
			now: runAt.Add(time.Hour), reason: ReasonPodsNotCreated},
		{name: "when a pod appears it says Running again", at: running(ReasonPodsNotCreated), job: withPod,
			now: runAt.Add(time.Hour), reason: ReasonRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.at, tc.job, tc.now, after)
			if d.status.Phase != v1alpha1.AtRunning {
				t.Errorf("phase = %s, want Running (the Job may still run)", d.status.Phase)
			}
			c := meta.FindStatusCondition(d.status.Conditions, ConditionSucceeded)
			if c == nil || c.Reason != tc.reason || c.Status != metav1.ConditionUnknown {
				t.Fatalf("Succeeded = %+v, want Unknown with reason %s", c, tc.reason)
			}
			if tc.reason == ReasonPodsNotCreated && (!strings.Contains(c.Message, "kubectl describe job backup-29581290") || d.status.Message != c.Message) {
				t.Errorf("message = %q (status.message %q), want it to name the Job and kubectl describe", c.Message, d.status.Message)
			}
			if d.requeue != tc.requeue {
				t.Errorf("requeue = %v, want %v", d.requeue, tc.requeue)
			}
			var why []string
			for _, e := range d.events {
				why = append(why, e.Reason)
			}
			if !slices.Equal(why, tc.eventWhy) {
				t.Errorf("events = %v, want %v", why, tc.eventWhy)
			}
		})
	}
}

// A failed Job's At says the reason and message of the Job's Failed condition, as far as it has
// them.
func TestAFailedJobsAtSaysWhatTheJobSays(t *testing.T) {
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	for _, tc := range []struct{ reason, message, want string }{
		{"BackoffLimitExceeded", "Job has reached the specified backoff limit", "Job j failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
		{"DeadlineExceeded", "", "Job j failed: DeadlineExceeded"},
		{"", "", "Job j failed"},
	} {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: tc.reason, Message: tc.message, LastTransitionTime: metav1.NewTime(now)}}}}
		var st v1alpha1.AtStatus
		observeRun(&st, j, now)
		if st.Phase != v1alpha1.AtFailed || st.Message != tc.want {
			t.Errorf("%s %q, want Failed %q", st.Phase, st.Message, tc.want)
		}
	}
}

func TestAnAtIsOneSlotOfTheLedger(t *testing.T) {
	decided := v1alpha1.AtStatus{Phase: v1alpha1.AtFailed, ObservedGeneration: 2}
	cases := []struct {
		name   string
		status v1alpha1.AtStatus
		job    *batchv1.Job
		want   slotplan.SlotState
	}{
		{name: "no Job and no record: due", want: slotplan.SlotDue},
		{name: "its Job exists: created, though the status does not name it yet", job: &batchv1.Job{}, want: slotplan.SlotCreated},
		{name: "the status names its Job, gone since: created", status: v1alpha1.AtStatus{Phase: v1alpha1.AtRunning, JobName: "a-1"}, want: slotplan.SlotCreated},
		{name: "decided without a Job at this generation: not run", status: decided, want: slotplan.SlotNotRun},
		{name: "decided without a Job at an older generation: due again", status: v1alpha1.AtStatus{Phase: v1alpha1.AtFailed, ObservedGeneration: 1}, want: slotplan.SlotDue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: tc.status}
			// Any time: an At has one slot.
			for _, slot := range []time.Time{{}, time.Now()} {
				if got := slotplan.Ledger(book{at, tc.job}, slot).State; got != tc.want {
					t.Errorf("ledger at %v = %s, want %s", slot, got, tc.want)
				}
			}
		})
	}
}
