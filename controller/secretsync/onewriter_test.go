package secretsync

import (
	"context"
	"errors"
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
	r.targets.rejected.Store(at("gone"), rejection{})
	r.targets.unmanaged.Store(at("gone"), struct{}{})
	r.targets.rejected.Store(at("kept"), rejection{})
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
// refuses), and only its own: an admin's churn of SecretSyncs does not grow the manager.
func TestADeletedSecretSyncsTargetsAreForgotten(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme(t)).Build()
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, APIReader: c, Clock: clocktesting.NewFakePassiveClock(time.Now()), Metrics: metrics, Sources: &Sources{}}
	of := func(owner string) ownedTarget {
		return ownedTarget{owner, targetKey{secretKind.name, types.NamespacedName{Namespace: "team-a", Name: "creds"}}}
	}
	r.targets.rejected.Store(of("deleted"), rejection{})
	r.targets.unmanaged.Store(of("deleted"), struct{}{})
	r.targets.rejected.Store(of("other"), rejection{})
	remembered := func() []ownedTarget {
		var left []ownedTarget
		for _, m := range []*sync.Map{&r.targets.unmanaged, &r.targets.rejected} {
			m.Range(func(k, _ any) bool {
				left = append(left, k.(ownedTarget))
				return true
			})
		}
		return left
	}
	if _, err := r.Reconcile(t.Context(), wholePass("deleted")); err != nil {
		t.Fatal(err)
	}
	if left := remembered(); len(left) != 1 || left[0] != of("other") {
		t.Errorf("remembered after the SecretSync's NotFound pass: %+v, want only the other SecretSync's target", left)
	}
}
