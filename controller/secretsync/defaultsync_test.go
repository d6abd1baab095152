package secretsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// startDefault runs d as main.go does, as a controller (SetupWithManager), until stop or the
// test's end. Its manager is one of its own, its cache bounded as the manager's: the suite's
// manager cannot stop a controller, and a Default left running would apply its SecretSync again
// after the test deleted it. d.Client nil is that manager's client;
// tweak, when not nil, changes the manager's options.
func startDefault(t *testing.T, d *Default, tweak func(*ctrl.Options)) (stop func()) {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 mgr.GetScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A test restarts a Default (a new manager, the same controller name).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if err := cachebounds.ManagerOptions(cachebounds.Inventory{Name: "default", Kinds: CacheKinds(false)}, cache.Options{}, &opts); err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(&opts)
	}
	m, err := ctrl.NewManager(mgr.GetConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.Client == nil {
		d.Client = m.GetClient()
	}
	if err := d.SetupWithManager(m); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- m.Start(runCtx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-stopped; err != nil {
				t.Errorf("the default SecretSync's manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// runDefault starts d until the test ends, then deletes its SecretSync.
func runDefault(t *testing.T, d *Default) {
	t.Helper()
	// Cleanups run last first: the controller stops before the SecretSync is deleted.
	t.Cleanup(func() {
		err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: d.Name}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the default SecretSync: %v", err)
		}
	})
	startDefault(t, d, nil)
}

func TestTheDefaultSecretSyncIsKeptAppliedAndKeepsWhatAUserAdded(t *testing.T) {
	const c = "dfltkept"
	const typ = "platform-operators.io/test-kept"
	src := namespace(t, c+"-src", nil)
	d := &Default{Name: c + "-default", SourceNamespace: src, Type: typ}
	runDefault(t, d)

	chartFields := func(ss *v1alpha1.SecretSync) error {
		s := ss.Spec.Source
		if s.Namespace != src || string(s.Type) != typ || s.Name != "" || s.Selector == nil ||
			len(s.Selector.MatchLabels)+len(s.Selector.MatchExpressions) != 0 {
			return fmt.Errorf("spec.source = %+v, want every Secret of type %s in %s", s, typ, src)
		}
		return nil
	}
	get := func() (*v1alpha1.SecretSync, error) {
		ss := &v1alpha1.SecretSync{}
		return ss, k8s.Get(ctx, types.NamespacedName{Name: d.Name}, ss)
	}
	var first *v1alpha1.SecretSync
	eventually(t, "the default SecretSync exists", func() error {
		ss, err := get()
		if err != nil {
			return err
		}
		first = ss
		return chartFields(ss)
	})

	t.Log("a user adds a namespaceSelector, and edits spec.source: the source is restored, the selector stays")
	userSelector := &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: c}}
	eventually(t, "editing the default SecretSync", func() error {
		ss, err := get()
		if err != nil {
			return err
		}
		ss.Spec.Target.NamespaceSelector = userSelector
		ss.Spec.Source.Namespace = c + "-elsewhere"
		ss.Spec.Source.Type = "example.com/other"
		return k8s.Update(ctx, ss)
	})
	eventually(t, "spec.source restored", func() error {
		ss, err := get()
		if err != nil {
			return err
		}
		if err := chartFields(ss); err != nil {
			return err
		}
		if sel := ss.Spec.Target.NamespaceSelector; sel == nil || sel.MatchLabels[caseLabel] != c {
			return fmt.Errorf("the user's namespaceSelector is gone: %+v", sel)
		}
		return nil
	})

	t.Log("deleted, it comes back")
	if err := k8s.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the default SecretSync is back", func() error {
		ss, err := get()
		if err != nil {
			return err
		}
		if ss.UID == first.UID {
			return errors.New("not deleted yet")
		}
		return chartFields(ss)
	})
}

// A start that finds the default SecretSync as the chart wants it writes nothing: the dry run of
// the apply answers the SecretSync's generation, and no apply follows.
func TestARestartWithTheDefaultSecretSyncInStepWritesNothing(t *testing.T) {
	const c = "dfltquiet"
	var applies, dryRuns atomic.Int32
	counting := testenv.Intercept(k8s, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if po := (&client.PatchOptions{}).ApplyOptions(opts); len(po.DryRun) > 0 {
				dryRuns.Add(1)
			} else {
				applies.Add(1)
			}
			return cl.Patch(ctx, o, p, opts...)
		},
	})
	runDefault(t, &Default{Client: counting, Name: c + "-default", SourceNamespace: c + "-src", Type: "example.com/x"})
	eventually(t, "the first start applies, and the dry run after its own event finds it in step", func() error {
		if a, d := applies.Load(), dryRuns.Load(); a != 1 || d < 1 {
			return fmt.Errorf("%d applies, %d dry runs", a, d)
		}
		return nil
	})
	applies.Store(0)
	dryRuns.Store(0)
	startDefault(t, &Default{Client: counting, Name: c + "-default", SourceNamespace: c + "-src", Type: "example.com/x"}, nil)
	eventually(t, "the restart's dry run", func() error {
		if d := dryRuns.Load(); d < 1 {
			return fmt.Errorf("%d dry runs", d)
		}
		return nil
	})
	time.Sleep(time.Second)
	if a := applies.Load(); a != 0 {
		t.Errorf("%d applies at a restart that found the SecretSync in step, want 0", a)
	}
}

