package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// Ownership survives the loss and the rotation of the key (issue 34), on real nodes: the manager
// pods restarted by a rollout, as an admin would, and the copies' proof annotations checked
// against the keys in the cluster (the test computes each proof itself).

const (
	// ownershipKeySecret is the key Secret the chart's manager reads (its --ownership-key-secret
	// default); the ring is it and the Secrets named <it>-<anything> beside it.
	ownershipKeySecret = "platform-operators-ownership-key"
	// keyCopies is how many tenant namespaces get a copy in each case.
	keyCopies = 3
	// keyFollowWithin is how soon after a source update every copy must carry it ("within
	// seconds"; before the policy shortcut none did in 60 s after a key loss).
	keyFollowWithin = 20 * time.Second
)

// keyRing reads the ownership key Secrets of the manager's namespace (the named one and
// <it>-*), oldest first as the manager orders them, by name.
func keyRing(ctx context.Context, t *testing.T, c client.Client) []corev1.Secret {
	t.Helper()
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(releaseNamespace)); err != nil {
		t.Fatal(err)
	}
	var ring []corev1.Secret
	for _, s := range list.Items {
		if s.Name == ownershipKeySecret || strings.HasPrefix(s.Name, ownershipKeySecret+"-") {
			ring = append(ring, s)
		}
	}
	sort.SliceStable(ring, func(i, j int) bool {
		a, b := ring[i], ring[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return ring
}

// keyCase is a SecretSync of one Secret into keyCopies tenant namespaces.
type keyCase struct {
	c       client.Client
	ss      *v1alpha1.SecretSync
	src     string
	tenants []string
	source  *corev1.Secret
}

func newKeyCase(ctx context.Context, t *testing.T, c client.Client, name string) *keyCase {
	t.Helper()
	k := &keyCase{c: c, src: name + "-src"}
	label := "e2e.platform-operators.io/" + name
	createNamespace(ctx, t, c, k.src, nil)
	for i := range keyCopies {
		ns := fmt.Sprintf("%s-t%d", name, i)
		createNamespace(ctx, t, c, ns, map[string]string{label: "yes"})
		k.tenants = append(k.tenants, ns)
	}
	k.source = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.src, Name: "creds"}, Data: map[string][]byte{"token": []byte("v1")}}
	if err := c.Create(ctx, k.source); err != nil {
		t.Fatal(err)
	}
	k.ss = claimSync(ctx, t, c, name, k.src, label)
	k.eventuallyCopies(ctx, t, "v1", nil)
	return k
}

// proofs returns each copy's proof annotation, by namespace.
func (k *keyCase) proofs(ctx context.Context, t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ns := range k.tenants {
		s := &corev1.Secret{}
		if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "creds"}, s); err != nil {
			t.Fatal(err)
		}
		out[ns] = s.Annotations[keys.AnnotationOwnership]
	}
	return out
}

// copiesSignedWith fails unless every copy has token and a proof under key (nil: any proof).
func (k *keyCase) copiesSignedWith(ctx context.Context, token string, key []byte) error {
	for _, ns := range k.tenants {
		if err := copyIs(ctx, k.c, ns, "creds", map[string][]byte{"token": []byte(token)}); err != nil {
			return err
		}
		if key == nil {
			continue
		}
		s := &corev1.Secret{}
		if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "creds"}, s); err != nil {
			return err
		}
		want := propagation.NewProver(key).Sign("Secret", ns, "creds", keys.LabelSecretSync, k.ss.Name)
		if got := s.Annotations[keys.AnnotationOwnership]; got != want {
			return fmt.Errorf("%s/creds carries the proof %q, not the one of the expected key (%q)", ns, got, want)
		}
	}
	return nil
}

// eventuallyCopies fails the test, with the SecretSync's status and the Lease, unless every copy
// has token and a proof under key (nil: any proof) within waitTimeout.
func (k *keyCase) eventuallyCopies(ctx context.Context, t *testing.T, token string, key []byte) {
	t.Helper()
	if err := pollFor(ctx, waitTimeout, func(ctx context.Context) error { return k.copiesSignedWith(ctx, token, key) }); err != nil {
		k.report(ctx, t)
		t.Fatalf("every copy at %s, signed with the expected key: %v", token, err)
	}
}

