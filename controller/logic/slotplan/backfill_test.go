package slotplan

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

func TestBackfillRange(t *testing.T) {
	now := mustTime("2026-11-24T12:00:00Z")
	everyMinute, err := schedule.ParseAll([]string{"* * * * *"}, "", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, value string
		slots       int
		refused     string // part of the error; "" accepted
	}{
		{name: "a range of three minutes is three slots", value: "2026-11-24T10:00:00Z/2026-11-24T10:03:00Z", slots: 3},
		{name: "offsets and spaces around the times are read", value: " 2026-11-24T11:00:00+01:00 / 2026-11-24T10:02:00Z", slots: 2},
		{name: "a range with no slot is accepted and empty", value: "2026-11-24T10:00:10Z/2026-11-24T10:00:50Z"},
		{name: "to up to now is accepted", value: "2026-11-24T11:59:00Z/2026-11-24T12:00:00Z", slots: 1},
		{name: "exactly the most slots is accepted", value: "2026-11-24T10:00:00Z/2026-11-24T11:40:00Z", slots: 100},
		{name: "one slot more than the most is refused", value: "2026-11-24T10:00:00Z/2026-11-24T11:41:00Z", refused: "holds 101 slots of the schedule, more than 100"},
		{name: "from exactly 31 days back is accepted", value: "2026-10-24T12:00:00Z/2026-10-24T12:01:00Z", slots: 1},
		{name: "from more than 31 days back is refused", value: "2026-10-24T11:59:00Z/2026-10-24T12:01:00Z", refused: "more than 31 days back"},
		{name: "to in the future is refused", value: "2026-11-24T11:00:00Z/2026-11-24T12:00:01Z", refused: "in the future"},
		{name: "from after to is refused", value: "2026-11-24T11:00:00Z/2026-11-24T10:00:00Z", refused: "not before"},
		{name: "an empty range is refused", value: "2026-11-24T11:00:00Z/2026-11-24T11:00:00Z", refused: "not before"},
		{name: "no slash is refused", value: "2026-11-24T11:00:00Z", refused: "is not <from>/<to>"},
		{name: "a date without a time is refused", value: "2026-11-24/2026-11-25", refused: "not an RFC 3339 time"},
		{name: "a bad to is refused", value: "2026-11-24T11:00:00Z/yesterday", refused: `to "yesterday"`},
		{name: "an over-long value is refused without being parsed", value: strings.Repeat("x", 129), refused: "129 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, slots, err := backfillRange(tc.value, now, everyMinute)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("err = %v, want it to say %q", err, tc.refused)
			case len(slots) != tc.slots:
				t.Errorf("%d slots, want %d", len(slots), tc.slots)
			}
		})
	}
}

// The backfill tests' ScheduledJob runs every minute; its last scheduled slot is now's, so the
// scheduled path creates nothing and what a pass creates is the backfill's.
var (
	bfNow    = justAfterTheHour // 10:01
	bfFirst  = mustTime("2016-05-19T09:10:00Z")
	bfSecond = mustTime("2016-05-19T09:11:00Z")
	bfThird  = mustTime("2016-05-19T09:12:00Z")
)

const bfRequest = "2016-05-19T09:10:00Z/2016-05-19T09:13:00Z"

func backfillSJ(value string, opts ...sjOpt) *v1alpha1.ScheduledJob {
	// Created after the range: its slots were never the schedule's (the ledger's BeforeSchedule).
	sj := newSJ(append([]sjOpt{spec("* * * * *"), lastSchedule(bfNow), created(topOfTheHour)}, opts...)...)
	if value != "" {
		sj.Annotations = map[string]string{keys.AnnotationBackfill: value}
	}
	return sj
}

// backfillJob is sj's Job of a backfilled slot, as the API server would hold it.
func backfillJob(sj *v1alpha1.ScheduledJob, slot, createdAt time.Time, done bool) *batchv1.Job {
	j := NewJob(sj, jobname.Backfill(sj, slot), slot, time.UTC, "")
	j.UID = types.UID("uid-" + jobname.Backfill(sj, slot))
	j.CreationTimestamp = metav1.NewTime(createdAt)
	if done {
		end := metav1.NewTime(createdAt.Add(time.Second))
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: end}}
		j.Status.CompletionTime = &end
	}
	return j
}

