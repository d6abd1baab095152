package slotplan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// Issue 28: "@every 1s" stored before admission refused it (the CRD of an older release) is a
// schedule error the controller reports once, not a slot every second: each one cost a status
// write and a SuccessfulCreate Event for a Job that, named by the minute, was never created.
func TestASubMinuteEveryIsReportedNotRun(t *testing.T) {
	for _, tc := range []struct{ schedule, schedules string }{
		{schedule: "@every 1s"},
		{schedule: "@every 30s"},
		{schedule: "@every 90s"},
		{schedules: "@every 1s"},
	} {
		opts := []sjOpt{spec(tc.schedule)}
		if tc.schedules != "" {
			opts = append(opts, func(sj *v1alpha1.ScheduledJob) {
				sj.Spec.Schedule, sj.Spec.Schedules = "", []string{"0 9 * * *", tc.schedules}
			})
		}
		sj := newSJ(opts...)
		now := sj.CreationTimestamp.Add(10 * time.Minute)
		var events []string
		for i := range 5 {
			p := Decide(sj, nil, now.Add(time.Duration(i)*time.Second), noneDeleted, 0)
			if len(p.Creates) > 0 || p.RequeueAfter != 0 {
				t.Fatalf("%+v, pass %d: creates %v, requeue %v; want none (a user error waits for a spec change)", tc, i, createdNames(p), p.RequeueAfter)
			}
			events = append(events, reasons(p)...)
			sj.Status = p.Status
		}
		ready := meta.FindStatusCondition(sj.Status.Conditions, ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonInvalidSchedule ||
			!strings.Contains(ready.Message, "@every needs a whole number of minutes") {
			t.Errorf("%+v: Ready = %+v, want False InvalidSchedule saying @every needs whole minutes", tc, ready)
		}
		if strings.Join(events, ",") != ReasonInvalidSchedule {
			t.Errorf("%+v: events over 5 passes %v, want one %s", tc, events, ReasonInvalidSchedule)
		}
	}
}
