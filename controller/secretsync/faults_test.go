package secretsync

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Fault injection for the suite's reconciler: its client is the manager's, wrapped so that a
// test can make the API server's answer to creates and updates of Secrets in a namespace of its
// own an error of its choice (what envtest cannot produce on demand: a copy refused as too
// large, a namespace that starts terminating between the cache read and the create), make the
// read of a Namespace fail, or show a terminating Namespace as the cache saw it a moment before.

// fault is an error injected into one namespace's Secret writes, and how often it was returned.
type fault struct {
	err  error
	hits atomic.Int64
	// last is when it last refused a write (UnixNano).
	last atomic.Int64
	// committedOnly spares dry-run requests: the fault stands for an answer that changed between
	// a dry run and the write (a policy installed in between).
	committedOnly bool
}

// faults maps a namespace to its *fault.
var faults sync.Map

// injectFault makes every create and update of a Secret in namespace fail with err until the
// test ends; the returned fault counts the writes it refused.
func injectFault(t *testing.T, namespace string, err error) *fault {
	t.Helper()
	f := &fault{err: err}
	faults.Store(namespace, f)
	t.Cleanup(func() { faults.Delete(namespace) })
	return f
}

// injectCommittedFault is injectFault for writes that are not dry runs only.
func injectCommittedFault(t *testing.T, namespace string, err error) *fault {
	t.Helper()
	f := &fault{err: err, committedOnly: true}
	faults.Store(namespace, f)
	t.Cleanup(func() { faults.Delete(namespace) })
	return f
}

// faultFor returns the error injected for a Secret write, or nil.
func faultFor(obj client.Object, dryRun bool) error {
	if _, ok := obj.(*corev1.Secret); !ok {
		return nil
	}
	v, ok := faults.Load(obj.GetNamespace())
	if !ok {
		return nil
	}
	f := v.(*fault)
	if dryRun && f.committedOnly {
		return nil
	}
	f.hits.Add(1)
	f.last.Store(time.Now().UnixNano())
	return f.err
}

// lastAt is when the fault last refused a write.
func (f *fault) lastAt() time.Time { return time.Unix(0, f.last.Load()) }

// sinceLast is how long ago the fault last refused a write.
func (f *fault) sinceLast() time.Duration { return time.Since(f.lastAt()) }

// writeCounts maps a namespace, or "SecretSync/<name>" for a SecretSync's status, to the
// *atomic.Int64 of write requests the reconciler sent for it (dry runs included: a request is
// a request), once a test asked for it with countWrites.
var writeCounts sync.Map

// countWrites starts counting the reconciler's write requests to objects in namespace (or to
// the status of SecretSync "SecretSync/<name>"); the count is read with Load.
func countWrites(t *testing.T, key string) *atomic.Int64 {
	t.Helper()
	n := &atomic.Int64{}
	writeCounts.Store(key, n)
	t.Cleanup(func() { writeCounts.Delete(key) })
	return n
}

// counted counts a write request for obj.
func counted(obj client.Object) {
	key := obj.GetNamespace()
	if _, ok := obj.(*v1alpha1.SecretSync); ok {
		key = "SecretSync/" + obj.GetName()
	}
	if v, ok := writeCounts.Load(key); ok {
		v.(*atomic.Int64).Add(1)
	}
}

// passes maps a SecretSync's name to the *atomic.Int64 count of the passes that read it: both
// controllers' passes (Reconcile and ReconcileTarget) begin with that one Get through the
// reconciler's client, and nothing else reads a SecretSync through it.
var passes sync.Map

// passesOf is how many passes have read the SecretSync name so far.
func passesOf(name string) int64 {
	if v, ok := passes.Load(name); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// patchTimes maps a namespace to the *patchTimeline of the reconciler's ServiceAccount patches
// that went through there, once a test asked for it with recordServiceAccountPatches.
var patchTimes sync.Map

// patchTimeline is when each ServiceAccount patch of a namespace went through.
type patchTimeline struct {
	mu sync.Mutex
	at []time.Time
}

func (p *patchTimeline) add(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, t)
}

// times returns the patch times so far, in order.
func (p *patchTimeline) times() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.at)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// recordServiceAccountPatches starts recording the reconciler's ServiceAccount patches in
// namespace.
func recordServiceAccountPatches(t *testing.T, namespace string) *patchTimeline {
	t.Helper()
	p := &patchTimeline{}
	patchTimes.Store(namespace, p)
	t.Cleanup(func() { patchTimes.Delete(namespace) })
	return p
}

// isDryRun reports whether create options ask for a dry run.
func isDryRun(opts []client.CreateOption) bool {
	o := &client.CreateOptions{}
	o.ApplyOptions(opts)
	return len(o.DryRun) > 0
}

// readFaults maps a namespace name to the error a Get of that Namespace returns (a read that
// fails); staleNamespaces holds the names of namespaces a Get shows without their deletion
// timestamp (a cache that has not yet seen the namespace start terminating).
var readFaults, staleNamespaces sync.Map

// injectReadFault makes every Get of Namespace name through the reconciler's client fail with
// err until the returned func is called or the test ends.
func injectReadFault(t *testing.T, name string, err error) (lift func()) {
	t.Helper()
	readFaults.Store(name, err)
	lift = func() { readFaults.Delete(name) }
	t.Cleanup(lift)
	return lift
}

// showNamespaceActive makes the reconciler's client show Namespace name as not terminating
// until the test ends.
func showNamespaceActive(t *testing.T, name string) {
	t.Helper()
	staleNamespaces.Store(name, true)
	t.Cleanup(func() { staleNamespaces.Delete(name) })
}

func withWriteFaults(c client.Client) client.Client {
	return testenv.Intercept(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1alpha1.SecretSync); ok {
				v, _ := passes.LoadOrStore(key.Name, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			if _, ok := obj.(*corev1.Namespace); ok {
				if err, faulty := readFaults.Load(key.Name); faulty {
					return err.(error)
				}
			}
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if _, stale := staleNamespaces.Load(key.Name); stale {
				if ns, ok := obj.(*corev1.Namespace); ok {
					ns.DeletionTimestamp = nil
				}
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			counted(obj)
			if err := faultFor(obj, isDryRun(opts)); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			counted(obj)
			if err := faultFor(obj, false); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			counted(obj)
			err := c.Patch(ctx, obj, patch, opts...)
			if _, ok := obj.(*corev1.ServiceAccount); ok && err == nil {
				if v, ok := patchTimes.Load(obj.GetNamespace()); ok {
					v.(*patchTimeline).add(time.Now())
				}
			}
			return err
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			counted(obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			counted(obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
}
