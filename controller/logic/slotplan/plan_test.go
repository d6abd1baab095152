package slotplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// The fixed times of upstream's cronjob_controllerv2_test.go (2016-05-19 is a Thursday).
var (
	topOfTheHour      = mustTime("2016-05-19T10:00:00Z")
	justBeforeTheHour = mustTime("2016-05-19T09:59:00Z")
	justAfterTheHour  = mustTime("2016-05-19T10:01:00Z")
	thePriorHour      = mustTime("2016-05-19T09:00:00Z")
	weekAfterTheHour  = mustTime("2016-05-26T10:00:00Z")
)

const onTheHour = "0 * * * *"

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// sjOpt changes a test ScheduledJob; newSJ builds one as upstream's cronJob() does.
type sjOpt func(*v1alpha1.ScheduledJob)

func newSJ(opts ...sjOpt) *v1alpha1.ScheduledJob {
	sj := &v1alpha1.ScheduledJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mycronjob", Namespace: "snazzycats", UID: "1a2b3c", Generation: 2,
			CreationTimestamp: metav1.NewTime(justBeforeTheHour.Add(-time.Hour))},
		Spec: v1alpha1.ScheduledJobSpec{
			Schedule: onTheHour, ConcurrencyPolicy: v1alpha1.AllowConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"x": "y"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "foo/bar"}}}}},
			},
		},
	}
	for _, o := range opts {
		o(sj)
	}
	return sj
}

func policy(p v1alpha1.ConcurrencyPolicy) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Spec.ConcurrencyPolicy = p }
}
func suspended(sj *v1alpha1.ScheduledJob) { sj.Spec.Suspend = ptr.To(true) }
func deadline(s int64) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Spec.StartingDeadlineSeconds = &s }
}
func spec(s string) sjOpt      { return func(sj *v1alpha1.ScheduledJob) { sj.Spec.Schedule = s } }
func timeZone(tz string) sjOpt { return func(sj *v1alpha1.ScheduledJob) { sj.Spec.TimeZone = &tz } }
func runNow(token string) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Annotations = map[string]string{keys.AnnotationRunNow: token} }
}
func lastRunNow(token string) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.LastRunNowToken = token }
}
func lastRunNowAt(at time.Time) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.LastRunNowTime = ptr.To(metav1.NewTime(at)) }
}
func runNowWaiting(token string) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.RunNowWaiting = token }
}
func created(t time.Time) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.CreationTimestamp = metav1.NewTime(t) }
}
func lastSchedule(t time.Time) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.LastScheduleTime = ptr.To(metav1.NewTime(t)) }
}

// runsRecorded is a written status whose run history already records js (as a pass that saw
// them finished wrote it).
func runsRecorded(js ...*batchv1.Job) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.Runs = runHistory(nil, js, 10) }
}
func history(succeeded, failed int32) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.SuccessfulJobsHistoryLimit, sj.Spec.FailedJobsHistoryLimit = &succeeded, &failed
	}
}
func observedSchedule(s string, at time.Time) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) {
		sj.Status.ObservedSchedule, sj.Status.ObservedScheduleTime = s, ptr.To(metav1.NewTime(at))
	}
}

// activeIn lists jobs in the ScheduledJob's last status.
func activeIn(js ...*batchv1.Job) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) {
		for _, j := range js {
			ref, _ := activeRef(nil, j)
			sj.Status.Active = append(sj.Status.Active, ref)
		}
	}
}

type jobState int

const (
	running jobState = iota
	succeededJob
	failedJob
)

// childJob is a Job of newSJ for slot, started at the slot, finished a minute later if done.
func childJob(slot time.Time, state jobState) *batchv1.Job {
	sj := newSJ()
	j := NewJob(sj, jobname.Slot(sj, slot), slot, time.UTC, "")
	j.UID = types.UID(fmt.Sprintf("uid-%d", slot.Unix()))
	j.Status.StartTime = ptr.To(metav1.NewTime(slot))
	end := metav1.NewTime(slot.Add(time.Minute))
	switch state {
	case succeededJob:
		j.Status.CompletionTime = &end
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: end}}
	case failedJob:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: end, Reason: "BackoffLimitExceeded"}}
	}
	return j
}

func createdNames(p Plan) []string {
	var out []string
	for _, c := range p.Creates {
		out = append(out, c.Job.Name)
	}
	return out
}

func names(js []*batchv1.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Name)
	}
	return out
}

func reasons(p Plan) []string {
	var out []string
	for _, e := range p.Events {
		out = append(out, e.Reason)
	}
	return out
}

func slotName(t time.Time) string { return jobname.Slot(newSJ(), t) }

