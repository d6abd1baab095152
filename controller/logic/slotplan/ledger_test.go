package slotplan

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slots"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

func slotRange(first, last time.Time, reason string) v1alpha1.SlotRange {
	return v1alpha1.SlotRange{First: metav1.NewTime(first), Last: metav1.NewTime(last), Reason: reason}
}

func minutes(t time.Time, n int) time.Time { return t.Add(time.Duration(n) * time.Minute) }

func everyMinuteSchedule(t *testing.T) schedule.Union {
	t.Helper()
	u, err := schedule.ParseAll([]string{"* * * * *"}, "", topOfTheHour)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSlotLedger(t *testing.T) {
	sj := newSJ(spec("* * * * *"), created(thePriorHour), lastSchedule(topOfTheHour))
	at := func(n int) time.Time { return minutes(thePriorHour, n) }
	backfilled := NewJob(sj, jobname.Backfill(sj, at(7)), at(7), time.UTC, "")
	scheduled := NewJob(sj, jobname.Slot(sj, at(8)), at(8), time.UTC, "")
	legacy := NewJob(sj, jobname.LegacySlot(sj.Name, at(9)), at(9), time.UTC, "")
	children := []*batchv1.Job{backfilled, scheduled, legacy}
	st := sj.Status.DeepCopy()
	st.NotRun = []v1alpha1.SlotRange{slotRange(at(20), at(24), ReasonMissedSlots)}
	st.Backfilled = []v1alpha1.SlotRange{slotRange(at(30), at(31), "")}
	st.Runs = []v1alpha1.ScheduledJobRun{
		{ScheduledTime: metav1.NewTime(at(40)), JobName: jobname.Slot(sj, at(40)), Result: v1alpha1.RunSucceeded},
		{ScheduledTime: metav1.NewTime(at(41)), Result: v1alpha1.RunSkipped, Reason: ReasonJobAlreadyActive},
	}
	st.NotRunKnownAfter = ptr.To(metav1.NewTime(at(5)))
	for _, tc := range []struct {
		name   string
		slot   time.Time
		want   SlotState
		reason string
		job    string
	}{
		{"a backfill Job is the slot's Job", at(7), SlotCreated, "", backfilled.Name},
		{"the scheduled Job", at(8), SlotCreated, "", scheduled.Name},
		{"the name used up to 0.1.0", at(9), SlotCreated, "", legacy.Name},
		{"a run recorded with its Job, the Job pruned", at(40), SlotCreated, "", ""},
		{"listed as not run", at(22), SlotNotRun, ReasonMissedSlots, ""},
		{"a run recorded without a Job", at(41), SlotNotRun, ReasonJobAlreadyActive, ""},
		{"a backfill dealt with it", at(31), SlotBackfilled, "", ""},
		{"before the ScheduledJob existed", minutes(thePriorHour, -5), SlotBeforeSchedule, "", ""},
		{"older than the ledger keeps", at(3), SlotUnknown, "", ""},
		{"at or before lastScheduleTime, not listed: ran", at(50), SlotCreated, "", ""},
		{"after lastScheduleTime: no pass decided it", minutes(topOfTheHour, 1), SlotDue, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := slotLedger(sj, st, children, tc.slot)
			job := ""
			if e.Job != nil {
				job = e.Job.Name
			}
			if e.State != tc.want || e.Reason != tc.reason || job != tc.job {
				t.Errorf("slotLedger = %+v (job %q), want %s %q job %q", e, job, tc.want, tc.reason, tc.job)
			}
		})
	}
}

func TestLedgerStatesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/scheduling.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range SlotStates {
		if !strings.Contains(string(doc), "| `"+string(s)+"` |") {
			t.Errorf("docs/scheduling.md has no row for the ledger state %s", s)
		}
	}
}

