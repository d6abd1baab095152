package secretsync

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// TestTwoPassesRetryingOneRefusedCopySendOneWrite: a SecretSync's whole pass and its pass of one
// namespace both reach a refused copy when its backoff is over. One of them sends the write; the
// other finds the new backoff and sends nothing (stop 56's CI: 6 creates where backoff allows 4).
func TestTwoPassesRetryingOneRefusedCopySendOneWrite(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var creates atomic.Int64
	entered, release := make(chan struct{}, 2), make(chan struct{})
	blocking := atomic.Bool{}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			creates.Add(1)
			if blocking.Load() {
				entered <- struct{}{}
				<-release
			}
			return webhookDenied("creds")
		},
	}).Build()
	r := &Reconciler{Client: c, APIReader: c, Clock: clk}
	key := types.NamespacedName{Namespace: "team-a", Name: "creds"}
	a := propagation.Action{Op: propagation.OpCreate, Key: key, Want: &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data:       map[string][]byte{"token": []byte("x")},
	}}

	if _, err := r.writer("sync").writeOnce(t.Context(), secretKind, a); err == nil {
		t.Fatal("the first write was not refused")
	}
	clk.SetTime(clk.Now().Add(DefaultRetryBase))
	blocking.Store(true)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = r.writer("sync").writeOnce(t.Context(), secretKind, a) })
	}
	<-entered
	// The other pass either enters the API call too (the defect) or waits for this one.
	select {
	case <-entered:
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	wg.Wait()

	if got := creates.Load(); got != 2 {
		t.Errorf("%d creates, want 2: the first and one retry after its backoff", got)
	}
	for i, err := range errs {
		var failed *writeError
		if !errors.As(err, &failed) {
			t.Errorf("pass %d: %v, want the refusal", i, err)
		}
	}
	if len(r.targets.writing.held) != 0 {
		t.Errorf("%d targets still held after every write ended, want 0", len(r.targets.writing.held))
	}
}