// TestDecide ports the behaviour of upstream's TestControllerV2SyncCronJob (our own cases,
// same semantics) and adds what we do beyond upstream.
func TestDecide(t *testing.T) {
	prior := childJob(thePriorHour, running)
	priorDone := childJob(thePriorHour, succeededJob)
	asleep := suspendedSince(justBeforeTheHour.Add(-30 * time.Minute))
	cases := []struct {
		name         string
		sj           *v1alpha1.ScheduledJob
		jobs         []*batchv1.Job
		now          time.Time
		wantCreate   []string
		wantReplace  []string
		wantPrune    []string
		deletedByUs  map[types.UID]bool
		wantActive   int
		wantEvents   []string // reasons, in order
		wantSkipped  string
		wantRequeue  time.Duration
		wantNextTime *time.Time
		check        func(t *testing.T, p Plan)
	}{
		{name: "never ran, not time: nothing to do, wake at the slot",
			sj: newSJ(created(justBeforeTheHour)), now: justBeforeTheHour.Add(30 * time.Second), wantRequeue: 30*time.Second + schedule.Padding, wantNextTime: &topOfTheHour},
		{name: "an active Job whose own status moved keeps its reference: no status change to write",
			sj: newSJ(lastSchedule(thePriorHour), activeIn(prior)), now: justBeforeTheHour.Add(30 * time.Second), wantActive: 1, wantRequeue: 30*time.Second + schedule.Padding,
			jobs: []*batchv1.Job{func() *batchv1.Job { j := prior.DeepCopy(); j.ResourceVersion = "moved"; return j }()},
			check: func(t *testing.T, p Plan) {
				if got, want := p.Status.Active[0], newSJ(activeIn(prior)).Status.Active[0]; got != want {
					t.Errorf("active[0] = %+v, want the reference from the status %+v", got, want)
				}
			}},
		// Created at 08:59, first looked at 10:01: the 09:00 slot passed unseen (upstream is silent).
		{name: "never ran, is time, Allow: creates the slot's Job",
			sj: newSJ(), now: justAfterTheHour, wantCreate: []string{slotName(topOfTheHour)}, wantEvents: []string{ReasonMissedSlots}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "never ran, is time, Forbid: creates the slot's Job",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent)), now: justAfterTheHour, wantCreate: []string{slotName(topOfTheHour)}, wantEvents: []string{ReasonMissedSlots}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "never ran, is time, Replace: creates the slot's Job",
			sj: newSJ(policy(v1alpha1.ReplaceConcurrent)), now: justAfterTheHour, wantCreate: []string{slotName(topOfTheHour)}, wantEvents: []string{ReasonMissedSlots}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "a slot that passed unseen while the controller was behind is announced, not lost silently",
			sj: newSJ(lastSchedule(thePriorHour.Add(-time.Hour))), now: justAfterTheHour, wantCreate: []string{slotName(topOfTheHour)},
			wantEvents: []string{ReasonMissedSlots}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "a slot already reported skipped (Forbid) is not announced again as passed over",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour.Add(-time.Hour)), func(sj *v1alpha1.ScheduledJob) {
				sj.Status.LastSkippedTime = ptr.To(metav1.NewTime(thePriorHour))
			}), now: justAfterTheHour, wantCreate: []string{slotName(topOfTheHour)}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "becoming suspended: Ready says so with one Event, no next time, no requeue, nothing for the slot",
			sj: newSJ(suspended), now: justAfterTheHour, wantEvents: []string{ReasonSuspended},
			check: func(t *testing.T, p Plan) {
				if p.Status.NextScheduleTime != nil || p.Status.LastSkippedTime != nil || len(p.Status.Runs) != 0 {
					t.Errorf("nextScheduleTime %v, lastSkippedTime %v, runs %v; want none", p.Status.NextScheduleTime, p.Status.LastSkippedTime, p.Status.Runs)
				}
				if c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonSuspended {
					t.Errorf("Ready = %+v, want reason Suspended", c)
				}
			}},
		// It used to wake at every slot, and each wake wrote lastSkippedTime and a Skipped run
		// and sent a Suspended Warning: a status patch and an Event per slot, for nothing.
		{name: "suspended at a slot: nothing to write, no Event, no wake-up",
			sj: asleep, now: justAfterTheHour,
			check: func(t *testing.T, p Plan) {
				if !equality.Semantic.DeepEqual(p.Status, asleep.Status) {
					t.Errorf("status changed at a slot while suspended:\n got %+v\nwant %+v", p.Status, asleep.Status)
				}
			}},
		{name: "resumed: the most recent slot missed while suspended runs, the others are named as lost to the suspension",
			sj: func() *v1alpha1.ScheduledJob {
				sj := suspendedSince(thePriorHour.Add(-90 * time.Minute))
				sj.Spec.Suspend = nil
				return sj
			}(), now: justAfterTheHour,
			wantCreate: []string{slotName(topOfTheHour)}, wantEvents: []string{ReasonSuspended}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if !strings.Contains(p.Events[0].Note, "suspended") || !strings.Contains(p.Events[0].Note, "2016-05-19T09:00:00Z") {
					t.Errorf("event %q, want the 09:00 slot named as lost to the suspension", p.Events[0].Note)
				}
			}},
		{name: "never ran, is time, past the deadline: no Job, a MissedDeadline Event (upstream is silent)",
			sj: newSJ(deadline(30)), now: justAfterTheHour, wantEvents: []string{ReasonMissedDeadline}, wantSkipped: ReasonMissedDeadline, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "never ran, is time, not past the deadline: creates the Job",
			sj: newSJ(deadline(120)), now: justAfterTheHour, wantCreate: []string{slotName(topOfTheHour)}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "prev ran but done, is time: creates the next slot's Job and sees the completion",
			sj: newSJ(lastSchedule(thePriorHour), activeIn(priorDone)), jobs: []*batchv1.Job{priorDone}, now: justAfterTheHour,
			wantCreate: []string{slotName(topOfTheHour)}, wantEvents: []string{ReasonSawCompletedJob}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Status.LastSuccessfulTime == nil || !p.Status.LastSuccessfulTime.Time.Equal(thePriorHour.Add(time.Minute)) {
					t.Errorf("lastSuccessfulTime = %v, want 09:01", p.Status.LastSuccessfulTime)
				}
			}},
		{name: "prev ran but done, not time: nothing",
			sj: newSJ(lastSchedule(topOfTheHour)), now: justAfterTheHour, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "still active, is time, Allow: creates a second Job next to it",
			sj: newSJ(lastSchedule(thePriorHour), activeIn(prior)), jobs: []*batchv1.Job{prior}, now: justAfterTheHour,
			wantCreate: []string{slotName(topOfTheHour)}, wantActive: 1, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "still active, is time, Forbid: skips the slot and says so",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour), activeIn(prior)), jobs: []*batchv1.Job{prior}, now: justAfterTheHour,
			wantActive: 1, wantEvents: []string{ReasonJobAlreadyActive}, wantSkipped: ReasonJobAlreadyActive, wantRequeue: 59*time.Minute + schedule.Padding},
		// 10:00 was skipped (JobAlreadyActive) while 09:00 ran; 09:00 ended at 10:03. The skip
		// is final: 10:00 used to run at 10:03 anyway and appear twice in the history.
		{name: "Forbid: a slot reported skipped does not run when the active Job ends",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour), activeIn(prior), func(sj *v1alpha1.ScheduledJob) {
				sj.Status.LastSkippedTime = ptr.To(metav1.NewTime(topOfTheHour))
				sj.Status.Runs = addRun(runHistory(nil, []*batchv1.Job{prior}, 10), v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(topOfTheHour), Result: v1alpha1.RunSkipped, Reason: ReasonJobAlreadyActive}, 10)
			}), jobs: []*batchv1.Job{func() *batchv1.Job {
				j := childJob(thePriorHour, succeededJob)
				j.Status.CompletionTime = ptr.To(metav1.NewTime(topOfTheHour.Add(3 * time.Minute)))
				return j
			}()}, now: topOfTheHour.Add(3*time.Minute + time.Second),
			wantEvents: []string{ReasonSawCompletedJob}, wantRequeue: 57*time.Minute - time.Second + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				n := 0
				for _, r := range p.Status.Runs {
					if r.ScheduledTime.Time.Equal(topOfTheHour) {
						n++
						if r.Result != v1alpha1.RunSkipped {
							t.Errorf("the 10:00 run is %s, want Skipped", r.Result)
						}
					}
				}
				if n != 1 {
					t.Errorf("the history lists 10:00 %d times, want once: %+v", n, p.Status.Runs)
				}
			}},
		{name: "still active, is time, Replace: deletes the active Job, then creates",
			sj: newSJ(policy(v1alpha1.ReplaceConcurrent), lastSchedule(thePriorHour), activeIn(prior)), jobs: []*batchv1.Job{prior}, now: justAfterTheHour,
			wantCreate: []string{slotName(topOfTheHour)}, wantReplace: []string{prior.Name}, wantActive: 1, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "still active, not time, Replace: nothing is deleted",
			sj: newSJ(policy(v1alpha1.ReplaceConcurrent), lastSchedule(topOfTheHour), activeIn(prior)), jobs: []*batchv1.Job{prior}, now: justAfterTheHour,
			wantActive: 1, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "long overdue, no deadline: one catch-up run for the most recent slot and TooManyMissedTimes",
			sj: newSJ(lastSchedule(thePriorHour)), now: weekAfterTheHour,
			wantCreate: []string{slotName(weekAfterTheHour)}, wantEvents: []string{ReasonTooManyMissedTimes}, wantRequeue: time.Hour + schedule.Padding},
		{name: "long overdue, past a short deadline: the most recent slot is within it and runs, no warning",
			sj: newSJ(lastSchedule(thePriorHour), deadline(15*60)), now: weekAfterTheHour,
			wantCreate: []string{slotName(weekAfterTheHour)}, wantRequeue: time.Hour + schedule.Padding},
		{name: "long overdue, Forbid, no deadline: still one catch-up run",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour)), now: weekAfterTheHour,
			wantCreate: []string{slotName(weekAfterTheHour)}, wantEvents: []string{ReasonTooManyMissedTimes}, wantRequeue: time.Hour + schedule.Padding},
		// Thursday 10:30 ran; the manager was down until Monday 05:00. Friday 14:30 is the most
		// recent slot: upstream's estimate started after it, found none, and ran nothing.
		{name: "a weekend outage on an irregular schedule still gets its one catch-up run",
			sj: newSJ(spec("30 6-16/4 * * 1-5"), lastSchedule(topOfTheHour.Add(30*time.Minute))), now: topOfTheHour.Add(91 * time.Hour),
			wantCreate: []string{slotName(topOfTheHour.Add(28*time.Hour + 30*time.Minute))}, wantEvents: []string{ReasonMissedSlots}, wantRequeue: 90*time.Minute + schedule.Padding},
		// */5 ran at 11:00; @every 61m, counted from creation at 10:00, is due at 11:01. It used
		// to count from the union's last slot (11:00 -> 12:01, then 11:05 -> 12:06, ...) and
		// never fired.
		{name: "an @every entry fires on its own grid next to a more frequent entry",
			sj: newSJ(created(topOfTheHour), lastSchedule(topOfTheHour.Add(time.Hour)), func(sj *v1alpha1.ScheduledJob) {
				sj.Spec.Schedule, sj.Spec.Schedules = "", []string{"*/5 * * * *", "@every 61m"}
			}), now: topOfTheHour.Add(61*time.Minute + time.Second),
			wantCreate: []string{slotName(topOfTheHour.Add(61 * time.Minute))}, wantRequeue: 4*time.Minute - time.Second + schedule.Padding},
		{name: "the clock drifted back behind the last slot: nothing, wake at the slot after it",
			sj: newSJ(lastSchedule(topOfTheHour)), now: justBeforeTheHour, wantRequeue: 61*time.Minute + schedule.Padding},
		{name: "the slot's Job exists but the status does not say so (left to this pass, or lost): the slot is recorded and announced, nothing created",
			sj: newSJ(created(justBeforeTheHour)), jobs: []*batchv1.Job{childJob(topOfTheHour, running)}, now: justAfterTheHour,
			wantActive: 1, wantEvents: []string{ReasonSuccessfulCreate}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Status.LastScheduleTime == nil || !p.Status.LastScheduleTime.Time.Equal(topOfTheHour) {
					t.Errorf("lastScheduleTime = %v, want 10:00", p.Status.LastScheduleTime)
				}
			}},
		{name: "lastScheduleTime is kept, not rebuilt from Jobs: with no history left the slot does not run again",
			sj: newSJ(lastSchedule(topOfTheHour), history(0, 0)), now: topOfTheHour.Add(30 * time.Minute), wantRequeue: 30*time.Minute + schedule.Padding},
		{name: "an active Job that went missing is dropped from active",
			sj: newSJ(lastSchedule(topOfTheHour), activeIn(childJob(topOfTheHour, running))), now: justAfterTheHour,
			wantEvents: []string{ReasonMissingJob}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "history beyond the limits is pruned, oldest first",
			sj: newSJ(lastSchedule(topOfTheHour), history(1, 1), runsRecorded(childJob(topOfTheHour.Add(-4*time.Hour), succeededJob), childJob(topOfTheHour.Add(-3*time.Hour), failedJob),
				childJob(topOfTheHour.Add(-2*time.Hour), succeededJob), childJob(thePriorHour, failedJob))),
			jobs: []*batchv1.Job{childJob(topOfTheHour.Add(-4*time.Hour), succeededJob), childJob(topOfTheHour.Add(-3*time.Hour), failedJob),
				childJob(topOfTheHour.Add(-2*time.Hour), succeededJob), childJob(thePriorHour, failedJob)},
			now:       justAfterTheHour,
			wantPrune: []string{slotName(topOfTheHour.Add(-4 * time.Hour)), slotName(topOfTheHour.Add(-3 * time.Hour))}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "history is pruned while suspended too",
			sj: newSJ(suspended, lastSchedule(topOfTheHour), history(0, 0), runsRecorded(priorDone)), jobs: []*batchv1.Job{priorDone}, now: justAfterTheHour,
			wantPrune: []string{priorDone.Name}, wantEvents: []string{ReasonSuspended}},
		{name: "history is pruned when the schedule is invalid too",
			sj: newSJ(timeZone("Mars/Olympus"), lastSchedule(thePriorHour), history(0, 0), runsRecorded(priorDone)), jobs: []*batchv1.Job{priorDone}, now: justAfterTheHour,
			wantPrune: []string{priorDone.Name}, wantEvents: []string{ReasonUnknownTimeZone}},
		// The slot protocol (doc.go): a finished Job is the only trace of a slot until a
		// written status records it; it is deleted by a later pass, never by the recording one.
		{name: "a finished Job whose slot the written status does not record yet is recorded, not pruned",
			sj: newSJ(lastSchedule(thePriorHour), history(0, 0)), jobs: []*batchv1.Job{childJob(topOfTheHour, succeededJob)}, now: justAfterTheHour,
			wantEvents: []string{ReasonSuccessfulCreate}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Status.LastScheduleTime == nil || !p.Status.LastScheduleTime.Time.Equal(topOfTheHour) {
					t.Errorf("lastScheduleTime = %v, want %v", p.Status.LastScheduleTime, topOfTheHour)
				}
			}},
		{name: "a finished Job the written status still lists as active is dropped from active, not pruned",
			sj: newSJ(lastSchedule(topOfTheHour), history(0, 0), activeIn(childJob(topOfTheHour, running))), jobs: []*batchv1.Job{childJob(topOfTheHour, succeededJob)}, now: justAfterTheHour,
			wantEvents: []string{ReasonSawCompletedJob}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "a finished Job recorded and no longer active is pruned",
			sj: newSJ(lastSchedule(topOfTheHour), history(0, 0), runsRecorded(childJob(topOfTheHour, succeededJob))), jobs: []*batchv1.Job{childJob(topOfTheHour, succeededJob)}, now: justAfterTheHour,
			wantPrune: []string{slotName(topOfTheHour)}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "a finished Job whose result the written run history lacks is kept one more pass, and recorded",
			sj: newSJ(lastSchedule(topOfTheHour), history(0, 0)), jobs: []*batchv1.Job{childJob(topOfTheHour, succeededJob)}, now: justAfterTheHour,
			wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if len(p.Status.Runs) != 1 || p.Status.Runs[0].JobName != slotName(topOfTheHour) || p.Status.Runs[0].Result != v1alpha1.RunSucceeded {
					t.Errorf("runs = %+v, want the Job recorded as Succeeded", p.Status.Runs)
				}
			}},
		{name: "with no run history (runHistoryLimit 0) a recorded claim is enough to prune",
			sj:   newSJ(lastSchedule(topOfTheHour), history(0, 0), func(sj *v1alpha1.ScheduledJob) { sj.Spec.RunHistoryLimit = ptr.To[int32](0) }),
			jobs: []*batchv1.Job{childJob(topOfTheHour, succeededJob)}, now: justAfterTheHour,
			wantPrune: []string{slotName(topOfTheHour)}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if len(p.Status.Runs) != 0 {
					t.Errorf("runs = %+v, want none", p.Status.Runs)
				}
			}},
		{name: "an active Job this process replaced is not reported missing",
			sj: newSJ(lastSchedule(topOfTheHour), activeIn(childJob(topOfTheHour, running))), now: justAfterTheHour,
			deletedByUs: map[types.UID]bool{childJob(topOfTheHour, running).UID: true}, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "an unknown time zone: Ready False, a Warning, no Job and no requeue",
			sj: newSJ(timeZone("Mars/Olympus")), now: justAfterTheHour, wantEvents: []string{ReasonUnknownTimeZone},
			check: func(t *testing.T, p Plan) {
				c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonUnknownTimeZone {
					t.Errorf("Ready = %+v, want False/UnknownTimeZone", c)
				}
			}},
		{name: "an unknown time zone already reported: no second Warning",
			sj: func() *v1alpha1.ScheduledJob {
				sj := newSJ(timeZone("Mars/Olympus"))
				sj.Status = Decide(sj, nil, justAfterTheHour, noneDeleted, 0).Status
				return sj
			}(), now: justAfterTheHour.Add(time.Minute)},
		{name: "a schedule that never fires: Ready False ScheduleNeverFires, no requeue",
			sj: newSJ(spec("0 0 30 2 *")), now: justAfterTheHour, wantEvents: []string{ReasonScheduleNeverFires}},
		{name: "a schedule in a time zone fires at local time",
			sj: newSJ(spec("0 12 * * *"), timeZone("Europe/Berlin")), now: topOfTheHour.Add(10 * time.Second), // 12:00:10 in Berlin (CEST)
			wantCreate: []string{slotName(topOfTheHour)}, wantRequeue: 24*time.Hour - 10*time.Second + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if got := p.Creates[0].Job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2016-05-19T12:00:00+02:00" {
					t.Errorf("scheduled-timestamp annotation = %q, want the slot in the zone", got)
				}
			}},
		{name: "editing the schedule does not fire a run for the past",
			sj: newSJ(spec("30 * * * *"), lastSchedule(topOfTheHour), observedSchedule(" "+onTheHour, justBeforeTheHour.Add(-time.Hour))), now: topOfTheHour.Add(40 * time.Minute),
			wantRequeue: 50*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Status.ObservedSchedule != " 30 * * * *" || !p.Status.ObservedScheduleTime.Time.Equal(topOfTheHour.Add(40*time.Minute)) {
					t.Errorf("observed schedule %q since %v, want the new one since now", p.Status.ObservedSchedule, p.Status.ObservedScheduleTime)
				}
			}},
		{name: "upstream would: without an observed schedule (first sight) slots since creation count",
			sj: newSJ(spec("30 * * * *"), lastSchedule(topOfTheHour)), now: topOfTheHour.Add(40 * time.Minute),
			wantCreate: []string{slotName(topOfTheHour.Add(30 * time.Minute))}, wantRequeue: 50*time.Minute + schedule.Padding},
		{name: "run-now creates one Job named after the token",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t1")), now: justAfterTheHour,
			wantCreate: []string{jobname.RunNow(newSJ(), "t1")}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Creates[0].token != "t1" || p.Creates[0].Job.Annotations[keys.AnnotationRunNowToken] != "t1" {
					t.Errorf("creation = %+v, want token t1 recorded", p.Creates[0])
				}
			}},
		{name: "run-now with a token already handled does nothing",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t1"), lastRunNow("t1")), now: justAfterTheHour, wantRequeue: 59*time.Minute + schedule.Padding},
		{name: "run-now under Forbid with an active Job is skipped and the token consumed",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour.Add(30*time.Minute)), activeIn(prior), runNow("t2")), jobs: []*batchv1.Job{prior}, now: thePriorHour.Add(40 * time.Minute),
			wantActive: 1, wantEvents: []string{ReasonRunNowSkipped}, wantRequeue: 20*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Status.LastRunNowToken != "t2" {
					t.Errorf("lastRunNowToken = %q, want t2", p.Status.LastRunNowToken)
				}
			}},
		{name: "run-now under Replace deletes the active Job first",
			sj: newSJ(policy(v1alpha1.ReplaceConcurrent), lastSchedule(thePriorHour), activeIn(prior), runNow("t3")), jobs: []*batchv1.Job{prior}, now: thePriorHour.Add(10 * time.Minute),
			wantCreate: []string{jobname.RunNow(newSJ(), "t3")}, wantReplace: []string{prior.Name}, wantActive: 1, wantRequeue: 50*time.Minute + schedule.Padding},
		// Both used to be created in one pass, and ran together under Replace.
		{name: "run-now and a due slot in one pass under Replace: the slot's Job; the token waits a pass for it",
			sj: newSJ(policy(v1alpha1.ReplaceConcurrent), lastSchedule(thePriorHour), activeIn(prior), runNow("t6")), jobs: []*batchv1.Job{prior}, now: justAfterTheHour,
			wantCreate: []string{slotName(topOfTheHour)}, wantReplace: []string{prior.Name}, wantActive: 1, wantRequeue: time.Second,
			check: func(t *testing.T, p Plan) {
				if p.Status.LastRunNowToken != "" {
					t.Errorf("lastRunNowToken = %q, want t6 still pending", p.Status.LastRunNowToken)
				}
			}},
		{name: "run-now while suspended is skipped",
			sj: newSJ(suspended, lastSchedule(topOfTheHour), runNow("t4")), now: justAfterTheHour, wantEvents: []string{ReasonSuspended, ReasonRunNowSkipped}},
		{name: "a new run-now token within a minute of the last run-now Job waits: said once, one wake-up at the minute's end",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t8"), lastRunNow("t7"), lastRunNowAt(justAfterTheHour.Add(-20*time.Second))), now: justAfterTheHour,
			wantEvents: []string{ReasonRunNowDelayed}, wantRequeue: 40 * time.Second,
			check: func(t *testing.T, p Plan) {
				if p.Status.RunNowWaiting != "t8" || p.Status.LastRunNowToken != "t7" {
					t.Errorf("runNowWaiting %q lastRunNowToken %q, want t8 waiting and t7 the last handled", p.Status.RunNowWaiting, p.Status.LastRunNowToken)
				}
			}},
		{name: "a waiting run-now token already announced: no second Event, the same wake-up",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t8"), lastRunNow("t7"), lastRunNowAt(justAfterTheHour.Add(-20*time.Second)), runNowWaiting("t8")), now: justAfterTheHour,
			wantRequeue: 40 * time.Second},
		{name: "a newer token replaces the waiting one: announced, the same wake-up",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t9"), lastRunNow("t7"), lastRunNowAt(justAfterTheHour.Add(-50*time.Second)), runNowWaiting("t8")), now: justAfterTheHour,
			wantEvents: []string{ReasonRunNowDelayed}, wantRequeue: 10 * time.Second},
		{name: "the minute has passed: the waiting token's Job is created and nothing waits",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t8"), lastRunNow("t7"), lastRunNowAt(justAfterTheHour.Add(-time.Minute)), runNowWaiting("t8")), now: justAfterTheHour,
			wantCreate: []string{jobname.RunNow(newSJ(), "t8")}, wantRequeue: 59*time.Minute + schedule.Padding,
			check: func(t *testing.T, p Plan) {
				if p.Status.RunNowWaiting != "" {
					t.Errorf("runNowWaiting %q, want none", p.Status.RunNowWaiting)
				}
			}},
		{name: "the clock went back past the last run-now Job: a token waits a minute at most",
			sj: newSJ(lastSchedule(topOfTheHour), runNow("t8"), lastRunNow("t7"), lastRunNowAt(justAfterTheHour.Add(time.Hour))), now: justAfterTheHour,
			wantEvents: []string{ReasonRunNowDelayed}, wantRequeue: time.Minute},
		{name: "a waiting token while suspended is skipped, and nothing waits",
			sj: newSJ(suspended, lastSchedule(topOfTheHour), runNow("t8"), lastRunNowAt(justAfterTheHour.Add(-20*time.Second)), runNowWaiting("t8")), now: justAfterTheHour,
			wantEvents: []string{ReasonSuspended, ReasonRunNowSkipped},
			check: func(t *testing.T, p Plan) {
				if p.Status.RunNowWaiting != "" || p.Status.LastRunNowToken != "t8" {
					t.Errorf("runNowWaiting %q lastRunNowToken %q, want none waiting and t8 spent", p.Status.RunNowWaiting, p.Status.LastRunNowToken)
				}
			}},
		{name: "run-now and a due slot under Forbid: the slot's Job; the token waits a pass for it (decided on what exists)",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour), runNow("t5")), now: justAfterTheHour,
			wantCreate: []string{slotName(topOfTheHour)}, wantRequeue: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.sj, tc.jobs, tc.now, func(uid types.UID) bool { return tc.deletedByUs[uid] }, 0)
			if got := createdNames(p); !slices.Equal(got, tc.wantCreate) {
				t.Errorf("creates = %v, want %v", got, tc.wantCreate)
			}
			if got := names(p.Replace); !slices.Equal(got, tc.wantReplace) {
				t.Errorf("replace = %v, want %v", got, tc.wantReplace)
			}
			if got := names(p.Prune); !slices.Equal(got, tc.wantPrune) {
				t.Errorf("prune = %v, want %v", got, tc.wantPrune)
			}
			if len(p.Status.Active) != tc.wantActive {
				t.Errorf("active = %v, want %d", p.Status.Active, tc.wantActive)
			}
			if got := reasons(p); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events = %v, want %v", got, tc.wantEvents)
			}
			if p.Skipped != tc.wantSkipped {
				t.Errorf("skipped = %q, want %q", p.Skipped, tc.wantSkipped)
			}
			if p.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", p.RequeueAfter, tc.wantRequeue)
			}
			if tc.wantNextTime != nil && (p.Status.NextScheduleTime == nil || !p.Status.NextScheduleTime.Time.Equal(*tc.wantNextTime)) {
				t.Errorf("nextScheduleTime = %v, want %v", p.Status.NextScheduleTime, tc.wantNextTime)
			}
			if p.Status.ObservedGeneration != tc.sj.Generation {
				t.Errorf("observedGeneration = %d, want %d", p.Status.ObservedGeneration, tc.sj.Generation)
			}
			for _, c := range p.Creates {
				j := c.Job
				if !metav1.IsControlledBy(j, tc.sj) || j.Labels["a"] != "b" || j.Annotations["x"] != "y" ||
					j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] == "" || j.Labels[jobName] != CreatedBy {
					t.Errorf("job %s: owner %v, labels %v, annotations %v; want controlled, template metadata, scheduled-timestamp", j.Name, j.OwnerReferences, j.Labels, j.Annotations)
				}
				if len(j.Name) > 63 || !strings.HasPrefix(j.Name, "mycronjob-") {
					t.Errorf("job name %q", j.Name)
				}
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// suspendedSince is newSJ suspended, with the status a pass at since wrote (Ready Suspended).
func suspendedSince(since time.Time) *v1alpha1.ScheduledJob {
	sj := newSJ(suspended, lastSchedule(since.Truncate(time.Hour)))
	sj.Status = Decide(sj, nil, since, noneDeleted, 0).Status
	return sj
}

