package secretsync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// Tests of issue 34: no state a tenant can hold a copy in (a finalizer, an immutable copy, a
// webhook or a quota that refuses) makes the manager write in a loop. Each counts the write
// requests the reconciler sends over a window after its first attempt, and compares them with
// what the backoff allows (backoffAllows).

// tenantFinalizer is a finalizer a tenant puts on its copy to hold it.
const tenantFinalizer = "tenant.example.com/hold"

// backoffAllows is how many retries a target's backoff (DefaultRetryBase doubling) allows within
// window after the first attempt, and one more for the moment the window starts late.
func backoffAllows(window time.Duration) int64 {
	n, at := int64(0), time.Duration(0)
	for k := 1; ; k++ {
		at += backoffDelay(k, DefaultRetryBase, DefaultRetryCap)
		if at > window+time.Second {
			return n + 1
		}
		n++
	}
}

// writesWithin returns how many more writes n counts after d.
func writesWithin(n *atomic.Int64, d time.Duration) int64 {
	before := n.Load()
	time.Sleep(d)
	return n.Load() - before
}

// releaseFinalizer removes the tenant's finalizer from the Secret, if it is still there.
func releaseFinalizer(t *testing.T, ns, name string) {
	t.Helper()
	if s := getSecret(t, ns, name); s != nil && slices.Contains(s.Finalizers, tenantFinalizer) {
		updateSecret(t, ns, name, func(s *corev1.Secret) {
			s.Finalizers = slices.DeleteFunc(s.Finalizers, func(f string) bool { return f == tenantFinalizer })
		})
	}
}

func TestACopyATenantHoldsIsReportedOnceAndNeverWrittenInALoop(t *testing.T) {
	const window = 6 * time.Second
	for _, tc := range []struct {
		name, c string
		// hold puts the copy in the tenant's hands.
		hold func(t *testing.T, ns string)
		// firstWrites bounds the writes of the first attempt (before the copy is seen held).
		firstWrites int64
	}{
		{"a copy made immutable and held by a finalizer (the replace's delete only marks it)", "holdimm", func(t *testing.T, ns string) {
			updateSecret(t, ns, "creds", func(s *corev1.Secret) {
				s.Immutable = ptr.To(true)
				s.Finalizers = append(s.Finalizers, tenantFinalizer)
			})
		}, 6},
		{"a copy deleted while a finalizer holds it", "holddel", func(t *testing.T, ns string) {
			updateSecret(t, ns, "creds", func(s *corev1.Secret) { s.Finalizers = append(s.Finalizers, tenantFinalizer) })
			if err := k8s.Delete(ctx, makeSecret(ns, "creds")); err != nil {
				t.Fatalf("deleting the copy: %v", err)
			}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			src := namespace(t, c+"-src", nil)
			ns := targetNamespace(t, c+"-a", c)
			source := createSecret(t, makeSecret(src, "creds"))
			createSync(t, makeSync(c, src, c, sourceName("creds")))
			copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
			waitReady(t, c, 1)
			t.Cleanup(func() { releaseFinalizer(t, ns, "creds") })

			copyWrites, statusWrites := countWrites(t, ns), countWrites(t, "SecretSync/"+c)
			tc.hold(t, ns)
			ss := waitReason(t, c, copyplan.ReasonHeld)
			if msg := readyOf(ss).Message; !strings.Contains(msg, ns+"/creds") {
				t.Errorf("Ready message %q does not name the held copy %s/creds", msg, ns)
			}
			if st := ss.Status; st.Failed != 1 || len(st.Failures) != 1 || st.Failures[0].Reason != copyplan.ReasonHeld || !strings.Contains(st.Failures[0].Message, "finalizer") {
				t.Errorf("status = %+v, want one failure Held naming the finalizer", st)
			}
			if got := copyWrites.Load(); got > tc.firstWrites {
				t.Errorf("%d writes to the held copy before it was reported, want at most %d (dry run, delete, create)", got, tc.firstWrites)
			}

			t.Logf("held: no write to the copy and no status write within %v", window)
			statusBefore := statusWrites.Load()
			if got := writesWithin(copyWrites, window); got != 0 {
				t.Errorf("%d writes to the held copy within %v, want 0", got, window)
			}
			if got := statusWrites.Load() - statusBefore; got != 0 {
				t.Errorf("%d status writes within %v of a held copy, want 0", got, window)
			}
			if got := len(warningEvents(t, c, copyplan.ReasonHeld)); got != 1 {
				t.Errorf("%d Warning Events %s, want 1", got, copyplan.ReasonHeld)
			}

			t.Log("the tenant lets go: the copy is created again")
			releaseFinalizer(t, ns, "creds")
			copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
			waitReady(t, c, 1)
		})
	}
}

