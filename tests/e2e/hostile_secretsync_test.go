package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// A hostile tenant against SecretSync and CopyRequest, with only what a namespace admin may do:
// create and label its own Secrets and ConfigMaps, and CopyRequests. Each test asserts the attack
// is refused or harmless, and that no manager restarted (docs/security.md).

// managerHealthy fails the test when a manager restarted (kind: a container restart; kwok: the
// local process no longer answers /readyz).
func managerHealthy(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	if isKind() {
		pods, err := managerPods(ctx, clientset(t, cfg))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			for _, st := range p.Status.ContainerStatuses {
				if st.RestartCount != 0 {
					t.Errorf("manager pod %s restarted %d time(s); last state %+v", p.Name, st.RestartCount, st.LastTerminationState)
				}
			}
		}
		return
	}
	if ok, err := bed.ManagerReady(ctx, cfg); !ok || err != nil {
		t.Errorf("the manager does not answer /readyz: %v", err)
	}
}

// managerRSS is the manager's resident memory, from its own metrics (process collector); on
// kind, the highest of the replicas the provider reads.
func managerRSS(ctx context.Context, t *testing.T, cfg *envconf.Config) float64 {
	t.Helper()
	text, err := bed.ManagerMetrics(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := metricValue(text, "process_resident_memory_bytes")
	if !ok {
		t.Fatal("no process_resident_memory_bytes in the manager's metrics")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// claimSync is a SecretSync of one Secret from src into the namespaces labelled label=yes.
func claimSync(ctx context.Context, t *testing.T, c client.Client, name, src, label string) *v1alpha1.SecretSync {
	t.Helper()
	ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SecretSyncSpec{
		Source: v1alpha1.SecretSyncSource{Namespace: src, Name: "creds"},
		Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}},
	}}
	if err := c.Create(ctx, ss); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ss) })
	return ss
}

// ownershipPolicy is the chart's ValidatingAdmissionPolicy (and its binding) that lets only the
// manager set our keys: the API server's line of defence, on by default.
const ownershipPolicy = releaseName + "-ownership-keys"

// pastTheOwnershipPolicy makes an attack that needs one of our keys on a tenant's object: first
// it asserts that the API server refuses it (the chart's policy), then it unbinds the policy
// (as on a cluster older than 1.30 or with admissionPolicies.enabled=false) and makes it again,
// so that the test goes on against the manager's own defence. The binding is restored when the
// test ends.
func pastTheOwnershipPolicy(ctx context.Context, t *testing.T, c client.Client, attack func(context.Context) error) {
	t.Helper()
	// A binding restored by an earlier test takes a moment to reach the API server's policies.
	eventually(ctx, t, "the ownership policy in force", func(ctx context.Context) error { return ownershipPolicyInForce(ctx, c) })
	err := attack(ctx)
	if !refusedByOwnershipPolicy(err) {
		t.Fatalf("want the API server to refuse the attack (policy %s), got %v", ownershipPolicy, err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := c.Get(ctx, types.NamespacedName{Name: ownershipPolicy}, binding); err != nil {
		t.Fatal(err)
	}
	saved := binding.DeepCopy()
	if err := c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		restored := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{
			Name: saved.Name, Labels: saved.Labels, Annotations: saved.Annotations}, Spec: saved.Spec}
		if err := c.Create(ctx, restored); err != nil {
			t.Errorf("restoring the binding %s: %v", ownershipPolicy, err)
			return
		}
		eventually(ctx, t, "the ownership policy in force again", func(ctx context.Context) error { return ownershipPolicyInForce(ctx, c) })
	})
	// The API server drops the binding from its policy set a moment after the delete.
	eventually(ctx, t, "the attack, with the policy unbound", attack)
}

// refusedByOwnershipPolicy reports whether err is the chart's ownership policy refusing a request.
func refusedByOwnershipPolicy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+ownershipPolicy+"'")
}

// ownershipPolicyInForce probes, with a dry run, that the API server refuses our label on an
// object from anyone but the manager.
func ownershipPolicyInForce(ctx context.Context, c client.Client) error {
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "e2e-ownership-probe",
		Labels: map[string]string{keys.LabelSecretSync: "probe"}}}
	switch err := c.Create(ctx, probe, client.DryRunAll); {
	case err == nil:
		return fmt.Errorf("a labelled ConfigMap is admitted: %s not in force", ownershipPolicy)
	case !refusedByOwnershipPolicy(err):
		return fmt.Errorf("a labelled ConfigMap is not refused by %s: %w", ownershipPolicy, err)
	}
	return nil
}