// jobName is the created-by label key, named for readability in the check above.
const jobName = "ops.platform-operators.io/created-by"

// noneDeleted: this process deleted no Job.
func noneDeleted(types.UID) bool { return false }

// A status with observedSchedule but no observedScheduleTime (edited, or restored in part from a
// backup) used to panic in findSlots on every pass: nothing ran and nothing said why.
func TestAnObservedScheduleWithoutItsTimeCountsFromCreation(t *testing.T) {
	sj := newSJ(lastSchedule(thePriorHour), func(sj *v1alpha1.ScheduledJob) { sj.Status.ObservedSchedule = " " + onTheHour })
	var p Plan
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("decide panicked: %v", r)
			}
		}()
		p = Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
	}()
	if got := createdNames(p); !slices.Equal(got, []string{slotName(topOfTheHour)}) {
		t.Errorf("creates = %v, want the 10:00 slot", got)
	}
	if p.Status.ObservedScheduleTime == nil || !p.Status.ObservedScheduleTime.Time.Equal(sj.CreationTimestamp.Time) {
		t.Errorf("observedScheduleTime = %v, want the creation time %v", p.Status.ObservedScheduleTime, sj.CreationTimestamp)
	}
}

// The pass that creates a slot's Job leaves the record to the next pass. Whatever that pass
// finds, it records the slot whose Job exists: before, only the most recent slot within its
// deadline was looked for, so a late pass reported a running slot MissedDeadline, a pass under
// Forbid with the next slot due never recorded it and sent a false MissedSlots, and a suspended
// pass returned before recording (with ttlSecondsAfterFinished 0 and jobs.Gone forgetting the
// Job after an hour, the slot ran again on resume).
func TestTheSlotWhoseJobExistsIsRecordedByTheNextPassWhateverItFinds(t *testing.T) {
	at10 := childJob(topOfTheHour, running)
	done10 := childJob(topOfTheHour, succeededJob)
	done10.DeletionTimestamp = ptr.To(metav1.NewTime(topOfTheHour.Add(time.Minute))) // as goneChildren passes it
	cases := []struct {
		name        string
		sj          *v1alpha1.ScheduledJob
		jobs        []*batchv1.Job
		now         time.Time
		wantEvents  []string
		wantSkipped string
		wantCreate  []string
		check       func(t *testing.T, p Plan)
	}{
		{name: "past its deadline: recorded, not MissedDeadline",
			sj: newSJ(deadline(10), lastSchedule(thePriorHour)), jobs: []*batchv1.Job{at10}, now: topOfTheHour.Add(30 * time.Second),
			wantEvents: []string{ReasonSuccessfulCreate}},
		{name: "under Forbid with the next slot due: recorded, the next slot skipped, no MissedSlots",
			sj: newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour)), jobs: []*batchv1.Job{at10}, now: topOfTheHour.Add(time.Hour + time.Second),
			wantEvents: []string{ReasonSuccessfulCreate, ReasonJobAlreadyActive}, wantSkipped: ReasonJobAlreadyActive},
		{name: "under Allow with the next slot due: recorded, the next slot runs, no MissedSlots",
			sj: newSJ(lastSchedule(thePriorHour)), jobs: []*batchv1.Job{at10}, now: topOfTheHour.Add(time.Hour + time.Second),
			wantEvents: []string{ReasonSuccessfulCreate}, wantCreate: []string{slotName(topOfTheHour.Add(time.Hour))}},
		{name: "suspended right after the create: recorded before the suspension is said",
			sj: newSJ(suspended, lastSchedule(thePriorHour)), jobs: []*batchv1.Job{at10}, now: topOfTheHour.Add(30 * time.Second),
			wantEvents: []string{ReasonSuccessfulCreate, ReasonSuspended}},
		{name: "suspended, its Job finished and deleted by its TTL: recorded from what jobs.Gone kept",
			sj: newSJ(suspended, lastSchedule(thePriorHour)), jobs: []*batchv1.Job{done10}, now: topOfTheHour.Add(2 * time.Minute),
			wantEvents: []string{ReasonSuccessfulCreate, ReasonSuspended}},
		{name: "a skip recorded for the slot by a pass that did not see its Job yet: listed once, as the run",
			sj: newSJ(deadline(10), lastSchedule(thePriorHour), func(sj *v1alpha1.ScheduledJob) {
				sj.Status.LastSkippedTime = ptr.To(metav1.NewTime(topOfTheHour))
				sj.Status.Runs = addRun(nil, v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(topOfTheHour), Result: v1alpha1.RunSkipped, Reason: ReasonMissedDeadline}, 10)
			}), jobs: []*batchv1.Job{at10}, now: topOfTheHour.Add(30 * time.Second),
			wantEvents: []string{ReasonSuccessfulCreate}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.sj, tc.jobs, tc.now, noneDeleted, 0)
			if p.Status.LastScheduleTime == nil || !p.Status.LastScheduleTime.Time.Equal(topOfTheHour) {
				t.Errorf("lastScheduleTime = %v, want the 10:00 slot recorded", p.Status.LastScheduleTime)
			}
			if got := reasons(p); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events = %v, want %v", got, tc.wantEvents)
			}
			if p.Skipped != tc.wantSkipped {
				t.Errorf("skipped = %q, want %q", p.Skipped, tc.wantSkipped)
			}
			if got := createdNames(p); !slices.Equal(got, tc.wantCreate) {
				t.Errorf("creates = %v, want %v", got, tc.wantCreate)
			}
			n := 0
			for _, r := range p.Status.Runs {
				if r.ScheduledTime.Time.Equal(topOfTheHour) {
					n++
					if r.JobName != at10.Name {
						t.Errorf("the 10:00 run is %+v, want its Job", r)
					}
				}
			}
			if n != 1 {
				t.Errorf("the 10:00 slot is listed %d times in runs, want once: %+v", n, p.Status.Runs)
			}
		})
	}
}