// webhookDenied is a validating webhook's refusal, as the API server returns it.
func webhookDenied(name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, name,
		errors.New(`admission webhook "deny.tenant.example.com" denied the request: no copies here`))
}

// exhaustQuota gives namespace ns a ResourceQuota of secrets that is used up: the API server's
// quota admission refuses every new Secret there (403 "exceeded quota"). envtest runs no quota
// controller, so the status is written here.
func exhaustQuota(t *testing.T, ns string) {
	t.Helper()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secrets"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceSecrets: resource.MustParse("1")}},
	}
	if err := k8s.Create(ctx, q); err != nil {
		t.Fatalf("creating the quota: %v", err)
	}
	q.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{corev1.ResourceSecrets: resource.MustParse("1")},
		Used: corev1.ResourceList{corev1.ResourceSecrets: resource.MustParse("1")},
	}
	if err := k8s.Status().Update(ctx, q); err != nil {
		t.Fatalf("using up the quota: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, q) })
}

func TestACopyRefusedByAWebhookOrAQuotaIsRetriedWithBackoff(t *testing.T) {
	const window = 7 * time.Second
	for _, tc := range []struct {
		name, c string
		refuse  func(t *testing.T, ns string)
		says    string
	}{
		{"a webhook that refuses the copy", "refwebhook", func(t *testing.T, ns string) { injectFault(t, ns, webhookDenied("creds")) }, "denied the request"},
		{"a quota that is used up", "refquota", exhaustQuota, "exceeded quota"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			src := namespace(t, c+"-src", nil)
			ns := targetNamespace(t, c+"-a", c)
			tc.refuse(t, ns)
			writes := countWrites(t, ns)
			createSecret(t, makeSecret(src, "creds"))
			createSync(t, makeSync(c, src, c, sourceName("creds")))

			ss := waitReason(t, c, copyplan.ReasonWriteFailed)
			if msg := readyOf(ss).Message; !strings.Contains(msg, ns+"/creds") {
				t.Errorf("Ready message %q does not name the refused copy %s/creds", msg, ns)
			}
			if st := ss.Status; len(st.Failures) != 1 || !strings.Contains(st.Failures[0].Message, tc.says) {
				t.Errorf("status.failures = %+v, want the API server's answer (%q)", st.Failures, tc.says)
			}
			if got, allowed := writesWithin(writes, window), backoffAllows(window); got > allowed {
				t.Errorf("%d create attempts within %v after the first, want at most %d (backoff from %v)", got, window, allowed, DefaultRetryBase)
			} else {
				t.Logf("%d create attempts within %v after the first (backoff allows %d)", got, window, allowed)
			}
			if got := len(warningEvents(t, c, copyplan.ReasonWriteFailed)); got != 1 {
				t.Errorf("%d Warning Events %s, want 1", got, copyplan.ReasonWriteFailed)
			}
		})
	}
}

// TestAnUnprovenObjectThatOnlyAReplaceCouldAdoptIsAConflict: a tenant's own Secret at a copy's
// place, labelled with the SecretSync, immutable, with the source's data and type, is not
// deleted and created again (which would lose its labels, annotations and uid): Conflict.
func TestAnUnprovenObjectThatOnlyAReplaceCouldAdoptIsAConflict(t *testing.T) {
	const c = "unprovenimm"
	src := namespace(t, c+"-src", nil)
	ns := targetNamespace(t, c+"-a", c)
	createSecret(t, makeSecret(src, "creds"))
	theirs := createSecret(t, makeSecret(ns, "creds", immutable(), withLabels(map[string]string{
		"ops.platform-operators.io/secretsync": c, "team": "a",
	})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	ss := waitReason(t, c, copyplan.ReasonConflict)
	if st := ss.Status; len(st.Failures) != 1 || !strings.Contains(st.Failures[0].Message, "re-creating") {
		t.Errorf("status.failures = %+v, want a conflict saying only a re-create could adopt it", st.Failures)
	}
	quiet(t)
	got := getSecret(t, ns, "creds")
	if got == nil || got.UID != theirs.UID || got.ResourceVersion != theirs.ResourceVersion || got.Labels["team"] != "a" {
		t.Fatalf("the tenant's Secret was replaced or written: %+v, was uid %s resourceVersion %s", got, theirs.UID, theirs.ResourceVersion)
	}
	// Let the SecretSync's clean-up through: the tenant removes our label.
	t.Cleanup(func() {
		updateSecret(t, ns, "creds", func(s *corev1.Secret) { delete(s.Labels, "ops.platform-operators.io/secretsync") })
	})
}

// invalidByPolicy is a ValidatingAdmissionPolicy's refusal (422).
func invalidByPolicy(name string) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, name,
		field.ErrorList{field.Forbidden(field.NewPath("metadata"), "ValidatingAdmissionPolicy 'tenant-no-copies' denied request")})
}

