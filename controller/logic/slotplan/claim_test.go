package slotplan

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
)

func TestClaimRecorded(t *testing.T) {
	slot := mustTime("2016-05-19T10:00:00Z")
	seoul, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	slotJob := func(loc *time.Location) *batchv1.Job {
		return NewJob(newSJ(), jobname.Slot(newSJ(), slot), slot, loc, "")
	}
	runNowJob := NewJob(newSJ(), jobname.RunNow(newSJ(), "t1"), slot, time.UTC, "t1")
	edited := slotJob(time.UTC)
	delete(edited.Annotations, batchv1.CronJobScheduledTimestampAnnotation)
	at := func(t time.Time) *v1alpha1.ScheduledJobStatus {
		return &v1alpha1.ScheduledJobStatus{LastScheduleTime: ptr.To(metav1.NewTime(t))}
	}
	for _, tc := range []struct {
		name      string
		st        *v1alpha1.ScheduledJobStatus
		requested string
		job       *batchv1.Job
		want      bool
	}{
		{"a slot not recorded at all", &v1alpha1.ScheduledJobStatus{}, "", slotJob(time.UTC), false},
		{"a slot after lastScheduleTime", at(slot.Add(-time.Minute)), "", slotJob(time.UTC), false},
		{"the slot of lastScheduleTime", at(slot), "", slotJob(time.UTC), true},
		{"a slot before lastScheduleTime", at(slot.Add(time.Hour)), "", slotJob(time.UTC), true},
		{"the slot of lastScheduleTime, annotated in another time zone", at(slot), "", slotJob(seoul), true},
		{"a run-now token still asked for and not recorded", &v1alpha1.ScheduledJobStatus{}, "t1", runNowJob, false},
		{"a run-now token recorded", &v1alpha1.ScheduledJobStatus{LastRunNowToken: "t1"}, "t1", runNowJob, true},
		{"a run-now token no longer asked for", &v1alpha1.ScheduledJobStatus{}, "t2", runNowJob, true},
		{"a Job without the slot annotation", &v1alpha1.ScheduledJobStatus{}, "", edited, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sj := newSJ()
			sj.Status = *tc.st
			if tc.requested != "" {
				metav1.SetMetaDataAnnotation(&sj.ObjectMeta, keys.AnnotationRunNow, tc.requested)
			}
			if got := ClaimRecorded(sj, tc.job); got != tc.want {
				t.Errorf("ClaimRecorded = %v, want %v", got, tc.want)
			}
		})
	}
}
