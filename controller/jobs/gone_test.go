package jobs

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func deletedJob(name string, ownerKind string, owner types.UID, done bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		Annotations:     map[string]string{ScheduledTimeAnnotation: "2026-05-01T09:00:00Z", "big": "tenant data"},
		OwnerReferences: []metav1.OwnerReference{{Kind: ownerKind, Name: "o", UID: owner, Controller: ptr.To(true)}}}}
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	if done {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

func TestGoneRemembersFinishedJobsOfItsKind(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	g := NewGone("At", clk)
	g.Observe(deletedJob("done", "At", "a", true))
	g.Observe(toolscache.DeletedFinalStateUnknown{Key: "ns/tomb", Obj: deletedJob("tomb", "At", "a", true)})
	g.Observe(deletedJob("running", "At", "a", false))
	g.Observe(deletedJob("other-kind", "ScheduledJob", "a", true))
	g.Observe(deletedJob("other-owner", "At", "b", true))
	got := map[string]*batchv1.Job{}
	for _, j := range g.Of("a") {
		got[j.Name] = j
	}
	if len(got) != 2 || got["done"] == nil || got["tomb"] == nil {
		t.Fatalf("remembered %v, want done and tomb (finished, controlled by At a)", got)
	}
	j := got["done"]
	if finished, how, _ := Finished(j); !finished || how != batchv1.JobComplete || j.Annotations[ScheduledTimeAnnotation] == "" {
		t.Errorf("kept %+v, want its status and scheduled time", j)
	}
	if len(j.Spec.Template.Spec.Containers) != 0 || j.Annotations["big"] != "" {
		t.Errorf("kept the template or foreign annotations: %+v", j)
	}
	clk.Step(GoneRetention + time.Second)
	if n := len(g.Of("a")); n != 0 {
		t.Errorf("%d Jobs remembered after the retention, want 0", n)
	}
}