// accept runs the pass that accepts sj's new backfill request, and keeps its status.
func accept(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time) *v1alpha1.ScheduledJob {
	sj.Status = pass(sj, children, now).Status
	return sj
}

// pass decides and records the API server's answer to its creates: each created.
func pass(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time) Plan {
	p := Decide(sj, children, now, noneDeleted, 0)
	var results []CreateResult
	for _, c := range p.Creates {
		results = append(results, CreateResult{Creation: c, Got: c.Job, Ev: Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + c.Job.Name}})
	}
	RecordCreates(sj, &p, results, now)
	return p
}

func TestABackfillRunsEachSlotOnceAtItsPace(t *testing.T) {
	sj := backfillSJ(bfRequest)
	p := pass(sj, nil, bfNow)
	// The pass that accepts the request writes it and creates nothing.
	if len(p.Creates) != 0 || p.Status.Backfill == nil || p.Status.Backfill.Phase != v1alpha1.BackfillRunning || !p.Status.Backfill.NextSlot.Time.Equal(bfFirst) {
		t.Fatalf("creates %v, status.backfill %+v: want the request accepted, nothing created yet", createdNames(p), p.Status.Backfill)
	}
	if p.RequeueAfter <= 0 || p.RequeueAfter > time.Second {
		t.Errorf("requeueAfter = %v, want the next pass soon", p.RequeueAfter)
	}
	sj.Status = p.Status
	p = pass(sj, nil, bfNow)
	if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfFirst) {
		t.Fatalf("creates %v, want the first slot's backfill Job only", got)
	}
	j := p.Creates[0].Job
	if j.Annotations[jobstate.ScheduledTimeAnnotation] != "2016-05-19T09:10:00Z" || j.Spec.Template.Annotations[jobstate.ScheduledTimeAnnotation] != "2016-05-19T09:10:00Z" {
		t.Errorf("Job annotations %v, pod annotations %v: want the slot's scheduled time", j.Annotations, j.Spec.Template.Annotations)
	}
	if env := j.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != jobstate.ScheduledTimeEnv {
		t.Errorf("env %v, want %s", env, jobstate.ScheduledTimeEnv)
	}
	bf := p.Status.Backfill
	if bf == nil || bf.Phase != v1alpha1.BackfillRunning || bf.Slots != 3 || bf.Done != 1 || bf.Created != 1 || !bf.NextSlot.Time.Equal(bfSecond) {
		t.Fatalf("status.backfill = %+v, want Running, 1 of 3 done, next %v", bf, bfSecond)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, ConditionBackfill); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonBackfillRunning {
		t.Errorf("Backfill condition = %+v", c)
	}
	if p.RequeueAfter <= 0 || p.RequeueAfter > BackfillInterval {
		t.Errorf("requeueAfter = %v, want at most %v", p.RequeueAfter, BackfillInterval)
	}

	// The next pass within the interval creates nothing and wakes at its end.
	sj.Status = p.Status
	first := backfillJob(sj, bfFirst, bfNow, false)
	p = pass(sj, []*batchv1.Job{first}, bfNow.Add(4*time.Second))
	if len(p.Creates) != 0 || p.RequeueAfter != 6*time.Second {
		t.Fatalf("creates %v, requeue %v: want none, and a wake-up when the interval is over", createdNames(p), p.RequeueAfter)
	}

	// After it, the second slot; then the third, which finishes the backfill.
	p = pass(sj, []*batchv1.Job{first}, bfNow.Add(BackfillInterval))
	if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfSecond) {
		t.Fatalf("creates %v, want the second slot's", got)
	}
	sj.Status = p.Status
	second := backfillJob(sj, bfSecond, bfNow.Add(BackfillInterval), false)
	p = pass(sj, []*batchv1.Job{first, second}, bfNow.Add(2*BackfillInterval))
	if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfThird) {
		t.Fatalf("creates %v, want the third slot's", got)
	}
	bf = p.Status.Backfill
	if bf.Phase != v1alpha1.BackfillFinished || bf.Done != 3 || bf.Created != 3 || bf.NextSlot != nil {
		t.Fatalf("status.backfill = %+v, want Finished, 3 created", bf)
	}
	if !strings.Contains(strings.Join(reasons(p), ","), ReasonBackfillFinished) {
		t.Errorf("events %v, want %s", reasons(p), ReasonBackfillFinished)
	}

	// Asked again (the same value): nothing more, even after its Jobs were pruned.
	sj.Status = p.Status
	p = pass(sj, nil, bfNow.Add(time.Hour))
	if got, evs := backfillCreates(p), backfillEvents(p); len(got) != 0 || len(evs) != 0 {
		t.Errorf("the same request again: backfill creates %v, events %v; want none", got, evs)
	}
}