// A failing apply is retried after 1 s, then 2 s, then 4 s (the work queue's backoff,
// defaultRetry); controller-runtime's default would retry after 5 ms, 10 ms, ...: hundreds of
// applies in seconds.
func TestAFailingApplyOfTheDefaultSecretSyncBacksOff(t *testing.T) {
	const c = "dfltfail"
	var (
		mu      sync.Mutex
		patches []time.Time
	)
	failing := testenv.Intercept(k8s, interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			mu.Lock()
			patches = append(patches, time.Now())
			mu.Unlock()
			return apierrors.NewServiceUnavailable("injected")
		},
	})
	tries := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(patches)
	}
	d := &Default{Client: failing, Name: c + "-default", SourceNamespace: c + "-src", Type: "example.com/x"}
	runDefault(t, d)
	eventually(t, "three applies", func() error {
		if n := len(tries()); n < 3 {
			return fmt.Errorf("%d applies", n)
		}
		return nil
	})
	// The next retry is 4 s after the third: none comes in the next 3.5 s.
	time.Sleep(3500 * time.Millisecond)
	got := tries()
	if len(got) != 3 {
		t.Fatalf("%d applies, want 3 within 3.5 s of the third (retries after 1 s, 2 s, then 4 s)", len(got))
	}
	first, second := got[1].Sub(got[0]), got[2].Sub(got[1])
	// A loaded machine only makes a delay longer.
	if first < 900*time.Millisecond || second < 1800*time.Millisecond || second <= first {
		t.Errorf("retries after %s, then %s; want 1 s, then 2 s", first, second)
	}
}

// Only the leader applies the default SecretSync (a standby's controllers do not run): while
// another replica holds the Lease, nothing is applied; once this manager takes it, it is.
func TestOnlyTheLeaderAppliesTheDefaultSecretSync(t *testing.T) {
	const c = "dfltleader"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ownershipNS, Name: c},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if err := k8s.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, &coordinationv1.Lease{ObjectMeta: lease.ObjectMeta}) })
	d := &Default{Name: c + "-default", SourceNamespace: c + "-src", Type: "example.com/x"}
	t.Cleanup(func() { _ = k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: d.Name}}) })
	startDefault(t, d, func(o *ctrl.Options) {
		o.LeaderElection, o.LeaderElectionNamespace, o.LeaderElectionID = true, ownershipNS, c
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = ptr.To(2*time.Second), ptr.To(time.Second), ptr.To(200*time.Millisecond)
		o.LeaderElectionReleaseOnCancel = true
	})
	get := func() error {
		return k8s.Get(ctx, types.NamespacedName{Name: d.Name}, &v1alpha1.SecretSync{})
	}
	time.Sleep(2 * time.Second)
	if err := get(); !apierrors.IsNotFound(err) {
		t.Fatalf("while another replica leads: get = %v, want NotFound", err)
	}
	t.Log("the other replica is gone (its Lease deleted): this one leads and applies")
	if err := k8s.Delete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the default SecretSync applied by the new leader", get)
}

// The retry of a failing default apply doubles from 1 s and stays at 5 min once doubling would
// pass it, as the loop it replaced did (min(2*delay, 5 min)).
func TestTheDefaultSecretSyncsRetryDelaysDoubleUpToFiveMinutes(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second,
		5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	retry := defaultRetry()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}
	for i, w := range want {
		if got := retry.When(req); got != w {
			t.Fatalf("delay %d = %s, want %s", i+1, got, w)
		}
	}
	for range 1000 {
		retry.When(req)
	}
	if got := retry.When(req); got != DefaultRetryCap {
		t.Fatalf("delay after 1,000 more failures = %s, want %s", got, DefaultRetryCap)
	}
	retry.Forget(req)
	if got := retry.When(req); got != DefaultRetryBase {
		t.Fatalf("delay after a success = %s, want %s", got, DefaultRetryBase)
	}
}
