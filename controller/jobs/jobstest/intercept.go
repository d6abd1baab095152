package jobstest

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Intercept wraps c (typically a manager's client, which has no Watch) with controller-runtime's
// fault-injecting interceptor.
func Intercept(c client.Client, funcs interceptor.Funcs) client.WithWatch {
	return interceptor.NewClient(noWatch{c}, funcs)
}

// noWatch gives a client.Client the Watch that interceptor.NewClient asks for.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported here")
}