// A process that died between a backfill Job's create and its status write left the cursor on
// the slot: the next pass counts the Job (found by its name) and moves on, never creating it again.
func TestABackfillJobCreatedBeforeACrashIsNotCreatedAgain(t *testing.T) {
	sj := accept(backfillSJ(bfRequest), nil, bfNow)
	p := pass(sj, nil, bfNow)
	before := p.Status.DeepCopy()
	before.Backfill.Done, before.Backfill.Created, before.Backfill.NextSlot, before.Backfill.LastCreateTime = 0, 0, &metav1.Time{Time: bfFirst}, nil
	before.Backfilled = sj.Status.Backfilled
	sj.Status = *before // the status write that would record the first slot was lost
	first := backfillJob(sj, bfFirst, bfNow, false)
	p = pass(sj, []*batchv1.Job{first}, bfNow.Add(time.Second))
	if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfSecond) {
		t.Fatalf("creates %v, want the second slot's only", got)
	}
	if bf := p.Status.Backfill; bf.Done != 2 || bf.Created != 2 {
		t.Errorf("status.backfill = %+v, want the first slot counted as created", bf)
	}
	// And until the cursor has passed it, the first slot's Job is not pruned.
	if ClaimRecorded(sj, first) {
		t.Error("the Job at the cursor counts as recorded: pruning it would let the slot run again")
	}
	sj.Status = p.Status
	if !ClaimRecorded(sj, first) {
		t.Error("the Job behind the cursor is not recorded: it would never be pruned")
	}
}

func TestABackfillSkipsSlotsThatRanAndWaitsForForbid(t *testing.T) {
	t.Run("a slot whose scheduled Job exists, or that the run history lists with a Job, does not run again", func(t *testing.T) {
		sj := backfillSJ(bfRequest)
		ran := childJob(bfFirst, succeededJob)
		sj.Status.Runs = []v1alpha1.ScheduledJobRun{{ScheduledTime: metav1.NewTime(bfSecond), JobName: jobname.Slot(sj, bfSecond), Result: v1alpha1.RunSucceeded}}
		p := pass(accept(sj, []*batchv1.Job{ran}, bfNow), []*batchv1.Job{ran}, bfNow)
		if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfThird) {
			t.Fatalf("creates %v, want the third slot's only", got)
		}
		if bf := p.Status.Backfill; bf.Phase != v1alpha1.BackfillFinished || bf.Done != 3 || bf.Created != 1 {
			t.Errorf("status.backfill = %+v, want Finished, 3 done, 1 created", bf)
		}
	})
	t.Run("a skipped slot is run", func(t *testing.T) {
		sj := backfillSJ(bfRequest)
		sj.Status.Runs = []v1alpha1.ScheduledJobRun{{ScheduledTime: metav1.NewTime(bfFirst), Result: v1alpha1.RunSkipped, Reason: ReasonJobAlreadyActive}}
		p := pass(accept(sj, nil, bfNow), nil, bfNow)
		if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfFirst) {
			t.Fatalf("creates %v, want the skipped first slot's", got)
		}
	})
	t.Run("under Forbid it waits for the active Job, and says so", func(t *testing.T) {
		active := childJob(bfNow, running)
		sj := backfillSJ(bfRequest, policy(v1alpha1.ForbidConcurrent), activeIn(active))
		p := pass(accept(sj, []*batchv1.Job{active}, bfNow), []*batchv1.Job{active}, bfNow)
		if len(p.Creates) != 0 || len(p.Replace) != 0 {
			t.Fatalf("creates %v, replaces %v: want none while %s runs", createdNames(p), names(p.Replace), active.Name)
		}
		if bf := p.Status.Backfill; bf.Phase != v1alpha1.BackfillRunning || !strings.Contains(bf.Message, active.Name) {
			t.Errorf("status.backfill = %+v, want Running, waiting for %s", bf, active.Name)
		}
	})
	t.Run("under Replace it waits too, and replaces nothing", func(t *testing.T) {
		active := childJob(bfNow, running)
		sj := backfillSJ(bfRequest, policy(v1alpha1.ReplaceConcurrent), activeIn(active))
		p := pass(accept(sj, []*batchv1.Job{active}, bfNow), []*batchv1.Job{active}, bfNow)
		if len(p.Creates) != 0 || len(p.Replace) != 0 {
			t.Fatalf("creates %v, replaces %v: want none", createdNames(p), names(p.Replace))
		}
	})
	t.Run("the scheduled slot due in the same pass goes first", func(t *testing.T) {
		sj := accept(backfillSJ(bfRequest, lastSchedule(bfNow)), nil, bfNow)
		sj.Status.LastScheduleTime = &metav1.Time{Time: topOfTheHour} // the slot of 10:01 is due now
		p := pass(sj, nil, bfNow)
		if got := createdNames(p); len(got) != 1 || got[0] != jobname.Slot(sj, bfNow) {
			t.Fatalf("creates %v, want the scheduled slot's only", got)
		}
		if p.RequeueAfter <= 0 || p.RequeueAfter > BackfillInterval {
			t.Errorf("requeueAfter = %v, want the backfill looked at again within %v", p.RequeueAfter, BackfillInterval)
		}
	})
	t.Run("suspended, nothing moves", func(t *testing.T) {
		p := pass(backfillSJ(bfRequest, suspended), nil, bfNow)
		if len(p.Creates) != 0 || p.Status.Backfill != nil {
			t.Errorf("creates %v, status.backfill %+v: want nothing while suspended", createdNames(p), p.Status.Backfill)
		}
	})
}