func TestHostileSecretSync(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")

	// Many large ConfigMaps and Secrets in a tenant's namespace, carrying every label key the
	// manager selects on (offer, SecretSync, CopyRequest), with 200 KiB of annotations each:
	// they once took both replicas down (OOMKilled). The caches now keep a few KiB of each.
	memory := features.New("a tenant's large objects carrying our label keys").
		Assess("cost the manager a bounded few bytes each, and none is deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const ns, n = "e2e-hostile-memory", 96
			createNamespace(ctx, t, c, ns, nil)
			before, liveBefore := managerMemory(ctx, t, cfg)
			notes := map[string]string{}
			for i := range 50 {
				notes[fmt.Sprintf("tenant.example/note-%02d", i)] = strings.Repeat("a", 4<<10)
			}
			ourKeys := map[string]string{keys.LabelOffer: "x", keys.LabelSecretSync: "not-a-secretsync", keys.LabelCopyRequest: "not-a-request"}
			var created []client.Object
			for i := range n {
				meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%02d", i), Labels: ourKeys, Annotations: notes}
				var o client.Object
				if i%2 == 0 {
					o = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"blob": strings.Repeat("d", 800<<10)}}
				} else {
					o = &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"blob": make([]byte, 800<<10)}}
				}
				if i == 0 {
					pastTheOwnershipPolicy(ctx, t, c, func(ctx context.Context) error { return c.Create(ctx, o) })
				} else if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				created = append(created, o)
			}
			// The manager has seen them all once a SecretSync reconcile that lists copies ran: a
			// CopyRequest naming one of them is answered (not offered: a copy is never an offer).
			cr := &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
				Spec: v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: ns, Name: "big-01"}, Name: "probe-copy"}}
			if err := c.Create(ctx, cr); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the CopyRequest naming a hostile object is refused", requestReason(c, ns, "probe", "NotOffered"))
			after, liveAfter := managerMemory(ctx, t, cfg)
			raw := float64(n) * (800 << 10)
			t.Logf("manager RSS %.0f MiB -> %.0f MiB (live heap %.1f -> %.1f MiB) after %d objects of 1 MiB (%.0f MiB)",
				before/(1<<20), after/(1<<20), liveBefore/(1<<20), liveAfter/(1<<20), n, raw/(1<<20))
			// Before, three caches held the objects whole or with their annotations: more than
			// twice their size. The working set also holds the garbage of decoding them, which the
			// Go runtime lets grow to the size of the live heap before it collects, and pages it has
			// not yet returned (measured on kind: +44 MiB for 75 MiB once, under half of it in other
			// runs), so it is allowed their size; the live heap, which a cache that keeps them grows
			// by all of it, a quarter.
			if after-before > raw {
				t.Errorf("the manager's working set grew by %.0f MiB for %.0f MiB of a tenant's objects", (after-before)/(1<<20), raw/(1<<20))
			}
			if liveBefore >= 0 && liveAfter >= 0 && liveAfter-liveBefore > raw/4 {
				t.Errorf("the manager's live heap grew by %.1f MiB for %.0f MiB of a tenant's objects: a cache keeps them", (liveAfter-liveBefore)/(1<<20), raw/(1<<20))
			}
			for _, o := range created {
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
					t.Errorf("the tenant's %s: %v", o.GetName(), err)
				}
			}
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()

	// A tenant's own Secret labelled with an existing SecretSync's name (a copied manifest, a
	// restore): once deleted within seconds; now reported, never deleted or rewritten. The
	// SecretSync's Events are in the manager's namespace, not in default.
	claimed := features.New("a tenant's own Secret labelled with an existing SecretSync").
		Assess("is reported as a conflict and never deleted or rewritten", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const src, tenant, label = "e2e-claim-src", "e2e-claim-tenant", "e2e.platform-operators.io/claim"
			createNamespace(ctx, t, c, src, nil)
			createNamespace(ctx, t, c, "e2e-claim-target", map[string]string{label: "yes"})
			createNamespace(ctx, t, c, tenant, nil)
			if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "creds"}, Data: map[string][]byte{"token": []byte("platform")}}); err != nil {
				t.Fatal(err)
			}
			ss := claimSync(ctx, t, c, "e2e-claim", src, label)
			mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "mine", Labels: map[string]string{keys.LabelSecretSync: ss.Name}},
				Data: map[string][]byte{"mine": []byte("keep")}}
			pastTheOwnershipPolicy(ctx, t, c, func(ctx context.Context) error { return c.Create(ctx, mine) })
			eventually(ctx, t, "the SecretSync reports the labelled Secret", func(ctx context.Context) error {
				got := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, types.NamespacedName{Name: ss.Name}, got); err != nil {
					return err
				}
				for _, f := range got.Status.Failures {
					if f.Namespace == tenant && f.Name == "mine" && strings.Contains(f.Message, "ownership proof") {
						return nil
					}
				}
				return fmt.Errorf("status %+v", got.Status)
			})
			eventually(ctx, t, "a Conflict Event in the manager's namespace", func(ctx context.Context) error {
				list := &eventsv1.EventList{}
				if err := c.List(ctx, list); err != nil {
					return err
				}
				found := false
				for _, e := range list.Items {
					if e.Regarding.Kind != "SecretSync" || e.Regarding.Name != ss.Name {
						continue
					}
					if e.Namespace != releaseNamespace {
						return fmt.Errorf("an Event about the SecretSync in namespace %q: %s", e.Namespace, e.Note)
					}
					found = found || e.Reason == "Conflict"
				}
				if !found {
					return errors.New("no Conflict Event yet")
				}
				return nil
			})
			got := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(mine), got); err != nil {
				t.Fatalf("the tenant's Secret: %v", err)
			}
			if got.ResourceVersion != mine.ResourceVersion || string(got.Data["mine"]) != "keep" {
				t.Errorf("the tenant's Secret was rewritten: resourceVersion %s -> %s, data %q", mine.ResourceVersion, got.ResourceVersion, got.Data)
			}
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()

	// A tenant that received a copy offers it on to every namespace: a namespace the SecretSync
	// does not target asks for it, and is refused; the repair takes the offer off the copy.
	reoffer := features.New("a tenant offering on a copy it received").
		Assess("cannot pass it past the SecretSync's targets, and the offer is taken off", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const src, target, excluded, label = "e2e-reoffer-src", "e2e-reoffer-target", "e2e-reoffer-excluded", "e2e.platform-operators.io/reoffer"
			createNamespace(ctx, t, c, src, nil)
			createNamespace(ctx, t, c, target, map[string]string{label: "yes"})
			createNamespace(ctx, t, c, excluded, nil)
			if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "creds"}, Data: map[string][]byte{"token": []byte("platform")}}); err != nil {
				t.Fatal(err)
			}
			claimSync(ctx, t, c, "e2e-reoffer", src, label)
			cp := &corev1.Secret{}
			eventually(ctx, t, "the copy", func(ctx context.Context) error {
				return c.Get(ctx, types.NamespacedName{Namespace: target, Name: "creds"}, cp)
			})
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true","team":"a"},"annotations":{%q:"*"}}}`, keys.LabelOffer, keys.AnnotationOfferNamespaces)
			pastTheOwnershipPolicy(ctx, t, c, func(ctx context.Context) error {
				return c.Patch(ctx, cp, client.RawPatch(types.MergePatchType, []byte(patch)))
			})
			cr := &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Namespace: excluded, Name: "steal"},
				Spec: v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: target, Name: "creds"}}}
			if err := c.Create(ctx, cr); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the request from the excluded namespace is refused", requestReason(c, excluded, "steal", "NotOffered"))
			eventually(ctx, t, "the offer is taken off the copy, the tenant's label stays", func(ctx context.Context) error {
				got := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: target, Name: "creds"}, got); err != nil {
					return err
				}
				if _, ok := got.Labels[keys.LabelOffer]; ok {
					return errors.New("the offer label is still there")
				}
				if _, ok := got.Annotations[keys.AnnotationOfferNamespaces]; ok {
					return errors.New("the offer's namespaces are still there")
				}
				if got.Labels["team"] != "a" {
					return fmt.Errorf("the tenant's label is gone: %v", got.Labels)
				}
				return nil
			})
			if err := c.Get(ctx, types.NamespacedName{Namespace: excluded, Name: "creds"}, &corev1.Secret{}); err == nil {
				t.Error("the excluded namespace holds the Secret")
			}
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()

	testenv.Test(t, memory, claimed, reoffer)
}

// requestReason is a condition for eventually: the CopyRequest's Ready condition has reason.
func requestReason(c client.Client, ns, name, reason string) func(context.Context) error {
	return func(ctx context.Context) error {
		cr := &v1alpha1.CopyRequest{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cr); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(cr.Status.Conditions, "Ready")
		if cond == nil || cond.Reason != reason {
			return fmt.Errorf("Ready %+v, want reason %s", cond, reason)
		}
		return nil
	}
}