// A Job whose scheduled-time annotation was edited does not move lastScheduleTime: only a Job
// named after the slot it says counts.
func TestAJobWithAnEditedScheduledTimeRecordsNothing(t *testing.T) {
	j := childJob(topOfTheHour, running)
	j.Annotations[jobstate.ScheduledTimeAnnotation] = weekAfterTheHour.Format(time.RFC3339)
	p := Decide(newSJ(lastSchedule(thePriorHour)), []*batchv1.Job{j}, topOfTheHour.Add(30*time.Second), noneDeleted, 0)
	if !p.Status.LastScheduleTime.Time.Equal(thePriorHour) {
		t.Errorf("lastScheduleTime = %v, want 09:00 kept", p.Status.LastScheduleTime)
	}
}

// Which Jobs a pass reads around the cache before it creates: under Forbid or Replace, and under
// any policy when it passes slots over; only recent slots neither recorded nor cached, never the
// one it creates (its AlreadyExists is the lock); the pass at a slot therefore reads nothing more.
func TestUnconfirmedSlots(t *testing.T) {
	forbid := policy(v1alpha1.ForbidConcurrent)
	everyMin := spec("* * * * *")
	withRunNow := newSJ(forbid, lastSchedule(thePriorHour), runNow("t"))
	withBackfill := newSJ(forbid, lastSchedule(thePriorHour))
	cursor := metav1.NewTime(thePriorHour.Add(-time.Hour))
	withBackfill.Status.Backfill = &v1alpha1.BackfillStatus{NextSlot: &cursor}
	cases := []struct {
		name string
		sj   *v1alpha1.ScheduledJob
		jobs []*batchv1.Job
		now  time.Time
		want []string
	}{
		{name: "the pass at a slot under Forbid: none",
			sj: newSJ(forbid, lastSchedule(thePriorHour)), now: justAfterTheHour},
		{name: "a run-now request under Forbid with the slot unrecorded: the run-now Job (a pass that died before its status write may have created it; the slot's own create adopts a slot Job)",
			sj: withRunNow, now: topOfTheHour.Add(5 * time.Second), want: []string{jobname.RunNow(withRunNow, "t")}},
		{name: "a backfill under Forbid with the slot unrecorded: the Job at the cursor",
			sj: withBackfill, now: topOfTheHour.Add(5 * time.Second), want: []string{jobname.Backfill(withBackfill, thePriorHour.Add(-time.Hour))}},
		{name: "the same, the slot's Job in the cache: none",
			sj: newSJ(forbid, lastSchedule(thePriorHour), runNow("t")), jobs: []*batchv1.Job{childJob(topOfTheHour, running)}, now: topOfTheHour.Add(5 * time.Second)},
		{name: "the same under Allow: none",
			sj: newSJ(lastSchedule(thePriorHour), runNow("t")), now: topOfTheHour.Add(5 * time.Second)},
		{name: "every minute, Forbid, the record three slots behind: the two slots before the one created, newest first",
			sj: newSJ(forbid, everyMin, lastSchedule(topOfTheHour)), now: topOfTheHour.Add(3*time.Minute + time.Second),
			want: []string{slotName(topOfTheHour.Add(2 * time.Minute)), slotName(topOfTheHour.Add(time.Minute))}},
		{name: "every minute, Allow, the record three slots behind: the slots it passes over, so that a Job the cache does not show yet is not reported missed",
			sj: newSJ(everyMin, lastSchedule(topOfTheHour)), now: topOfTheHour.Add(3*time.Minute + time.Second),
			want: []string{slotName(topOfTheHour.Add(2 * time.Minute)), slotName(topOfTheHour.Add(time.Minute))}},
		{name: "the most recent slot past its deadline (MissedDeadline): its Job, which a leader that died after the create may have left where the new leader's cache does not show it yet",
			sj: newSJ(deadline(60), lastSchedule(thePriorHour)), now: topOfTheHour.Add(2 * time.Minute), want: []string{jobname.Slot(newSJ(), topOfTheHour)}},
		{name: "the same, the slot's Job in the cache: none (it is recorded, not skipped)",
			sj: newSJ(deadline(60), lastSchedule(thePriorHour)), jobs: []*batchv1.Job{childJob(topOfTheHour, running)}, now: topOfTheHour.Add(2 * time.Minute)},
		{name: "Forbid, the slot skipped for an active Job (JobAlreadyActive): none",
			sj: newSJ(forbid, lastSchedule(thePriorHour)), jobs: []*batchv1.Job{childJob(thePriorHour, running)}, now: justAfterTheHour},
		{name: "every minute, Forbid, an hour behind: the most recent within the window, at most five",
			sj: newSJ(forbid, everyMin, lastSchedule(thePriorHour)), now: topOfTheHour.Add(time.Second),
			want: []string{slotName(topOfTheHour.Add(-time.Minute)), slotName(topOfTheHour.Add(-2 * time.Minute)), slotName(topOfTheHour.Add(-3 * time.Minute)),
				slotName(topOfTheHour.Add(-4 * time.Minute)), slotName(topOfTheHour.Add(-5 * time.Minute))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.sj, tc.jobs, tc.now, noneDeleted, 0).Confirm; !slices.Equal(got, tc.want) {
				t.Errorf("confirm = %v, want %v", got, tc.want)
			}
		})
	}
}