func TestABadBackfillRequestIsRefusedOnce(t *testing.T) {
	sj := backfillSJ("2016-05-19T09:10:00Z/2016-05-20T09:10:00Z") // to is tomorrow
	p := pass(sj, nil, bfNow)
	if len(p.Creates) != 0 {
		t.Fatalf("creates %v", createdNames(p))
	}
	bf := p.Status.Backfill
	if bf == nil || bf.Phase != v1alpha1.BackfillRefused || !strings.Contains(bf.Message, "in the future") {
		t.Fatalf("status.backfill = %+v, want Refused, saying why", bf)
	}
	c := meta.FindStatusCondition(p.Status.Conditions, ConditionBackfill)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonBackfillRefused {
		t.Errorf("Backfill condition = %+v", c)
	}
	if r := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v: a bad backfill request does not stop the schedule", r)
	}
	if got := reasons(p); len(got) != 1 || got[0] != ReasonBackfillRefused {
		t.Errorf("events %v, want one %s", got, ReasonBackfillRefused)
	}
	sj.Status = p.Status
	if p = pass(sj, nil, bfNow.Add(30*time.Second)); len(p.Events) != 0 || p.RequeueAfter > time.Minute {
		t.Errorf("the next pass: events %v, requeue %v; want no Event again, no retry", reasons(p), p.RequeueAfter)
	}
	long := backfillSJ(strings.Repeat("x", 4000))
	p = pass(long, nil, bfNow)
	long.Status = p.Status
	if p = pass(long, nil, bfNow); len(p.Events) != 0 || len(long.Status.Backfill.Request) > 128 {
		t.Errorf("an over-long value: events %v, request %d characters; want refused once and kept short", reasons(p), len(long.Status.Backfill.Request))
	}
}

