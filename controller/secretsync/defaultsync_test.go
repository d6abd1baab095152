package secretsync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// runDefault starts d until the test ends, then deletes its SecretSync.
func runDefault(t *testing.T, d *Default) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- d.Start(runCtx) }()
	// Cleanups run last first: stop the runnable before the SecretSync is deleted.
	t.Cleanup(func() {
		err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: d.Name}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the default SecretSync: %v", err)
		}
	})
	t.Cleanup(func() {
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("Default.Start: %v", err)
		}
	})
}

func TestTheDefaultSecretSyncIsKeptAppliedAndKeepsWhatAUserAdded(t *testing.T) {
	const c = "dfltkept"
	const typ = "platform-operators.io/test-kept"
	src := namespace(t, c+"-src", nil)
	d := &Default{Client: k8s, Cache: mgr.GetCache(), Name: c + "-default", SourceNamespace: src, Type: typ, Log: testr.New(t)}
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

func TestAFailingApplyOfTheDefaultSecretSyncBacksOff(t *testing.T) {
	const c = "dfltfail"
	var patches atomic.Int64
	failing := testenv.Intercept(k8s, interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			patches.Add(1)
			return apierrors.NewServiceUnavailable("injected")
		},
	})
	d := &Default{Client: failing, Cache: mgr.GetCache(), Name: c + "-default", SourceNamespace: c + "-src", Type: "example.com/x", Log: testr.New(t)}
	runDefault(t, d)
	// Tries at 0 s, 1 s and 3 s (doubling delays); a loop would try hundreds of times.
	time.Sleep(3500 * time.Millisecond)
	if n := patches.Load(); n < 2 || n > 3 {
		t.Errorf("%d applies within 3.5 s of a failing API, want 2-3 (retries after 1 s, then 2 s)", n)
	}
}

// Without a cache a default SecretSync could not be kept applied (it would be applied once):
// the manager must not start that way.
func TestADefaultSecretSyncWithoutACacheRefusesToStart(t *testing.T) {
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d := &Default{Client: k8s, Name: "dfltnocache-default", SourceNamespace: "dfltnocache-src", Log: testr.New(t)}
	if err := d.Start(runCtx); err == nil || runCtx.Err() != nil {
		t.Errorf("Start = %v (context: %v), want an error at once", err, runCtx.Err())
	}
}

// The retry of a failing default apply doubles from 1 s and stays at 5 min once doubling would
// pass it, as the loop it replaced did (min(2*delay, 5 min)).
func TestTheDefaultSecretSyncsRetryDelaysDoubleUpToFiveMinutes(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second,
		5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	retry := defaultRetry()
	for i, w := range want {
		if got := retry.Step(); got != w {
			t.Fatalf("delay %d = %s, want %s", i+1, got, w)
		}
	}
	for range 1000 {
		retry.Step()
	}
	if got := retry.Step(); got != defaultRetryMax {
		t.Fatalf("delay after 1,000 more failures = %s, want %s", got, defaultRetryMax)
	}
}