func TestRecordNotRunMergesConsecutiveSlotsAndStaysBounded(t *testing.T) {
	sched := everyMinuteSchedule(t)
	var st v1alpha1.ScheduledJobStatus
	recordNotRun(&st, sched, minutes(topOfTheHour, 0), minutes(topOfTheHour, 4), ReasonMissedSlots)
	recordNotRun(&st, sched, minutes(topOfTheHour, 5), minutes(topOfTheHour, 5), ReasonMissedSlots)
	if len(st.NotRun) != 1 || !st.NotRun[0].Last.Time.Equal(minutes(topOfTheHour, 5)) {
		t.Fatalf("notRun = %+v, want one range to 10:05", st.NotRun)
	}
	recordNotRun(&st, sched, minutes(topOfTheHour, 6), minutes(topOfTheHour, 6), ReasonJobAlreadyActive)
	if len(st.NotRun) != 2 || st.NotRun[0].Reason != ReasonJobAlreadyActive {
		t.Fatalf("notRun = %+v, want a second range for another reason, newest first", st.NotRun)
	}
	// Every other slot skipped: ranges that cannot merge, 40 of them.
	for i := 10; i < 90; i += 2 {
		recordNotRun(&st, sched, minutes(topOfTheHour, i), minutes(topOfTheHour, i), ReasonJobAlreadyActive)
	}
	if len(st.NotRun) != maxNotRun || st.NotRunKnownAfter == nil {
		t.Fatalf("%d ranges, knownAfter %v: want %d and the end of the dropped ones", len(st.NotRun), st.NotRunKnownAfter, maxNotRun)
	}
	oldest := st.NotRun[len(st.NotRun)-1]
	if !st.NotRunKnownAfter.Before(&oldest.First) {
		t.Errorf("knownAfter %v is not before the oldest range kept %v", st.NotRunKnownAfter, oldest.First)
	}
	if b, err := json.Marshal(st.NotRun); err != nil || len(b) > 2048 {
		t.Errorf("notRun is %d bytes (%v)", len(b), err)
	}
}

func TestRecordBackfilledMergesTheClosestRangesPastItsBound(t *testing.T) {
	sched := everyMinuteSchedule(t)
	var st v1alpha1.ScheduledJobStatus
	for i := 0; i < 3; i++ {
		recordBackfilled(&st, sched, minutes(topOfTheHour, i))
	}
	if len(st.Backfilled) != 1 {
		t.Fatalf("backfilled = %+v, want one range", st.Backfilled)
	}
	for i := 0; i < 2*maxBackfilled; i++ {
		recordBackfilled(&st, sched, minutes(topOfTheHour, 10+i*3+i%2))
	}
	if len(st.Backfilled) != maxBackfilled {
		t.Fatalf("%d ranges, want %d", len(st.Backfilled), maxBackfilled)
	}
	// Every slot once backfilled is still in a range: the bound gives way towards "ran".
	for i := 0; i < 2*maxBackfilled; i++ {
		if InRanges(st.Backfilled, minutes(topOfTheHour, 10+i*3+i%2)) == nil {
			t.Errorf("slot %d forgotten", i)
		}
	}
}

func TestAnyStatusTheSchemaAdmitsIsSurvivable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		st    v1alpha1.ScheduledJobStatus
		check func(*testing.T, Plan)
	}{
		{"a running backfill without from, to or startTime", v1alpha1.ScheduledJobStatus{Backfill: &v1alpha1.BackfillStatus{Request: "x", Phase: v1alpha1.BackfillRunning}},
			func(t *testing.T, p Plan) {
				if p.Status.Backfill.Phase != v1alpha1.BackfillCancelled {
					t.Errorf("backfill %+v, want Cancelled", p.Status.Backfill)
				}
			}},
		{"an active entry without a name", v1alpha1.ScheduledJobStatus{Active: []corev1.ObjectReference{{UID: "u"}}},
			func(t *testing.T, p Plan) {
				if len(p.Status.Active) != 0 || len(p.Creates) != 1 {
					t.Errorf("active %v, creates %v: want the entry dropped and the slot run", p.Status.Active, createdNames(p))
				}
			}},
		{"a slot range backwards and a stop of no reason", v1alpha1.ScheduledJobStatus{NotRun: []v1alpha1.SlotRange{slotRange(topOfTheHour, thePriorHour, "x")}, Stop: &v1alpha1.StopRecord{Generation: 2}},
			func(t *testing.T, p Plan) {
				if len(p.Status.NotRun) != 0 || p.Status.Stop != nil {
					t.Errorf("notRun %v, stop %v: want both dropped", p.Status.NotRun, p.Status.Stop)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sj := newSJ(lastSchedule(thePriorHour))
			sj.Annotations = map[string]string{keys.AnnotationBackfill: "x"}
			sj.Status.LastScheduleTime = ptr.To(metav1.NewTime(thePriorHour))
			tc.st.LastScheduleTime = sj.Status.LastScheduleTime
			sj.Status = tc.st
			p := Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
			if !slices.Contains(reasons(p), ReasonStatusRepaired) {
				t.Errorf("events %v, want StatusRepaired", reasons(p))
			}
			tc.check(t, p)
		})
	}
}