func TestRemovingTheAnnotationCancelsTheBackfill(t *testing.T) {
	sj := accept(backfillSJ(bfRequest), nil, bfNow)
	p := pass(sj, nil, bfNow)
	sj.Status = p.Status
	sj.Annotations = nil
	p = pass(sj, []*batchv1.Job{backfillJob(sj, bfFirst, bfNow, true)}, bfNow.Add(20*time.Second))
	if len(p.Creates) != 0 || p.Status.Backfill.Phase != v1alpha1.BackfillCancelled {
		t.Errorf("creates %v, status.backfill %+v: want none, Cancelled", createdNames(p), p.Status.Backfill)
	}
	// A new value starts a new backfill; the slot that ran is not run again.
	sj.Status = p.Status
	sj.Annotations = map[string]string{keys.AnnotationBackfill: "2016-05-19T09:10:00Z/2016-05-19T09:12:00Z"}
	accept(sj, []*batchv1.Job{backfillJob(sj, bfFirst, bfNow, true)}, bfNow.Add(40*time.Second))
	p = pass(sj, []*batchv1.Job{backfillJob(sj, bfFirst, bfNow, true)}, bfNow.Add(40*time.Second))
	if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfSecond) {
		t.Errorf("creates %v, want the second slot's only", got)
	}
	if bf := p.Status.Backfill; bf.Done != 2 || bf.Created != 1 {
		t.Errorf("status.backfill = %+v, want 2 done, 1 created (the first ran before this request)", bf)
	}
}

func TestABackfillSlotRefusedAtAdmissionIsTriedAgainWhileTheRequestStands(t *testing.T) {
	sj := accept(backfillSJ(bfRequest), nil, bfNow)
	quota := func(c Creation) string {
		return jobstate.RefusalMessage(c.Job.Name, true, errors.New("exceeded quota: jobs, requested: count/jobs.batch=1"))
	}
	refuse := func(now time.Time) Plan {
		t.Helper()
		p := Decide(sj, nil, now, noneDeleted, 0)
		if len(p.Creates) != 1 || p.Creates[0].Job.Name != jobname.Backfill(sj, bfFirst) {
			t.Fatalf("at %v: creates %v, want the first slot's", now, createdNames(p))
		}
		RecordCreates(sj, &p, []CreateResult{{Creation: p.Creates[0], Ev: Event{corev1.EventTypeWarning, ReasonJobRejected, quota(p.Creates[0])}}}, now)
		return p
	}

	p := refuse(bfNow)
	bf := p.Status.Backfill
	if bf.Done != 0 || !bf.NextSlot.Time.Equal(bfFirst) || !strings.Contains(bf.Message, "refused at admission") {
		t.Errorf("status.backfill = %+v, want the cursor kept on the first slot, none done, the message saying why", bf)
	}
	if r := InRanges(p.Status.NotRun, bfFirst); r == nil || r.Reason != ReasonJobRejected {
		t.Errorf("status.notRun = %+v, want the refusal recorded while it lasts", p.Status.NotRun)
	}
	if len(p.Events) != 1 || p.Events[0].Reason != ReasonJobRejected || p.RequeueAfter <= 0 {
		t.Errorf("events %v, requeue %v: want one JobRejected Warning and a pass asked for the next try", p.Events, p.RequeueAfter)
	}
	sj.Status = p.Status

	// Before the backoff has passed: nothing is created, the next try is asked for.
	retry := bfNow.Add(p.RequeueAfter)
	if early := Decide(sj, nil, retry.Add(-time.Second/2), noneDeleted, 0); len(early.Creates) != 0 || early.RequeueAfter <= 0 {
		t.Errorf("before the retry: creates %v, requeue %v: want none, a pass at the retry", createdNames(early), early.RequeueAfter)
	}
	// Refused again for the same cause: recorded, no second Warning.
	p = refuse(retry)
	if len(p.Events) != 0 || p.Status.Backfill.Done != 0 {
		t.Errorf("events %v, status.backfill %+v: want no Event for the same refusal, still none done", p.Events, p.Status.Backfill)
	}
	sj.Status = p.Status

	// Admitted once the quota frees: the slot's Job, counted once, and the refusal's record gone.
	p = Decide(sj, nil, retry.Add(p.RequeueAfter), noneDeleted, 0)
	if got := createdNames(p); len(got) != 1 || got[0] != jobname.Backfill(sj, bfFirst) {
		t.Fatalf("after the backoff: creates %v, want the first slot's again", got)
	}
	RecordCreates(sj, &p, []CreateResult{{Creation: p.Creates[0], Got: p.Creates[0].Job, Ev: Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + p.Creates[0].Job.Name}}}, retry.Add(p.RequeueAfter))
	if bf := p.Status.Backfill; bf.Done != 1 || bf.Created != 1 || !bf.NextSlot.Time.Equal(bfSecond) {
		t.Errorf("status.backfill = %+v, want the first slot done and created, next the second", bf)
	}
	if r := InRanges(p.Status.NotRun, bfFirst); r != nil {
		t.Errorf("status.notRun = %+v, want the slot that ran out of it", p.Status.NotRun)
	}
}

