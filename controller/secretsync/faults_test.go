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
// large, a namespace that starts terminating between the cache read and the create).

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

func withWriteFaults(c client.Client) client.Client {
	return testenv.Intercept(c, interceptor.Funcs{
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
