package at

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/gitops"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// TestWhatGitOpsToolsRead runs Argo CD's health check (docs/gitops/argocd-health.lua) and kstatus
// on statuses decide and recordCreate compute, through an At's life.
func TestWhatGitOpsToolsRead(t *testing.T) {
	runAt := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	newAt := func() *v1alpha1.At {
		return &v1alpha1.At{TypeMeta: metav1.TypeMeta{Kind: "At", APIVersion: v1alpha1.GroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "team-a", Generation: 1},
			Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(runAt), Command: "echo hi"}}
	}
	job := func(cond batchv1.JobConditionType, created time.Duration) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "backup-29581290", CreationTimestamp: metav1.NewTime(runAt.Add(created))}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(runAt.Add(time.Minute))}}
		}
		return j
	}
	// decided is at after a pass at now with its Job (nil: none).
	decided := func(at *v1alpha1.At, j *batchv1.Job, now time.Time) *v1alpha1.At {
		d := decide(at, j, now, 2*time.Minute)
		if d.create {
			recordCreate(at, &d, j, jobs.Created, slotplan.Event{Kind: "Normal", Reason: "SuccessfulCreate", Note: "Created job " + j.Name}, now)
		}
		at.Status = d.status
		return at
	}
	for _, tc := range []struct {
		name          string
		at            *v1alpha1.At
		argo, kstatus string
		message       string
	}{
		{"created, not yet seen", newAt(), "Progressing", "", "Waiting for the controller"},
		{"waiting for its time", decided(newAt(), nil, runAt.Add(-time.Hour)), "Healthy", "Current", "Waiting for 2026-03-29T01:30:00Z"},
		{"running", decided(newAt(), job("", time.Second), runAt.Add(30*time.Second)), "Progressing", "Current", ""},
		{"its pods are refused", decided(newAt(), job("", time.Second), runAt.Add(5*time.Minute)), "Degraded", "Current", "backup-29581290"},
		{"succeeded", decided(newAt(), job(batchv1.JobComplete, time.Second), runAt.Add(2*time.Minute)), "Healthy", "Current", ""},
		{"its Job failed", decided(newAt(), job(batchv1.JobFailed, time.Second), runAt.Add(2*time.Minute)), "Degraded", "Failed", ""},
		{"seen after its deadline", decided(func() *v1alpha1.At {
			a := newAt()
			s := int64(60)
			a.Spec.StartingDeadlineSeconds = &s
			return a
		}(), nil, runAt.Add(time.Hour)), "Degraded", "Failed", "startingDeadlineSeconds"},
		{"edited after it failed, not yet seen", func() *v1alpha1.At {
			a := decided(newAt(), job(batchv1.JobFailed, time.Second), runAt.Add(2*time.Minute))
			a.Generation++
			return a
		}(), "Progressing", "InProgress", "generation 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gitops.Check(tc.at, gitops.Want{Argo: tc.argo, Message: tc.message, KStatus: tc.kstatus}, t.Errorf)
		})
	}
}