// The record of a run-now Job (created, or refused by the API server) starts the minute before
// the next one (RunNowInterval), from the time the pass created it at.
func TestARunNowJobRecordsItsTime(t *testing.T) {
	sj := newSJ(lastSchedule(topOfTheHour), runNow("t1"))
	p := Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
	if len(p.Creates) != 1 {
		t.Fatalf("creates %v, want the run-now Job", createdNames(p))
	}
	got := p.Creates[0].Job.DeepCopy()
	got.UID = "new"
	RecordCreates(sj, &p, []CreateResult{{Creation: p.Creates[0], Got: got, Ev: Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + got.Name}}}, justAfterTheHour)
	if p.Status.LastRunNowToken != "t1" || p.Status.LastRunNowTime == nil || !p.Status.LastRunNowTime.Time.Equal(justAfterTheHour) {
		t.Errorf("lastRunNowToken %q lastRunNowTime %v, want t1 at %v", p.Status.LastRunNowToken, p.Status.LastRunNowTime, justAfterTheHour)
	}

	sj = newSJ(lastSchedule(topOfTheHour), runNow("t2"))
	p = Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
	RecordCreates(sj, &p, []CreateResult{{Creation: p.Creates[0], Ev: Event{corev1.EventTypeWarning, ReasonJobRejected, "refused"}}}, justAfterTheHour)
	if p.Status.LastRunNowToken != "t2" || p.Status.LastRunNowTime == nil || !p.Status.LastRunNowTime.Time.Equal(justAfterTheHour) {
		t.Errorf("refused: lastRunNowToken %q lastRunNowTime %v, want t2 at %v", p.Status.LastRunNowToken, p.Status.LastRunNowTime, justAfterTheHour)
	}
}