// update changes the source to token and returns how long until every copy carries it, signed
// with key; it fails the test after keyFollowWithin.
func (k *keyCase) update(ctx context.Context, t *testing.T, token string, key []byte) time.Duration {
	t.Helper()
	src := &corev1.Secret{}
	if err := k.c.Get(ctx, client.ObjectKeyFromObject(k.source), src); err != nil {
		t.Fatal(err)
	}
	src.Data = map[string][]byte{"token": []byte(token)}
	if err := k.c.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := pollFor(ctx, keyFollowWithin, func(ctx context.Context) error { return k.copiesSignedWith(ctx, token, key) }); err != nil {
		k.report(ctx, t)
		t.Fatalf("the source update did not reach every copy within %s: %v", keyFollowWithin, err)
	}
	return time.Since(start)
}

// ready fails unless the SecretSync is Ready with every copy synced and no conflict, for the
// spec the test made (observedGeneration).
func (k *keyCase) ready(ctx context.Context) error {
	ss := &v1alpha1.SecretSync{}
	if err := k.c.Get(ctx, client.ObjectKeyFromObject(k.ss), ss); err != nil {
		return err
	}
	r := meta.FindStatusCondition(ss.Status.Conditions, "Ready")
	switch {
	case r == nil || r.Status != metav1.ConditionTrue:
		return fmt.Errorf("SecretSync %s not Ready: %+v", ss.Name, r)
	case r.ObservedGeneration != ss.Generation:
		return fmt.Errorf("SecretSync %s Ready for generation %d, not %d", ss.Name, r.ObservedGeneration, ss.Generation)
	case ss.Status.Conflicts != 0 || len(ss.Status.Failures) != 0:
		return fmt.Errorf("SecretSync %s reports %d conflicts, failures %+v", ss.Name, ss.Status.Conflicts, ss.Status.Failures)
	case ss.Status.Synced != keyCopies:
		return fmt.Errorf("SecretSync %s synced %d, want %d", ss.Name, ss.Status.Synced, keyCopies)
	}
	for _, c := range ss.Status.Conditions {
		if c.Reason == "Conflict" {
			return fmt.Errorf("SecretSync %s condition %s: %s", ss.Name, c.Type, c.Message)
		}
	}
	return nil
}

func (k *keyCase) report(ctx context.Context, t *testing.T) {
	t.Helper()
	ss := &v1alpha1.SecretSync{}
	if err := k.c.Get(ctx, client.ObjectKeyFromObject(k.ss), ss); err == nil {
		t.Logf("SecretSync %s status: %+v", ss.Name, ss.Status)
	}
	t.Log(leaseState(ctx, k.c))
}

// deleteKeySecret deletes a key Secret of the ring (an immutable Secret can be deleted).
func deleteKeySecret(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: name}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// namedKey reads the key of the Secret the manager makes (after a restart that made it anew).
func namedKey(ctx context.Context, t *testing.T, c client.Client) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: releaseNamespace, Name: ownershipKeySecret}, s); err != nil {
		t.Fatalf("the manager made no key Secret %s: %v", ownershipKeySecret, err)
	}
	return s.Data["key"]
}