// The seams of issue 43, each as the pure decision sees it.
func TestTheLedgerAtTheSeams(t *testing.T) {
	t.Run("Replace records an unrecorded active Job before it replaces it", func(t *testing.T) {
		prev := childJob(thePriorHour, running) // created by a pass whose record was lost
		sj := newSJ(policy(v1alpha1.ReplaceConcurrent), lastSchedule(thePriorHour.Add(-time.Hour)))
		p := Decide(sj, []*batchv1.Job{prev}, justAfterTheHour, noneDeleted, 0)
		if len(p.Replace) != 0 || len(p.Creates) != 0 || !p.Status.LastScheduleTime.Time.Equal(thePriorHour) {
			t.Fatalf("replace %v, creates %v, lastScheduleTime %v: want the record only", names(p.Replace), createdNames(p), p.Status.LastScheduleTime)
		}
		sj.Status = p.Status
		p = Decide(sj, []*batchv1.Job{prev}, justAfterTheHour, noneDeleted, 0)
		if len(p.Replace) != 1 || !slices.Equal(createdNames(p), []string{slotName(topOfTheHour)}) {
			t.Errorf("replace %v, creates %v: want the recorded Job replaced by the slot's", names(p.Replace), createdNames(p))
		}
	})
	t.Run("Replace records an active backfill Job beyond the cursor, then replaces it", func(t *testing.T) {
		// Model seed 33: a backfill Job its cursor had not reached (a pass died before moving
		// it) is active; the backfill waits for the active Jobs and Replace waited for the Job's
		// record: a pass a second, the due slot never decided.
		sj := newSJ(spec("* * * * *"), policy(v1alpha1.ReplaceConcurrent), lastSchedule(minutes(topOfTheHour, -1)), created(minutes(thePriorHour, -30)))
		sj.Status = Decide(sj, nil, minutes(topOfTheHour, -1), noneDeleted, 0).Status // the observed schedule
		setAnnotation(sj, keys.AnnotationBackfill, "r")
		sj.Status.Backfill = &v1alpha1.BackfillStatus{Request: "r", Phase: v1alpha1.BackfillRunning, Schedule: backfillKey(sj.Status.ObservedSchedule),
			From: ptr.To(metav1.NewTime(minutes(thePriorHour, 10))), To: ptr.To(metav1.NewTime(minutes(thePriorHour, 20))),
			StartTime: ptr.To(metav1.NewTime(minutes(thePriorHour, 40))), NextSlot: ptr.To(metav1.NewTime(minutes(thePriorHour, 10))), Slots: 10}
		sj.Status.NotRun = []v1alpha1.SlotRange{slotRange(minutes(thePriorHour, 10), minutes(thePriorHour, 20), ReasonMissedSlots)}
		active := NewJob(sj, jobname.Backfill(sj, minutes(thePriorHour, 15)), minutes(thePriorHour, 15), time.UTC, "")
		active.UID = "backfill-15"
		p := Decide(sj, []*batchv1.Job{active}, topOfTheHour.Add(time.Second), noneDeleted, 0)
		if len(p.Replace) != 0 || len(p.Creates) != 0 || InRanges(p.Status.Backfilled, minutes(thePriorHour, 15)) == nil {
			t.Fatalf("replace %v, creates %v, backfilled %+v: want the backfill slot recorded first", names(p.Replace), createdNames(p), p.Status.Backfilled)
		}
		sj.Status = p.Status
		p = Decide(sj, []*batchv1.Job{active}, topOfTheHour.Add(2*time.Second), noneDeleted, 0)
		if len(p.Replace) != 1 || !slices.Equal(createdNames(p), []string{jobname.Slot(sj, topOfTheHour)}) {
			t.Errorf("replace %v, creates %v: want the backfill Job replaced by the slot's", names(p.Replace), createdNames(p))
		}
	})
	t.Run("Forbid: a run-now token waits for the due slot's Job, then is refused by it", func(t *testing.T) {
		sj := newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour), runNow("t"))
		p := Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
		if !slices.Equal(createdNames(p), []string{slotName(topOfTheHour)}) || p.Status.LastRunNowToken != "" || p.Skipped != "" {
			t.Fatalf("creates %v, token %q, skipped %q: want the slot's Job and the token pending", createdNames(p), p.Status.LastRunNowToken, p.Skipped)
		}
		sj.Status = p.Status
		j := childJob(topOfTheHour, running)
		p = Decide(sj, []*batchv1.Job{j}, justAfterTheHour, noneDeleted, 0)
		if p.Status.LastRunNowToken != "t" || !slices.Contains(reasons(p), ReasonRunNowSkipped) || len(p.Creates) != 0 {
			t.Errorf("token %q, events %v: want the token spent against the slot's Job", p.Status.LastRunNowToken, reasons(p))
		}
	})
	t.Run("a refused run-now and an edit do not re-run a skipped slot", func(t *testing.T) {
		sj := newSJ(policy(v1alpha1.ForbidConcurrent), lastSchedule(thePriorHour))
		sj.Status.LastSkippedTime = ptr.To(metav1.NewTime(topOfTheHour))
		sj.Status.NotRun = []v1alpha1.SlotRange{slotRange(topOfTheHour, topOfTheHour, ReasonJobAlreadyActive)}
		meta.SetStatusCondition(&sj.Status.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonJobRejected, ObservedGeneration: 1})
		p := Decide(sj, nil, minutes(topOfTheHour, 30), noneDeleted, 0)
		if len(p.Creates) != 0 {
			t.Errorf("creates %v, want none: the slot was skipped, not refused", createdNames(p))
		}
	})
	t.Run("a refused scheduled slot is retried after an edit, once", func(t *testing.T) {
		sj := newSJ(lastSchedule(thePriorHour))
		sj.Status.LastSkippedTime = ptr.To(metav1.NewTime(topOfTheHour))
		sj.Status.NotRun = []v1alpha1.SlotRange{slotRange(topOfTheHour, topOfTheHour, ReasonJobRejected)}
		meta.SetStatusCondition(&sj.Status.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonJobRejected, ObservedGeneration: 1})
		p := Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
		if !slices.Equal(createdNames(p), []string{slotName(topOfTheHour)}) {
			t.Fatalf("creates %v, want the refused slot retried", createdNames(p))
		}
		// Its backfill Job exists (a backfill ran the refused slot): not created again.
		bj := NewJob(sj, jobname.Backfill(sj, topOfTheHour), topOfTheHour, time.UTC, "")
		if p := Decide(sj, []*batchv1.Job{bj}, justAfterTheHour, noneDeleted, 0); len(p.Creates) != 0 {
			t.Errorf("creates %v, want none: the slot's backfill Job exists", createdNames(p))
		}
	})
	t.Run("slots passed over are recorded, and named once", func(t *testing.T) {
		sj := newSJ(spec("* * * * *"), lastSchedule(topOfTheHour), created(thePriorHour))
		now := minutes(topOfTheHour, 30).Add(time.Second)
		p := Decide(sj, nil, now, noneDeleted, 0)
		if !slices.Contains(reasons(p), ReasonMissedSlots) || len(p.Status.NotRun) != 1 {
			t.Fatalf("events %v, notRun %+v: want MissedSlots and one range", reasons(p), p.Status.NotRun)
		}
		r := p.Status.NotRun[0]
		if !r.First.Time.Equal(minutes(topOfTheHour, 1)) || !r.Last.Time.Equal(minutes(topOfTheHour, 29)) {
			t.Errorf("range %v..%v, want 10:01..10:29", r.First, r.Last)
		}
		// The create timed out; the status was written; the retry names nothing again.
		sj.Status = p.Status
		sj.Status.LastScheduleTime = ptr.To(metav1.NewTime(topOfTheHour))
		if p := Decide(sj, nil, now.Add(time.Second), noneDeleted, 0); slices.Contains(reasons(p), ReasonMissedSlots) {
			t.Errorf("events %v on the retry, want MissedSlots once", reasons(p))
		}
	})
	t.Run("a slot past its deadline after slots the ledger lists is recorded, not lost", func(t *testing.T) {
		// Passes whose delete was refused named 10:01..10:03 (written); 10:04 went past its
		// deadline while the next pass waited; the pass at 10:05 records it.
		sj := newSJ(spec("* * * * *"), deadline(30), lastSchedule(topOfTheHour), created(thePriorHour))
		sj.Status.NotRun = []v1alpha1.SlotRange{slotRange(minutes(topOfTheHour, 1), minutes(topOfTheHour, 3), ReasonMissedSlots)}
		p := Decide(sj, nil, minutes(topOfTheHour, 5).Add(time.Second), noneDeleted, 0)
		if r := InRanges(p.Status.NotRun, minutes(topOfTheHour, 4)); r == nil || r.Reason != ReasonMissedDeadline {
			t.Errorf("notRun %+v: want 10:04 recorded MissedDeadline", p.Status.NotRun)
		}
		if slices.Contains(reasons(p), ReasonMissedSlots) {
			t.Errorf("events %v: want the listed slots not named again", reasons(p))
		}
	})
	t.Run("slots a dead pass passed over before the Job it created are recorded, not lost", func(t *testing.T) {
		// Chaos, leader-kill-record: lastScheduleTime 10:00; the pass at 10:04 passed over
		// 10:01..10:03, created 10:04's Job and was killed before its status write. The next
		// leader's pass at 10:06 records 10:04 (the record step) and must record 10:01..10:03
		// too, not only 10:05 after the Job.
		sj := newSJ(spec("* * * * *"), deadline(120), lastSchedule(topOfTheHour), created(thePriorHour))
		ran := NewJob(sj, jobname.Slot(sj, minutes(topOfTheHour, 4)), minutes(topOfTheHour, 4), time.UTC, "")
		p := Decide(sj, []*batchv1.Job{ran}, minutes(topOfTheHour, 6).Add(10*time.Second), noneDeleted, 0)
		if got := p.Status.LastScheduleTime; got == nil || !got.Time.Equal(minutes(topOfTheHour, 4)) {
			t.Errorf("lastScheduleTime %v, want 10:04 (the record step)", got)
		}
		for n := 1; n <= 5; n++ {
			slot := minutes(topOfTheHour, n)
			r := InRanges(p.Status.NotRun, slot)
			switch {
			case n == 4 && r != nil:
				t.Errorf("notRun lists 10:04, whose Job exists: %+v", p.Status.NotRun)
			case n != 4 && r == nil:
				t.Errorf("notRun %+v does not list %s: lost", p.Status.NotRun, slot.Format("15:04"))
			}
		}
		if r := InRanges(p.Status.NotRun, minutes(topOfTheHour, 2)); r != nil && r.Reason != ReasonMissedDeadline {
			t.Errorf("10:02 recorded %s, want MissedDeadline (past its 120 s deadline at 10:06)", r.Reason)
		}
		if names := createdNames(p); !slices.Equal(names, []string{jobname.Slot(sj, minutes(topOfTheHour, 6))}) {
			t.Errorf("creates %v, want 10:06's Job", names)
		}
	})
	t.Run("a slot refused at admission is tried again while it can start; the try that creates replaces the record", func(t *testing.T) {
		// Chaos, apiserver-restart: for ~30 s after a restart OwnerReferencesPermissionEnforcement
		// answers 403 for every Job owned by a kind it has not rediscovered.
		slot := minutes(topOfTheHour, 1)
		refuse := func(sj *v1alpha1.ScheduledJob, now time.Time, admission bool) Plan {
			t.Helper()
			p := Decide(sj, nil, now, noneDeleted, 0)
			if len(p.Creates) != 1 {
				t.Fatalf("creates %v at %s, want the slot's Job", createdNames(p), now.Format("15:04:05"))
			}
			msg := jobstate.RefusalMessage(p.Creates[0].Job.Name, admission, errors.New("cannot find RESTMapping"))
			RecordCreates(sj, &p, []CreateResult{{Creation: p.Creates[0], Ev: Event{corev1.EventTypeWarning, ReasonJobRejected, msg}}}, now)
			return p
		}
		sj := newSJ(spec("* * * * *"), lastSchedule(topOfTheHour), created(thePriorHour))
		p := refuse(sj, slot.Add(2*time.Second), true)
		if r := InRanges(p.Status.NotRun, slot); r == nil || r.Reason != ReasonJobRejected || p.Skipped != ReasonJobRejected {
			t.Fatalf("notRun %+v, skipped %q: want the refusal recorded at once", p.Status.NotRun, p.Skipped)
		}
		if p.RequeueAfter != time.Second {
			t.Errorf("requeueAfter %v, want the backoff (1 s: the run is 2 s late)", p.RequeueAfter)
		}
		sj.Status = p.Status
		if q := Decide(sj, nil, slot.Add(2500*time.Millisecond), noneDeleted, 0); len(q.Creates) != 0 || q.RequeueAfter > time.Second {
			t.Errorf("creates %v, requeue %v before the backoff: want none, and a pass at the retry", createdNames(q), q.RequeueAfter)
		}
		// Refused again: the same record, counted once.
		p = refuse(sj, slot.Add(3*time.Second), true)
		if p.Skipped != "" || len(p.Events) != 0 {
			t.Errorf("skipped %q, events %v on the second refusal: want the slot counted and announced once", p.Skipped, reasons(p))
		}
		sj.Status = p.Status
		// The next try creates the Job; the pass after it records the Job's run in place of the refusal.
		q := Decide(sj, nil, slot.Add(5*time.Second), noneDeleted, 0)
		if len(q.Creates) != 1 {
			t.Fatalf("creates %v after the backoff, want the slot's Job again", createdNames(q))
		}
		job := q.Creates[0].Job
		job.UID = "retried"
		q = Decide(sj, []*batchv1.Job{job}, slot.Add(6*time.Second), noneDeleted, 0)
		if InRanges(q.Status.NotRun, slot) != nil || q.Status.LastScheduleTime == nil || !q.Status.LastScheduleTime.Time.Equal(slot) {
			t.Errorf("notRun %+v, lastScheduleTime %v: want the slot taken out of the ledger and recorded as run", q.Status.NotRun, q.Status.LastScheduleTime)
		}
		if len(q.Status.Runs) != 1 || q.Status.Runs[0].JobName != job.Name {
			t.Errorf("runs %+v: want only the Job's run", q.Status.Runs)
		}
		if c := meta.FindStatusCondition(q.Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonScheduled {
			t.Errorf("Ready %+v: want Scheduled once the refused slot's Job exists, whichever pass records it", c)
		}

		// A refusal as invalid is final; so is one whose slot can no longer start.
		sj = newSJ(spec("* * * * *"), lastSchedule(topOfTheHour), created(thePriorHour))
		sj.Status = refuse(sj, slot.Add(2*time.Second), false).Status
		if q := Decide(sj, nil, slot.Add(30*time.Second), noneDeleted, 0); len(q.Creates) != 0 {
			t.Errorf("creates %v: a refusal as invalid was tried again", createdNames(q))
		}
		sj = newSJ(spec("* * * * *"), deadline(10), lastSchedule(topOfTheHour), created(thePriorHour))
		sj.Status = refuse(sj, slot.Add(8*time.Second), true).Status
		if q := Decide(sj, nil, slot.Add(11*time.Second), noneDeleted, 0); len(q.Creates) != 0 {
			t.Errorf("creates %v past startingDeadlineSeconds: the refusal is the slot's result", createdNames(q))
		}
	})
	t.Run("a backfill runs only the slots the ledger says did not run", func(t *testing.T) {
		// Every minute since 9:00, the slots 9:10 to 9:14 passed over, the rest ran and were
		// pruned long ago (no Job, no run in the history).
		sj := newSJ(spec("* * * * *"), created(thePriorHour), lastSchedule(topOfTheHour))
		sj.Status.NotRun = []v1alpha1.SlotRange{slotRange(minutes(thePriorHour, 10), minutes(thePriorHour, 14), ReasonMissedSlots)}
		sj.Annotations = map[string]string{keys.AnnotationBackfill: "2016-05-19T09:00:00Z/2016-05-19T09:30:00Z"}
		var created []string
		children := []*batchv1.Job{}
		now := justAfterTheHour
		for range 60 {
			p := Decide(sj, children, now, noneDeleted, 0)
			var results []CreateResult
			for _, c := range p.Creates {
				if c.backfill != nil {
					created = append(created, c.Job.Name)
				}
				j := c.Job.DeepCopy()
				j.UID = types.UID("u-" + c.Job.Name)
				results = append(results, CreateResult{Creation: c, Got: j, Ev: Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + j.Name}})
			}
			RecordCreates(sj, &p, results, now)
			sj.Status = p.Status
			now = now.Add(BackfillInterval)
		}
		var want []string
		for i := 10; i <= 14; i++ {
			want = append(want, jobname.Backfill(sj, minutes(thePriorHour, i)))
		}
		if !slices.Equal(created, want) {
			t.Errorf("created %v, want %v", created, want)
		}
		if bf := sj.Status.Backfill; bf.Phase != v1alpha1.BackfillFinished || bf.Done != 30 || bf.Created != 5 {
			t.Errorf("backfill %+v, want Finished, 30 done, 5 created", bf)
		}
		// A wider range minutes later runs none of them again, though their Jobs are gone.
		sj.Annotations[keys.AnnotationBackfill] = "2016-05-19T08:55:00Z/2016-05-19T09:31:00Z"
		created = nil
		for range 60 {
			p := Decide(sj, nil, now, noneDeleted, 0)
			for _, c := range p.Creates {
				if c.backfill != nil {
					created = append(created, c.Job.Name)
				}
			}
			var results []CreateResult
			for _, c := range p.Creates {
				j := c.Job.DeepCopy()
				results = append(results, CreateResult{Creation: c, Got: j, Ev: Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + j.Name}})
			}
			RecordCreates(sj, &p, results, now)
			sj.Status = p.Status
			now = now.Add(BackfillInterval)
		}
		for _, name := range created {
			for i := 10; i <= 14; i++ {
				if name == jobname.Backfill(sj, minutes(thePriorHour, i)) {
					t.Errorf("%s ran again", name)
				}
			}
		}
		if len(created) != 5 { // 8:55 to 8:59, before the ScheduledJob existed
			t.Errorf("created %v, want the 5 slots before creation", created)
		}
	})
	t.Run("an edit of the schedule mid-backfill cancels it", func(t *testing.T) {
		sj := accept(backfillSJ(bfRequest), nil, bfNow)
		sj.Spec.Schedule = "*/2 * * * *"
		sj.Generation++
		p := Decide(sj, nil, bfNow.Add(time.Second), noneDeleted, 0)
		if len(p.Creates) != 0 || p.Status.Backfill.Phase != v1alpha1.BackfillCancelled || !strings.Contains(meta.FindStatusCondition(p.Status.Conditions, ConditionBackfill).Message, "schedule or time zone changed") {
			t.Errorf("creates %v, backfill %+v: want Cancelled for the edit", createdNames(p), p.Status.Backfill)
		}
	})
	t.Run("a refused backfill Job does not touch Ready", func(t *testing.T) {
		sj := accept(backfillSJ(bfRequest), nil, bfNow)
		p := Decide(sj, nil, bfNow, noneDeleted, 0)
		c := p.Creates[0]
		RecordCreates(sj, &p, []CreateResult{{Creation: c, Ev: Event{corev1.EventTypeWarning, ReasonJobRejected, jobstate.RefusalPrefix + c.Job.Name + ": exceeded quota"}}}, bfNow)
		if r := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			t.Errorf("Ready = %+v, want True: the schedule's runs are fine", r)
		}
	})
	t.Run("status stays bounded whatever number of Jobs are active or stuck", func(t *testing.T) {
		sj := newSJ(lastSchedule(topOfTheHour))
		var children []*batchv1.Job
		for i := range 1000 {
			j := childJob(minutes(thePriorHour, -i), running)
			j.CreationTimestamp = metav1.NewTime(thePriorHour.Add(-time.Hour))
			children = append(children, j)
		}
		SortJobs(children)
		p := Decide(sj, children, justAfterTheHour, noneDeleted, time.Minute)
		if len(p.Status.Active) != maxActiveRefs || p.Status.ActiveCount != 1000 {
			t.Errorf("active %d, activeCount %d: want %d listed of 1000", len(p.Status.Active), p.Status.ActiveCount, maxActiveRefs)
		}
		if b, err := json.Marshal(p.Status); err != nil || len(b) > 8192 {
			t.Errorf("status is %d bytes (%v), over the 8 KiB the cache keeps", len(b), err)
		}
		if n := len(reasons(p)); n > maxStuckNamed+2 {
			t.Errorf("%d events, want at most one per Job the condition names", n)
		}
	})
}

