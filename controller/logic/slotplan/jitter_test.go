package slotplan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/slots"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

func TestJitterDelaysTheSlotNotItsIdentity(t *testing.T) {
	jittered := func(sj *v1alpha1.ScheduledJob) { sj.Spec.Jitter = &metav1.Duration{Duration: 10 * time.Minute} }
	sj := newSJ(lastSchedule(thePriorHour), jittered)
	off := slots.JitterOffset(sj)
	if off <= 0 || off >= 10*time.Minute {
		t.Fatalf("offset %s, want within (0, 10m) for this object", off)
	}
	before := Decide(sj, nil, topOfTheHour.Add(off-time.Second), noneDeleted, 0)
	if len(before.Creates) != 0 {
		t.Errorf("a Job was created %s after the slot, before its offset %s", off-time.Second, off)
	}
	if n := before.Status.NextScheduleTime; n == nil || !n.Time.Equal(topOfTheHour.Add(off)) {
		t.Errorf("nextScheduleTime = %v, want the effective start %s", n, topOfTheHour.Add(off))
	}
	if before.RequeueAfter != time.Second+schedule.Padding {
		t.Errorf("requeue after %s, want %s", before.RequeueAfter, time.Second+schedule.Padding)
	}
	at := Decide(sj, nil, topOfTheHour.Add(off), noneDeleted, 0)
	if len(at.Creates) != 1 || at.Creates[0].Job.Name != jobname.Slot(sj, topOfTheHour) || !at.Creates[0].Slot.Equal(topOfTheHour) {
		t.Fatalf("creates at slot+offset = %+v, want one Job named for the slot", at.Creates)
	}
	// startingDeadlineSeconds counts from the effective start.
	sj.Spec.StartingDeadlineSeconds = ptrInt64(30)
	if late := Decide(sj, nil, topOfTheHour.Add(off+20*time.Second), noneDeleted, 0); len(late.Creates) != 1 {
		t.Error("20 s after the effective start, within a 30 s deadline, no Job")
	}
	if late := Decide(sj, nil, topOfTheHour.Add(off+40*time.Second), noneDeleted, 0); len(late.Creates) != 0 {
		t.Error("40 s after the effective start, past a 30 s deadline, a Job was created")
	}
}

func ptrInt64(v int64) *int64 { return &v }

func TestSeveralSchedulesRunOncePerSharedMinute(t *testing.T) {
	several := func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.Schedule, sj.Spec.Schedules = "", []string{"0 * * * *", "0 */2 * * *", "30 * * * *"}
	}
	sj := newSJ(lastSchedule(thePriorHour), several)
	at := Decide(sj, nil, topOfTheHour, noneDeleted, 0) // 10:00: two schedules share it
	if len(at.Creates) != 1 || at.Creates[0].Job.Name != jobname.Slot(sj, topOfTheHour) {
		t.Fatalf("creates at a shared minute = %d, want exactly one Job for the slot", len(at.Creates))
	}
	if n := at.Status.NextScheduleTime; n == nil || !n.Time.Equal(topOfTheHour.Add(30*time.Minute)) {
		t.Errorf("next = %v, want 10:30 (the third schedule)", n)
	}
	// The slot recorded, the next pass at 10:30 runs the third schedule's slot.
	sj.Status = at.Status
	sj.Status.LastScheduleTime = &metav1.Time{Time: topOfTheHour}
	half := Decide(sj, nil, topOfTheHour.Add(30*time.Minute), noneDeleted, 0)
	if len(half.Creates) != 1 || !half.Creates[0].Slot.Equal(topOfTheHour.Add(30*time.Minute)) {
		t.Errorf("creates at 10:30 = %+v, want the 10:30 slot", half.Creates)
	}
	bad := newSJ(func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.Schedule, sj.Spec.Schedules = "", []string{"0 * * * *", "0 25 * * *"}
	})
	p := Decide(bad, nil, topOfTheHour, noneDeleted, 0)
	if len(p.Creates) != 0 || len(p.Events) != 1 || !strings.Contains(p.Events[0].Note, "schedules[1]") {
		t.Errorf("a bad second schedule: creates %d, events %+v; want none and one event naming schedules[1]", len(p.Creates), p.Events)
	}
}
