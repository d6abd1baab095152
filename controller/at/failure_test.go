package at

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/jobs"
)

func TestAtUnderFailure(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx

	t.Run("a Job the API server rejects fails the At once, with the API's message, and an edit retries", func(t *testing.T) {
		at := commandAt(f.env.Namespace(t, "at-rejected"), "rejected", f.clock.Now().Add(-time.Second))
		at.Spec.Command = ""
		at.Spec.JobTemplate = &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1PodTemplate("Not_A_DNS_Label")}}
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		creates := 0
		orig := f.rec.Client
		f.rec.Client = testenv.CountJobCreates(orig, &creates)
		defer func() { f.rec.Client = orig }()
		res := f.reconcile(t, at)
		cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded)
		if at.Status.Phase != v1alpha1.AtFailed || cond == nil || cond.Reason != ReasonJobRejected || !strings.Contains(cond.Message, "Not_A_DNS_Label") {
			t.Fatalf("status = %+v, want Failed/%s naming the bad field", at.Status, ReasonJobRejected)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("requeueAfter = %v, want none: only an edit can help", res.RequeueAfter)
		}
		f.reconcile(t, at)
		f.reconcile(t, at)
		if creates != 1 {
			t.Errorf("%d creates after three passes, want 1 (no retry loop)", creates)
		}
		at.Spec.JobTemplate.Spec.Template = corev1PodTemplate("fixed")
		if err := c.Update(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		if at.Status.Phase != v1alpha1.AtRunning || len(f.jobsOf(t, at)) != 1 {
			t.Errorf("after the fix: phase %q, %d Jobs; want Running and 1", at.Status.Phase, len(f.jobsOf(t, at)))
		}
	})

	t.Run("a pass that read the At before its Job's name was written does not run it again after the Job is gone", func(t *testing.T) {
		at := commandAt(f.env.Namespace(t, "at-stale"), "stale", f.clock.Now().Add(-time.Second))
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		testenv.WaitCacheCurrent(t, f.env, at)
		stale := at.DeepCopy() // as the cache had it before the first status write
		f.reconcile(t, at)     // the create is due at once
		if at.Status.JobName == "" {
			t.Fatalf("no Job after the first pass: %+v", at.Status)
		}
		// The Job finishes and a TTL deletes it.
		for _, j := range f.jobsOf(t, at) {
			if err := c.Delete(ctx, &j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, "the cache sees the Job gone", func() bool {
			var list batchv1.JobList
			_ = c.List(ctx, &list, client.InNamespace(at.Namespace), client.MatchingFields{jobs.ControllerUIDIndex: string(at.UID)})
			return len(list.Items) == 0
		})
		creates := 0
		orig := f.rec.Client
		f.rec.Client = testenv.Intercept(testenv.CountJobCreates(orig, &creates), interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if got, ok := obj.(*v1alpha1.At); ok && key == client.ObjectKeyFromObject(stale) {
					stale.DeepCopyInto(got)
					return nil
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		defer func() { f.rec.Client = orig }()
		res, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(at)})
		if err != nil {
			t.Fatal(err)
		}
		if creates != 0 {
			t.Errorf("the stale pass created the Job again (%d creates)", creates)
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
			t.Errorf("requeueAfter = %v, want a short wait for the cache", res.RequeueAfter)
		}
	})
}

func TestObserveRunTakesTheTimeFromTheClock(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var st v1alpha1.AtStatus
	observeRun(&st, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}, now)
	if st.StartTime == nil || !st.StartTime.Time.Equal(now) {
		t.Errorf("startTime = %v, want the injected now %v", st.StartTime, now)
	}
}

// corev1PodTemplate is a one-container pod template whose container is named name.
func corev1PodTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: name, Image: testImage}}}}
}
