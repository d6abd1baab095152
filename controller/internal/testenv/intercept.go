package testenv

import (
	"context"
	"errors"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Intercept wraps c (typically a manager's client, which has no Watch) with controller-runtime's
// fault-injecting interceptor.
func Intercept(c client.Client, funcs interceptor.Funcs) client.WithWatch {
	return interceptor.NewClient(noWatch{c}, funcs)
}

// CountJobCreates wraps c and counts the Jobs created through it in *n (not safe for
// concurrent use: a test calls Reconcile directly).
func CountJobCreates(c client.Client, n *int) client.Client {
	return Intercept(c, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*batchv1.Job); ok {
			*n++
		}
		return c.Create(ctx, obj, opts...)
	}})
}

// noWatch gives a client.Client the Watch that interceptor.NewClient asks for.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported here")
}
