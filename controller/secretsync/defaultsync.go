package secretsync

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// DefaultFieldOwner is the server-side apply field manager of the default SecretSync.
const DefaultFieldOwner = "platform-operators-default"

// defaultRetry is the work queue's backoff of a failing apply, the copy path's (DefaultRetryBase
// doubling to DefaultRetryCap): 1 s, 2 s, 4 s, ... 256 s, then 5 min on every later failure; a
// success resets it.
func defaultRetry() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](DefaultRetryBase, DefaultRetryCap)
}

// Default keeps a SecretSync the chart asks for applied: the seed's rule (every Secret of Type in
// SourceNamespace copied to every namespace), or one named Secret (SourceName), optionally added
// to ServiceAccounts' imagePullSecrets (the chart's Harbor pull secret). The chart cannot render it as a manifest, because
// Helm cannot create a custom resource in the same release that creates its CRD from templates/.
// It is applied with server-side apply, so fields a user adds (e.g. target.namespaceSelector)
// stay, while the fields set here follow the chart's values. It is kept applied: when the
// SecretSync is deleted or a field set here is changed, it is applied again. It is a controller
// of its own (SetupWithManager), so it runs only on the leader.
type Default struct {
	Client          client.Client
	Name            string
	SourceNamespace string
	// SourceName selects one Secret; empty selects every Secret (of Type, when set).
	SourceName string
	Type       string
	// ImagePullSecretFor names ServiceAccounts that get the copies as image pull secrets.
	ImagePullSecretFor []string
}

// SetupWithManager adds the controller that keeps the SecretSync applied, named
// "default-secretsync-<Name>". It watches the SecretSync through the manager's cache: its
// creation, deletion and spec changes (the status, written on every sync, cannot drift from the
// chart). The SecretSync may not exist yet, so no event may come: one request is also queued when
// the controller starts (on the leader). A failed apply is retried by the work queue after 1 s,
// 2 s, 4 s, ... up to 5 min.
func (d *Default) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == d.Name })
	// source.Func is the least of the one-shot idioms: no channel, event or handler, and it runs
	// once, when the controller starts.
	atStart := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: d.Name}})
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("default-secretsync-"+d.Name).
		For(&v1alpha1.SecretSync{}, builder.WithPredicates(ours, predicate.GenerationChangedPredicate{})).
		WatchesRawSource(atStart).
		WithOptions(controller.Options{RateLimiter: defaultRetry()}).
		Complete(d)
}

// Reconcile applies the SecretSync unless the apply would change nothing. A dry run of the apply
// says so: the API server merges it as it would the apply (a ServiceAccount the chart applied
// and no longer lists is removed from imagePullSecretFor, one a user added stays), and the
// generation it answers is the cached SecretSync's when the spec stays as it is.
func (d *Default) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	cur := &v1alpha1.SecretSync{}
	err := d.Client.Get(ctx, client.ObjectKey{Name: d.Name}, cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	// Force: the fields in this object are the chart's, whoever changed them since. Only they
	// are in it, so fields a user added keep their owner and their value.
	opts := []client.PatchOption{client.FieldOwner(DefaultFieldOwner), client.ForceOwnership}
	if err == nil {
		dry := d.object()
		//nolint:staticcheck // Apply with an unstructured object needs no generated apply configurations.
		if err := d.Client.Patch(ctx, dry, client.Apply, append(opts, client.DryRunAll)...); err != nil {
			return reconcile.Result{}, err
		}
		if dry.GetGeneration() == cur.Generation {
			// As the chart wants it (every restart, every status or user-only change): no write.
			return reconcile.Result{}, nil
		}
	}
	//nolint:staticcheck // Apply with an unstructured object needs no generated apply configurations.
	if err := d.Client.Patch(ctx, d.object(), client.Apply, opts...); err != nil {
		return reconcile.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Default SecretSync applied", "sourceNamespace", d.SourceNamespace, "type", d.Type)
	return reconcile.Result{}, nil
}

// object is the apply configuration: exactly the fields Default owns.
func (d *Default) object() *unstructured.Unstructured {
	source := map[string]any{"namespace": d.SourceNamespace}
	if d.SourceName != "" {
		source["name"] = d.SourceName
	} else {
		source["selector"] = map[string]any{}
	}
	if d.Type != "" {
		source["type"] = d.Type
	}
	spec := map[string]any{"source": source}
	if len(d.ImagePullSecretFor) > 0 {
		sas := make([]any, len(d.ImagePullSecretFor))
		for i, n := range d.ImagePullSecretFor {
			sas[i] = n
		}
		spec["imagePullSecretFor"] = sas
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SecretSync",
		"metadata":   map[string]any{"name": d.Name},
		"spec":       spec,
	}}
}
