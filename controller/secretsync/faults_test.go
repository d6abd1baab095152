package secretsync

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

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

// faultFor returns the error injected for a Secret write, or nil.
func faultFor(obj client.Object) error {
	if _, ok := obj.(*corev1.Secret); !ok {
		return nil
	}
	v, ok := faults.Load(obj.GetNamespace())
	if !ok {
		return nil
	}
	f := v.(*fault)
	f.hits.Add(1)
	return f.err
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
			if err := faultFor(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := faultFor(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}