func TestAReplaceThatCannotCompleteNeverLeavesTheTenantWithoutACopyForLong(t *testing.T) {
	t.Run("a replace whose create admission refuses leaves the old copy in place", func(t *testing.T) {
		const c = "replref"
		src := namespace(t, c+"-src", nil)
		ns := targetNamespace(t, c+"-a", c)
		source := createSecret(t, makeSecret(src, "creds"))
		createSync(t, makeSync(c, src, c, sourceName("creds")))
		copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
		waitReady(t, c, 1)

		injectFault(t, ns, invalidByPolicy("creds"))
		// Only a replace brings an immutable copy back to the mutable source.
		old := updateSecret(t, ns, "creds", func(s *corev1.Secret) { s.Immutable = ptr.To(true) })
		ss := waitReason(t, c, copyplan.ReasonWriteFailed)
		if st := ss.Status; len(st.Failures) != 1 || st.Failures[0].Reason != copyplan.ReasonInvalid {
			t.Errorf("status.failures = %+v, want the refusal (Invalid)", st.Failures)
		}
		if got := getSecret(t, ns, "creds"); got == nil || got.UID != old.UID {
			t.Fatalf("the copy was deleted although its replacement was refused: now %v", got)
		}
		faults.Delete(ns)
		// Once admission lets it in, the next change or recheck replaces it.
		updateSecret(t, src, "creds", func(s *corev1.Secret) { s.Data["token"] = []byte("new") })
		copyIn(t, ns, getSecret(t, src, "creds"), c, v1alpha1.DeletionPolicyDelete)
	})

	t.Run("a replace whose create fails after the delete is retried promptly, not after the rejection recheck", func(t *testing.T) {
		const c = "replretry"
		src := namespace(t, c+"-src", nil)
		ns := targetNamespace(t, c+"-a", c)
		source := createSecret(t, makeSecret(src, "creds"))
		createSync(t, makeSync(c, src, c, sourceName("creds")))
		copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
		waitReady(t, c, 1)

		// The dry run passes and the create is refused: a policy installed in between.
		f := injectCommittedFault(t, ns, invalidByPolicy("creds"))
		updateSecret(t, ns, "creds", func(s *corev1.Secret) { s.Immutable = ptr.To(true) })
		eventually(t, "the create refused after the delete", func() error {
			if f.hits.Load() == 0 {
				return errors.New("not yet")
			}
			return nil
		})
		faults.Delete(ns)
		lifted := time.Now()
		copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
		// The backoff's first waits (1 s, 2 s) and a pass; the rejection recheck is rejectedRecheck.
		if d := time.Since(lifted); d > rejectedRecheck/2 {
			t.Errorf("the copy came back %v after the refusal ended, want well within the rejection recheck (%v)", d, rejectedRecheck)
		}
	})
}

// A CopyRequest's copy a tenant holds is reported once and not written in a loop either.
func TestACopyRequestsCopyATenantHoldsIsNotWrittenInALoop(t *testing.T) {
	const c = "reqhold"
	src := namespace(t, c+"-src", nil)
	ns := namespace(t, c+"-a", nil)
	source := createSecret(t, makeSecret(src, "creds"))
	offer(t, source, ns)
	createRequest(t, k8s, makeRequest(ns, "creds", v1alpha1.CopyRequestSource{Namespace: src, Name: "creds"}, ""))
	requestCopyIn(t, ns, "creds", source, "creds")
	waitRequest(t, ns, "creds", metav1.ConditionTrue, copyplan.ReasonCopied)
	t.Cleanup(func() { releaseFinalizer(t, ns, "creds") })

	writes := countWrites(t, ns)
	updateSecret(t, ns, "creds", func(s *corev1.Secret) {
		s.Immutable = ptr.To(true)
		s.Finalizers = append(s.Finalizers, tenantFinalizer)
	})
	waitRequest(t, ns, "creds", metav1.ConditionFalse, copyplan.ReasonHeld)
	first := writes.Load()
	const window = 6 * time.Second
	if got := writesWithin(writes, window); got != 0 {
		t.Errorf("%d writes within %v after the copy was reported held (%d before), want 0", got, window, first)
	}
	if got := len(requestEvents(t, ns, "creds", copyplan.ReasonHeld)); got != 1 {
		t.Errorf("%d Warning Events %s, want 1", got, copyplan.ReasonHeld)
	}
	releaseFinalizer(t, ns, "creds")
	waitRequest(t, ns, "creds", metav1.ConditionTrue, copyplan.ReasonCopied)
}