// A refusal as invalid (422, 400) gives the same answer on every try: the slot's outcome.
func TestARefusedBackfillJobEndsItsSlot(t *testing.T) {
	sj := accept(backfillSJ(bfRequest), nil, bfNow)
	p := Decide(sj, nil, bfNow, noneDeleted, 0)
	c := p.Creates[0]
	RecordCreates(sj, &p, []CreateResult{{Creation: c, Ev: Event{corev1.EventTypeWarning, ReasonJobRejected, jobstate.RefusalPrefix + c.Job.Name + ": exceeded quota"}}}, bfNow)
	bf := p.Status.Backfill
	if bf.Done != 1 || bf.Created != 0 || !bf.NextSlot.Time.Equal(bfSecond) {
		t.Errorf("status.backfill = %+v, want the first slot done, none created, next the second", bf)
	}
	if len(p.Status.Runs) != 1 || p.Status.Runs[0].Result != v1alpha1.RunFailed || !p.Status.Runs[0].ScheduledTime.Time.Equal(bfFirst) {
		t.Errorf("runs = %+v, want the first slot's run Failed", p.Status.Runs)
	}
	// The run history keeps only runHistoryLimit runs: the lasting record of the refusal is
	// status.notRun (issue 43, row 11).
	if r := InRanges(p.Status.NotRun, bfFirst); r == nil || r.Reason != ReasonJobRejected {
		t.Errorf("status.notRun = %+v, want the refused slot recorded (JobRejected)", p.Status.NotRun)
	}
	if p.Status.LastRunNowToken != "" || p.Status.LastSkippedTime != nil {
		t.Errorf("lastRunNowToken %q, lastSkippedTime %v: a backfill refusal touches neither", p.Status.LastRunNowToken, p.Status.LastSkippedTime)
	}
}

// backfillCreates are the names of the backfill Jobs p creates.
func backfillCreates(p Plan) []string {
	var out []string
	for _, c := range p.Creates {
		if c.backfill != nil {
			out = append(out, c.Job.Name)
		}
	}
	return out
}

// backfillEvents are the reasons of p's backfill Events.
func backfillEvents(p Plan) []string {
	var out []string
	for _, r := range reasons(p) {
		if strings.HasPrefix(r, "Backfill") {
			out = append(out, r)
		}
	}
	return out
}

// The cursor is a time: a schedule edited under a running backfill runs the new schedule's slots
// from it, never a time that is no slot of it.
func TestABackfillIsCancelledByAnEditOfTheScheduleAndAskedAgainRunsTheRest(t *testing.T) {
	sj := accept(backfillSJ("2016-05-19T09:10:00Z/2016-05-19T09:20:00Z"), nil, bfNow)
	done := backfillJob(sj, bfFirst, bfNow, true)
	p := pass(sj, nil, bfNow) // the first slot's Job
	sj.Status = p.Status
	sj.Spec.Schedule = "*/5 * * * *"
	sj.Generation++
	p = pass(sj, []*batchv1.Job{done}, bfNow.Add(BackfillInterval))
	if got := backfillCreates(p); len(got) != 0 || p.Status.Backfill.Phase != v1alpha1.BackfillCancelled {
		t.Fatalf("creates %v, status.backfill %+v: want none, Cancelled by the edit", got, p.Status.Backfill)
	}
	// Asked again: the edited schedule's slots, the one dealt with (09:10) not again.
	sj.Status = p.Status
	sj.Annotations[keys.AnnotationBackfill] = "2016-05-19T09:10:00Z/2016-05-19T09:20:00Z "
	var created []string
	now := bfNow.Add(time.Minute)
	for range 6 {
		p = pass(sj, nil, now)
		created = append(created, backfillCreates(p)...)
		sj.Status = p.Status
		now = now.Add(BackfillInterval)
	}
	if want := []string{jobname.Backfill(sj, mustTime("2016-05-19T09:15:00Z"))}; !slices.Equal(created, want) {
		t.Errorf("created %v, want %v (09:10 was dealt with before the edit)", created, want)
	}
}
