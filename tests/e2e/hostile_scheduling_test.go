package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/at"
)

const (
	// refusedPodsNamespace enforces Pod Security restricted; the test's At runs as root there.
	refusedPodsNamespace = "e2e-pods-refused"
	// suitePodsStuckAfter is the suite's jobs.podsStuckAfter (baseValues): short, so a refused
	// Job is reported within a wait; no other test has a Job without a pod that long.
	suitePodsStuckAfter = 20 * time.Second
	psaEnforce          = "pod-security.kubernetes.io/enforce"
)

// TestAtWhosePodsAreRefused (issue 28): a tenant's At whose jobTemplate runs as root, in a
// namespace enforcing Pod Security restricted. The Job controller's pod creates are all refused
// (FailedCreate Events on the Job); the At used to stay Running with no word of why. Both
// providers: kwok's control plane runs the Job controller and PodSecurity admission too.
func TestAtWhosePodsAreRefused(t *testing.T) {
	if namespacedMode() {
		t.Skip("E2E_RBAC_SCOPE=namespaced: the manager works only in the suite's listed namespaces")
	}
	asRoot := &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: refusedPodsNamespace, Name: "as-root"},
		Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now()), JobTemplate: &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)},
				Containers:      []corev1.Container{{Name: "main", Image: chartJobImage, Command: []string{"id"}}}}},
		}}},
	}
	f := features.New("an At whose pods admission refuses says so").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: refusedPodsNamespace, Labels: map[string]string{psaEnforce: "restricted"}}}
			if err := cfg.Client().Resources().Create(ctx, ns); err != nil {
				t.Fatalf("creating namespace %s: %v", refusedPodsNamespace, err)
			}
			// On kind the pod, once admitted, pulls its image with the spread pull secret.
			waitPullSecret(ctx, t, cfg, refusedPodsNamespace)
			if err := opsClient(t, cfg).Create(ctx, asRoot); err != nil {
				t.Fatalf("creating At %s: %v", asRoot.Name, err)
			}
			return ctx
		}).
		Assess("the At stays Running and says PodsNotCreated, naming the Job, with one Warning", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := opsClient(t, cfg)
			got := &v1alpha1.At{}
			var cond *metav1.Condition
			waitFor(ctx, t, suitePodsStuckAfter+waitTimeout, "the At never said PodsNotCreated", func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(asRoot), got); err != nil {
					return false, nil
				}
				cond = meta.FindStatusCondition(got.Status.Conditions, at.ConditionSucceeded)
				return cond != nil && cond.Reason == at.ReasonPodsNotCreated, nil
			})
			if got.Status.Phase != v1alpha1.AtRunning || !strings.Contains(cond.Message, "kubectl describe job "+got.Status.JobName) {
				t.Errorf("phase %s, message %q; want Running, naming kubectl describe job %s", got.Status.Phase, cond.Message, got.Status.JobName)
			}
			// The scenario is the real one: the Job controller's creates were refused by Pod Security.
			jobEvents, err := eventsFor(ctx, c, refusedPodsNamespace, got.Status.JobName)
			if err != nil {
				t.Fatal(err)
			}
			if fc := withReason(jobEvents, "FailedCreate"); len(fc) == 0 || !strings.Contains(fc[0].Message, "violates PodSecurity") {
				t.Errorf("the Job's FailedCreate Events %v, want a Pod Security refusal", fc)
			}
			// One Warning, not one per pass: give later passes (the Job controller's retries
			// change nothing we read, but a resync would) a moment.
			time.Sleep(2 * time.Second)
			atEvents, err := eventsFor(ctx, c, refusedPodsNamespace, asRoot.Name)
			if err != nil {
				t.Fatal(err)
			}
			if w := withReason(atEvents, at.ReasonPodsNotCreated); len(w) != 1 || w[0].Type != corev1.EventTypeWarning || (w[0].Count > 1 || (w[0].Series != nil && w[0].Series.Count > 1)) {
				t.Errorf("PodsNotCreated Events on the At: %+v, want one Warning", w)
			}
			return ctx
		}).
		Assess("the cause removed (the namespace relabelled), the Job runs and the At ends as it does", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := opsClient(t, cfg)
			ns := &corev1.Namespace{}
			if err := c.Get(ctx, client.ObjectKey{Name: refusedPodsNamespace}, ns); err != nil {
				t.Fatal(err)
			}
			ns.Labels[psaEnforce] = "privileged"
			if err := c.Update(ctx, ns); err != nil {
				t.Fatal(err)
			}
			// The Job controller retries the create with its API backoff (at most a minute).
			got := &v1alpha1.At{}
			waitFor(ctx, t, 2*waitTimeout, "the At never left PodsNotCreated", func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(asRoot), got); err != nil {
					return false, nil
				}
				cond := meta.FindStatusCondition(got.Status.Conditions, at.ConditionSucceeded)
				return cond != nil && cond.Reason != at.ReasonPodsNotCreated, nil
			})
			if got.Status.Phase == v1alpha1.AtFailed && !strings.Contains(got.Status.Message, "failed") {
				t.Errorf("status = %+v, want Running, Succeeded, or the Job's own failure", got.Status)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := cfg.Client().Resources().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: refusedPodsNamespace}}); err != nil {
				t.Logf("deleting namespace %s: %v", refusedPodsNamespace, err)
			}
			return ctx
		})
	testenv.Test(t, f.Feature())
}