func setAnnotation(sj *v1alpha1.ScheduledJob, k, v string) {
	if sj.Annotations == nil {
		sj.Annotations = map[string]string{}
	}
	sj.Annotations[k] = v
}

// A range of status.notRun grows across the gaps of the schedule in force: under */15 a skip at
// 10:15 continues one at 10:02 (no */15 slot between). Read under */1 again, its inside would
// say that 10:03..10:14 got no Job, and a backfill would run 10:03 a second time (the model, seed
// 20). An edit of the schedule or time zone keeps only each range's ends.
func TestAnEditOfTheScheduleKeepsOnlyTheEndsOfNotRunRanges(t *testing.T) {
	skipped := v1alpha1.SlotRange{First: metav1.NewTime(minutes(topOfTheHour, 2)), Last: metav1.NewTime(minutes(topOfTheHour, 15)), Reason: ReasonJobAlreadyActive}
	edited := func(schedule string) *v1alpha1.ScheduledJob {
		sj := newSJ(spec(schedule), lastSchedule(minutes(topOfTheHour, 19)), observedSchedule(" */15 * * * *", minutes(topOfTheHour, 4)))
		sj.Status.NotRun = []v1alpha1.SlotRange{skipped}
		return sj
	}
	now := minutes(topOfTheHour, 20).Add(30 * time.Second)
	for _, tc := range []struct {
		name string
		sj   *v1alpha1.ScheduledJob
		want map[int]SlotState // minute of the hour → its state after the pass
	}{
		{"the schedule edited back to every minute", edited("*/1 * * * *"),
			map[int]SlotState{2: SlotNotRun, 3: SlotCreated, 10: SlotCreated, 14: SlotCreated, 15: SlotNotRun}},
		{"the time zone edited", func() *v1alpha1.ScheduledJob {
			sj := edited("*/15 * * * *")
			sj.Spec.TimeZone = ptr.To("Asia/Kolkata")
			return sj
		}(), map[int]SlotState{2: SlotNotRun, 3: SlotCreated, 15: SlotNotRun}},
		{"no edit: the range holds", func() *v1alpha1.ScheduledJob {
			sj := edited("*/15 * * * *")
			sj.Status.ObservedSchedule = slots.Observed(sj)
			return sj
		}(), map[int]SlotState{2: SlotNotRun, 3: SlotNotRun, 15: SlotNotRun}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.sj, nil, now, noneDeleted, 0)
			for m, want := range tc.want {
				if got := slotLedger(tc.sj, &p.Status, nil, minutes(topOfTheHour, m)).State; got != want {
					t.Errorf("10:%02d is %v, want %v (notRun %+v)", m, got, want, p.Status.NotRun)
				}
			}
		})
	}
}