// TestAReplaceARealAdmissionPolicyRefusesLeavesTheOldCopy is the case above against the API
// server's own admission: a ValidatingAdmissionPolicy in the tenant's namespace refuses every new
// Secret. The replace's dry run meets the policy (admission runs before the storage finds the name
// taken), so nothing is deleted.
func TestAReplaceARealAdmissionPolicyRefusesLeavesTheOldCopy(t *testing.T) {
	const c = "replvap"
	src := namespace(t, c+"-src", nil)
	ns := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, 1)

	vap, b := chartPolicy(c+"-no-new-secrets", func(v *admissionregistrationv1.ValidatingAdmissionPolicy, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		v.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		v.Spec.Validations = []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("request.namespace != %q", ns), Message: "no new Secrets in this namespace"}}
	})
	for _, o := range []client.Object{vap, b} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, o) })
	}
	eventually(t, "the policy refuses a new Secret in "+ns, func() error {
		err := k8s.Create(ctx, makeSecret(ns, "probe"), client.DryRunAll)
		if err == nil {
			return errors.New("not yet")
		}
		if !strings.Contains(err.Error(), "no new Secrets") {
			return err
		}
		return nil
	})

	old := updateSecret(t, ns, "creds", func(s *corev1.Secret) { s.Immutable = ptr.To(true) })
	ss := waitReason(t, c, copyplan.ReasonWriteFailed)
	if st := ss.Status; len(st.Failures) != 1 || !strings.Contains(st.Failures[0].Message, "no new Secrets") {
		t.Errorf("status.failures = %+v, want the policy's refusal", st.Failures)
	}
	quiet(t)
	if got := getSecret(t, ns, "creds"); got == nil || got.UID != old.UID {
		t.Fatalf("the copy was deleted although the policy refuses its replacement: now %v", got)
	}
}

// A CopyRequest's copy refused by a quota is retried with backoff too.
func TestACopyRequestsCopyRefusedByAQuotaIsRetriedWithBackoff(t *testing.T) {
	const c = "reqquota"
	src := namespace(t, c+"-src", nil)
	ns := namespace(t, c+"-a", nil)
	exhaustQuota(t, ns)
	writes := countWrites(t, ns)
	source := createSecret(t, makeSecret(src, "creds"))
	offer(t, source, ns)
	createRequest(t, k8s, makeRequest(ns, "creds", v1alpha1.CopyRequestSource{Namespace: src, Name: "creds"}, ""))
	cr := waitRequest(t, ns, "creds", metav1.ConditionFalse, copyplan.ReasonWriteFailed)
	if msg := readyOfRequest(cr).Message; !strings.Contains(msg, "exceeded quota") {
		t.Errorf("Ready message %q, want the quota's refusal", msg)
	}
	const window = 7 * time.Second
	if got, allowed := writesWithin(writes, window), backoffAllows(window); got > allowed {
		t.Errorf("%d create attempts within %v after the first, want at most %d", got, window, allowed)
	} else {
		t.Logf("%d create attempts within %v after the first (backoff allows %d)", got, window, allowed)
	}
	if got := len(requestEvents(t, ns, "creds", copyplan.ReasonWriteFailed)); got != 1 {
		t.Errorf("%d Warning Events %s, want 1", got, copyplan.ReasonWriteFailed)
	}
	// Deleted, the request leaves no memory of its refused copy behind: a tenant's churn of
	// refused requests does not grow the manager. (A retry in flight holds the entry out of the
	// memory while it writes: writeOnce takes it out and puts the new failure back.)
	eventually(t, "the refused copy remembered before the request is deleted", func() error {
		if rememberedIn(&requests.targets, ns) == 0 {
			return fmt.Errorf("no memory of the refused copy in %s", ns)
		}
		return nil
	})
	if err := k8s.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	forgotten := func() error {
		if n := rememberedIn(&requests.targets, ns); n > 0 {
			return fmt.Errorf("%d targets in %s still remembered", n, ns)
		}
		return nil
	}
	eventually(t, "the deleted request's targets forgotten", forgotten)
	// And for good, not only between a retry's taking the entry out and putting it back.
	time.Sleep(2 * time.Second)
	if err := forgotten(); err != nil {
		t.Error(err)
	}
}

// rememberedIn counts the targets of namespace ns that t remembers.
func rememberedIn(t *targets, ns string) int {
	n := 0
	for _, tk := range rememberedTargets(t) {
		if tk.key.Namespace == ns {
			n++
		}
	}
	return n
}

// readyOfRequest is the CopyRequest's Ready condition.
func readyOfRequest(cr *v1alpha1.CopyRequest) metav1.Condition {
	for _, c := range cr.Status.Conditions {
		if c.Type == copyplan.ConditionReady {
			return c
		}
	}
	return metav1.Condition{}
}