// TestAGoneNamespacesTargetsAreForgotten: the pass of a namespace that is gone drops what the
// passes remembered of its targets (a refused write, a foreign object in the way), and only
// those: namespaces that come and go (a CI system's) do not grow the manager.
func TestAGoneNamespacesTargetsAreForgotten(t *testing.T) {
	kept := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(testenv.Scheme(t)).WithObjects(kept).Build()}
	at := func(ns string) ownedTarget {
		return ownedTarget{"sync", targetKey{secretKind.name, types.NamespacedName{Namespace: ns, Name: "creds"}}}
	}
	r.targets.rejected.store(at("gone"), rejection{})
	r.targets.unmanaged.store(at("gone"), struct{}{})
	r.targets.rejected.store(at("kept"), rejection{})
	for _, ns := range []string{"kept", "gone"} {
		if _, err := r.namespaces(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	if n := rememberedIn(&r.targets, "gone"); n != 0 {
		t.Errorf("%d targets of the gone namespace remembered, want 0", n)
	}
	if n := rememberedIn(&r.targets, "kept"); n != 1 {
		t.Errorf("%d targets of the namespace that exists remembered, want 1", n)
	}
}

// TestADeletedSecretSyncsTargetsAreForgotten: the pass that finds a SecretSync gone drops what the
// passes remembered of its targets in namespaces that still exist (a copy a tenant's quota
// refuses), in every namespace, and only its own: an admin's churn of SecretSyncs does not grow
// the manager.
func TestADeletedSecretSyncsTargetsAreForgotten(t *testing.T) {
	r := goneSecretSyncReconciler(t)
	r.targets.rejected.store(ownedIn("deleted", "team-a"), rejection{})
	r.targets.unmanaged.store(ownedIn("deleted", "team-a"), struct{}{})
	r.targets.rejected.store(ownedIn("deleted", "team-b"), rejection{})
	r.targets.rejected.store(ownedIn("other", "team-a"), rejection{})
	if _, err := r.Reconcile(t.Context(), wholePass("deleted")); err != nil {
		t.Fatal(err)
	}
	if left := rememberedTargets(&r.targets); !slices.Equal(left, []ownedTarget{ownedIn("other", "team-a")}) {
		t.Errorf("remembered after the SecretSync's NotFound pass: %+v, want only the other SecretSync's target", left)
	}
}

// TestANamespacesPassForgetsItsGoneSecretSyncsTargetsThere: a pass of one namespace that was
// inside a refused write when its SecretSync was deleted (another work queue key) puts the
// refusal back after the SecretSync's NotFound pass forgot everything of it. The refusal brings
// that namespace's pass back, which finds the SecretSync gone and drops what is remembered of it
// in that namespace, and nothing else: each namespace's pass walks only its own namespace's.
func TestANamespacesPassForgetsItsGoneSecretSyncsTargetsThere(t *testing.T) {
	r := goneSecretSyncReconciler(t)
	if _, err := r.Reconcile(t.Context(), wholePass("deleted")); err != nil {
		t.Fatal(err)
	}
	r.targets.rejected.store(ownedIn("deleted", "team-a"), rejection{})
	r.targets.unmanaged.store(ownedIn("deleted", "team-a"), struct{}{})
	r.targets.rejected.store(ownedIn("deleted", "team-b"), rejection{})
	r.targets.rejected.store(ownedIn("other", "team-a"), rejection{})
	if _, err := r.ReconcileTarget(t.Context(), targetRequest("team-a", "deleted")); err != nil {
		t.Fatal(err)
	}
	want := []ownedTarget{ownedIn("deleted", "team-b"), ownedIn("other", "team-a")}
	if left := rememberedTargets(&r.targets); !slices.Equal(left, want) {
		t.Errorf("remembered after team-a's pass found the SecretSync gone: %+v, want %+v (team-b's is its own pass's)", left, want)
	}
}

// TestTheMemoryKeepsNoNamespaceWithNothingRemembered: a namespace's map goes with its last
// target, however it is forgotten (a write that passed, its owner's or its namespace's end), so
// the memory does not keep one map per namespace it ever saw.
func TestTheMemoryKeepsNoNamespaceWithNothingRemembered(t *testing.T) {
	var m memory[struct{}]
	for _, tk := range []ownedTarget{ownedIn("sync", "passed"), ownedIn("sync", "owner-gone"), ownedIn("other", "owner-gone"), ownedIn("sync", "ns-gone")} {
		m.store(tk, struct{}{})
	}
	m.delete(ownedIn("sync", "passed"))
	m.forget("owner-gone", "sync")
	if _, ok := m.load(ownedIn("other", "owner-gone")); !ok {
		t.Error("forgetting one owner in a namespace forgot another's")
	}
	m.forget("", "other")
	m.store(ownedIn("sync", "listed"), struct{}{})
	m.store(ownedIn("other", "unlisted"), struct{}{})
	m.keepOnly("sync", map[types.NamespacedName]bool{ownedIn("sync", "listed").key: true})
	if _, ok := m.load(ownedIn("sync", "listed")); !ok {
		t.Error("keepOnly forgot a key it was told to keep")
	}
	if _, ok := m.load(ownedIn("sync", "ns-gone")); ok {
		t.Error("keepOnly kept a key of the owner's it was not told to keep")
	}
	if _, ok := m.load(ownedIn("other", "unlisted")); !ok {
		t.Error("keepOnly of one owner forgot another's")
	}
	m.forget("", "other")
	m.forget("listed", "")
	if len(m.byNamespace) != 0 {
		t.Errorf("namespaces kept with nothing remembered: %v", m.byNamespace)
	}
}

// goneSecretSyncReconciler is a Reconciler on an empty fake client: every SecretSync is gone.
func goneSecretSyncReconciler(t *testing.T) *Reconciler {
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme(t)).Build()
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &Reconciler{Client: c, APIReader: c, Clock: clocktesting.NewFakePassiveClock(time.Now()), Metrics: metrics, Sources: &Sources{}}
}

// ownedIn is owner's target Secret "creds" in namespace ns.
func ownedIn(owner, ns string) ownedTarget {
	return ownedTarget{owner, targetKey{secretKind.name, types.NamespacedName{Namespace: ns, Name: "creds"}}}
}

// rememberedTargets lists, sorted, the targets t remembers (once per memory that has it).
func rememberedTargets(t *targets) []ownedTarget {
	left := append(keysOf(&t.unmanaged), keysOf(&t.rejected)...)
	slices.SortFunc(left, func(a, b ownedTarget) int {
		return cmp.Or(cmp.Compare(a.owner, b.owner), cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	return left
}

func keysOf[V any](m *memory[V]) []ownedTarget {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ownedTarget
	for _, held := range m.byNamespace {
		for tk := range held {
			out = append(out, tk)
		}
	}
	return out
}

// TestAGoneSecretSyncIsCleanedUpForGoneForAndSweptByTheNextDeletion: the passes of its namespaces
// clean up for goneFor after a whole pass found it gone, each reading its one entry, and the next
// deletion drops the entries older than that.
func TestAGoneSecretSyncIsCleanedUpForGoneForAndSweptByTheNextDeletion(t *testing.T) {
	r := goneSecretSyncReconciler(t)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r.Clock = clk
	r.noteGone("old")
	if !r.cleanedUp("old") || r.cleanedUp("other") {
		t.Fatal("cleanedUp does not say which SecretSync a whole pass found gone")
	}
	clk.SetTime(clk.Now().Add(goneFor + time.Second))
	if r.cleanedUp("old") {
		t.Error("cleaned up more than goneFor after the SecretSync was found gone")
	}
	r.noteGone("new")
	if _, kept := r.gone.Load("old"); kept || !r.cleanedUp("new") {
		t.Errorf("after the next deletion: old kept %t, new cleaned up %t; want false, true", kept, r.cleanedUp("new"))
	}
}