// The pass at an edit of the schedule names the old schedule's undecided slots passed over. A
// slot whose Job the pass before created, leaving its record to this one, was decided: this pass
// records it and does not name it (the model, seed 80: MissedSlots for a slot whose Job existed).
func TestAnEditRightAfterASlotsCreateRecordsTheSlotAndPassesNothingOver(t *testing.T) {
	slot := minutes(topOfTheHour, 15)
	sj := newSJ(spec("*/1 * * * *"), lastSchedule(topOfTheHour), observedSchedule(" */15 * * * *", thePriorHour))
	p := Decide(sj, []*batchv1.Job{childJob(slot, running)}, slot.Add(3*time.Minute+52*time.Second), noneDeleted, 0)
	if p.Status.LastScheduleTime == nil || !p.Status.LastScheduleTime.Time.Equal(slot) {
		t.Errorf("lastScheduleTime %v, want the slot whose Job exists, %v", p.Status.LastScheduleTime, slot)
	}
	if slices.Contains(reasons(p), ReasonMissedSlots) || InRanges(p.Status.NotRun, slot) != nil {
		t.Errorf("events %v, notRun %+v: the slot whose Job exists is named passed over", reasons(p), p.Status.NotRun)
	}
}

// Each list of the status has a bound, but not all at once: ten refused runs with the API server's
// message, twenty not-run ranges (an edit of the schedule splits each in two) and the conditions
// passed 8 KiB (the model, seed 77: 8,200 bytes). The oldest ranges give way, as the count bound
// does: notRunKnownAfter moves past them, so a backfill counts those slots done.
func TestTheStatusStaysUnderItsByteBoundWhenEveryListIsFull(t *testing.T) {
	sj := newSJ(lastSchedule(minutes(topOfTheHour, 100)))
	msg := jobstate.RefusalPrefix + strings.Repeat("x", 400)
	for i := range 10 {
		sj.Status.Runs = append(sj.Status.Runs, v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(minutes(topOfTheHour, 100-i)),
			Result: v1alpha1.RunFailed, Reason: ReasonJobRejected, Message: msg})
	}
	for i := range maxNotRun {
		m := metav1.NewTime(minutes(topOfTheHour, 80-3*i))
		sj.Status.NotRun = append(sj.Status.NotRun, v1alpha1.SlotRange{First: m, Last: m, Reason: ReasonJobRejected})
	}
	oldest := sj.Status.NotRun[maxNotRun-1].Last.Time
	p := Decide(sj, nil, minutes(topOfTheHour, 101).Add(10*time.Second), noneDeleted, 0)
	b, err := json.Marshal(p.Status)
	if err != nil || len(b) > maxStatusBytes {
		t.Fatalf("status is %d bytes (%v), over %d", len(b), err, maxStatusBytes)
	}
	if len(p.Status.NotRun) == maxNotRun || p.Status.NotRunKnownAfter == nil || p.Status.NotRunKnownAfter.Time.Before(oldest) {
		t.Errorf("notRun %d ranges, knownAfter %v: want the oldest dropped and knownAfter past %v", len(p.Status.NotRun), p.Status.NotRunKnownAfter, oldest)
	}
	if got := slotLedger(sj, &p.Status, nil, oldest).State; got != SlotUnknown {
		t.Errorf("the oldest dropped slot is %v, want Unknown (never run twice)", got)
	}
}