// TestOwnershipSurvivesKeyLoss: with the chart's ownership-keys admission policy in force (the
// chart default), every key Secret of the ring is deleted (a reinstall, a restore of the tenants'
// namespaces only, an admin's clean-up) and the manager restarted: it makes a new key, and the
// copies, signed under a key that is gone, are still its own (only the manager can have put our
// label and proof on them). The next source update reaches every copy within seconds, re-signed
// with the new key, and the SecretSync is Ready without a Conflict. Before: none of the 3 copies
// in 60 s, `Conflict: 3 targets are held by Secrets this SecretSync may not manage`.
func TestOwnershipSurvivesKeyLoss(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")
	if !isKind() {
		t.Skip("restarts the manager's pods: kind only")
	}
	f := features.New("the ownership key lost, the manager restarted").
		Assess("every copy follows the next update, re-signed, and the SecretSync is Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			cs := clientset(t, cfg)
			eventually(ctx, t, "the ownership policy in force", func(ctx context.Context) error { return ownershipPolicyInForce(ctx, c) })
			k := newKeyCase(ctx, t, c, "e2e-keyloss")
			eventually(ctx, t, "the SecretSync Ready", k.ready)
			before := k.proofs(ctx, t)

			ring := keyRing(ctx, t, c)
			if len(ring) == 0 {
				t.Fatalf("no ownership key Secret %s in %s", ownershipKeySecret, releaseNamespace)
			}
			old := ring[len(ring)-1].Data["key"]
			if err := k.copiesSignedWith(ctx, "v1", old); err != nil {
				t.Fatalf("before the loss, the copies are not signed with the newest key of the ring: %v", err)
			}
			for _, s := range ring {
				deleteKeySecret(ctx, t, c, s.Name)
			}
			restartManager(ctx, t, c, cs)
			newKey := namedKey(ctx, t, c)
			if string(newKey) == string(old) {
				t.Fatal("the manager's new key is the lost one")
			}
			if n := len(keyRing(ctx, t, c)); n != 1 {
				t.Errorf("%d key Secrets after the restart, want the one the manager made", n)
			}

			took := k.update(ctx, t, "v2", newKey)
			t.Logf("after the key loss and restart, the source update reached all %d copies, re-signed with the new key, in %s", keyCopies, took.Round(10*time.Millisecond))
			after := k.proofs(ctx, t)
			for ns, p := range after {
				if p == before[ns] {
					t.Errorf("%s/creds still carries the proof under the lost key", ns)
				}
			}
			eventually(ctx, t, "the SecretSync Ready, no Conflict", k.ready)
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestOwnershipKeyRotation follows docs/secretsync.md "Rotating the key" step by step, with the
// ownership-keys policy unbound, so that the key ring alone proves the copies (with the policy in
// force a stale proof would pass anyway, and the test would prove nothing): a new key added to
// the ring and the manager restarted re-signs every copy with it, without a source change; the
// old key then retired (deleted, restarted) strands no copy: the SecretSync stays Ready without a
// Conflict and the next source update reaches every copy.
func TestOwnershipKeyRotation(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")
	if !isKind() {
		t.Skip("restarts the manager's pods: kind only")
	}
	f := features.New("the ownership key rotated as documented").
		Assess("copies are re-signed with the new key and none is stranded when the old one goes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			cs := clientset(t, cfg)
			unbindOwnershipPolicy(ctx, t, c)
			k := newKeyCase(ctx, t, c, "e2e-keyrot")
			eventually(ctx, t, "the SecretSync Ready", k.ready)
			ring := keyRing(ctx, t, c)
			if len(ring) == 0 {
				t.Fatalf("no ownership key Secret %s in %s", ownershipKeySecret, releaseNamespace)
			}

			// Step 1: a new key, as the manager would make it.
			newKey := make([]byte, 32)
			if _, err := rand.Read(newKey); err != nil {
				t.Fatal(err)
			}
			added := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: fmt.Sprintf("%s-e2e-%d", ownershipKeySecret, time.Now().Unix()),
					Labels: map[string]string{"app.kubernetes.io/managed-by": "platform-operators", "app.kubernetes.io/component": "ownership-key"}},
				Type:      "ops.platform-operators.io/ownership-key",
				Immutable: ptr.To(true),
				Data:      map[string][]byte{"key": newKey},
			}
			if err := c.Create(ctx, added); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { deleteKeySecret(context.Background(), t, c, added.Name) })
			// Step 2: restart; step 3: every copy re-signed with the new key at its next pass (the
			// restart's), the source unchanged, and the SecretSync Ready.
			restartManager(ctx, t, c, cs)
			start := time.Now()
			k.eventuallyCopies(ctx, t, "v1", newKey)
			t.Logf("after adding a key and restarting, all %d copies carried a proof of the new key within %s", keyCopies, time.Since(start).Round(10*time.Millisecond))
			eventually(ctx, t, "the SecretSync Ready, no Conflict, with the new key", k.ready)

			// Step 4: retire the old keys. The Secret named by --ownership-key-secret is one of
			// them: deleted, it is made anew at the restart, the newest key of the ring.
			for _, s := range ring {
				deleteKeySecret(ctx, t, c, s.Name)
			}
			restartManager(ctx, t, c, cs)
			for _, s := range keyRing(ctx, t, c) {
				for _, o := range ring {
					if string(s.Data["key"]) == string(o.Data["key"]) {
						t.Errorf("the retired key of %s is still in the ring (%s)", o.Name, s.Name)
					}
				}
			}
			newest := namedKey(ctx, t, c)
			// No copy stranded: signed under the key of step 1, still in the ring, they are
			// proven, re-signed with the newest, and follow the source.
			start = time.Now()
			k.eventuallyCopies(ctx, t, "v1", newest)
			t.Logf("after retiring the old key and restarting, all %d copies carried a proof of the newest key within %s", keyCopies, time.Since(start).Round(10*time.Millisecond))
			eventually(ctx, t, "the SecretSync Ready, no Conflict, after the old key was retired", k.ready)
			took := k.update(ctx, t, "v2", newest)
			t.Logf("the next source update reached all %d copies in %s", keyCopies, took.Round(10*time.Millisecond))
			eventually(ctx, t, "the SecretSync Ready, no Conflict, after the update", k.ready)
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// unbindOwnershipPolicy deletes the chart's ownership-keys binding for the rest of the test (the
// manager then relies on its proofs alone: a restarted manager reads the policy at start) and
// restores it when the test ends.
func unbindOwnershipPolicy(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
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
}
