package e2e

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

const ttlNamespace = "e2e-ttl"

// ttlZeroTemplate is a Job template that succeeds at once and that kube-controller-manager's
// TTL-after-finished controller deletes as soon as it finishes (ttlSecondsAfterFinished: 0).
func ttlZeroTemplate() batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		TTLSecondsAfterFinished: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: chartJobImage, Command: []string{"/bin/sh", "-c", "true"}}},
		}},
	}}
}

// TestTTLDeletedJobsKeepTheirSuccess is issue 29's TTL case on real nodes: a Job with
// ttlSecondsAfterFinished: 0 runs on a real kubelet, completes, and the real TTL-after-finished
// controller deletes it at once, usually before the manager's worker has looked at its owner
// again. The owner must record what the Job did (Succeeded), not that it went missing (At
// Failed/JobDeleted, run history Deleted). The envtest tests (controller/at, "a Job that
// succeeded and was deleted by its TTL"; controller/scheduledjob TestAJobDeletedByItsTTL…)
// stage the deletion themselves; this one lets the cluster's own controllers race the manager.
// Both runs start at once (an At due now, a ScheduledJob's run-now token): no minute slot to
// wait for.
func TestTTLDeletedJobsKeepTheirSuccess(t *testing.T) {
	tpl := ttlZeroTemplate()
	at := &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ttlNamespace, Name: "ttl-zero"},
		Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now()), JobTemplate: &tpl},
	}
	sj := &v1alpha1.ScheduledJob{
		// A schedule that does not fire during the test: only the run-now token runs.
		ObjectMeta: metav1.ObjectMeta{Namespace: ttlNamespace, Name: "ttl-zero", Annotations: map[string]string{keys.AnnotationRunNow: "ttl"}},
		Spec:       v1alpha1.ScheduledJobSpec{Schedule: "0 0 1 1 *", JobTemplate: ttlZeroTemplate()},
	}

	f := features.New("a Job deleted by its TTL right after it succeeded is recorded as a success")
	f = withNamespace(f, ttlNamespace)
	f = f.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		c := opsClient(t, cfg)
		if err := c.Create(ctx, at); err != nil {
			t.Fatalf("creating At %s: %v", at.Name, err)
		}
		if err := c.Create(ctx, sj); err != nil {
			t.Fatalf("creating ScheduledJob %s: %v", sj.Name, err)
		}
		return ctx
	})
	// jobGone waits until the TTL controller deleted the named Job: the case is only the one of
	// the issue if the Job really went.
	jobGone := func(ctx context.Context, t *testing.T, c client.Client, name string) {
		t.Helper()
		waitFor(ctx, t, waitTimeout, "the TTL controller never deleted Job "+name, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Namespace: ttlNamespace, Name: name}, &batchv1.Job{})
			return apierrors.IsNotFound(err), nil
		})
	}
	f = f.Assess("the At ends Succeeded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		got := waitAtPhase(ctx, t, c, at, v1alpha1.AtSucceeded, v1alpha1.AtFailed)
		if got.Status.Phase != v1alpha1.AtSucceeded || got.Status.JobName == "" || got.Status.CompletionTime == nil {
			t.Fatalf("At %s: phase %s, job %q, completionTime %v (%s); want Succeeded with its Job and completion time",
				at.Name, got.Status.Phase, got.Status.JobName, got.Status.CompletionTime, got.Status.Message)
		}
		jobGone(ctx, t, c, got.Status.JobName)
		// Still Succeeded after the deletion has certainly been seen (a later pass must not
		// turn it into JobDeleted).
		if err := c.Get(ctx, client.ObjectKeyFromObject(at), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != v1alpha1.AtSucceeded {
			t.Errorf("At %s: phase %s (%s) after its Job was deleted, want Succeeded", at.Name, got.Status.Phase, got.Status.Message)
		}
		return ctx
	})
	f = f.Assess("the ScheduledJob's run history says Succeeded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		got := &v1alpha1.ScheduledJob{}
		var run v1alpha1.ScheduledJobRun
		waitFor(ctx, t, waitTimeout, "the run-now run never finished in the run history", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil || len(got.Status.Runs) == 0 {
				return false, nil
			}
			run = got.Status.Runs[0]
			return got.Status.LastRunNowToken == "ttl" && run.Result != v1alpha1.RunRunning, nil
		})
		if run.JobName == "" {
			t.Fatalf("runs %+v: the newest has no Job", got.Status.Runs)
		}
		jobGone(ctx, t, c, run.JobName)
		if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Runs) != 1 || got.Status.Runs[0].JobName != run.JobName || got.Status.Runs[0].Result != v1alpha1.RunSucceeded ||
			got.Status.Runs[0].CompletionTime == nil || len(got.Status.Active) != 0 {
			t.Fatalf("runs %+v, active %v; want one run %s Succeeded with its completion time and nothing active", got.Status.Runs, got.Status.Active, run.JobName)
		}
		if got.Status.LastSuccessfulTime == nil {
			t.Errorf("lastSuccessfulTime unset after the run succeeded")
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}
