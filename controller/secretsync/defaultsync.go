package secretsync

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// The retry delays of a failing apply of a default SecretSync: doubled after each failure.
const (
	defaultRetryFirst = time.Second
	defaultRetryMax   = 5 * time.Minute
)

// defaultRetry is the work queue's backoff of a failing apply: 1 s, 2 s, 4 s, ... 256 s, then
// 5 min on every later failure; a success resets it.
func defaultRetry() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](defaultRetryFirst, defaultRetryMax)
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
	Client client.Client
	// Reader reads the SecretSync past the cache (which drops managedFields), to tell the
	// imagePullSecretFor entries the chart applied from those a user added; nil is Client.
	Reader          client.Reader
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

// Reconcile applies the SecretSync unless it exists with the fields Default sets.
func (d *Default) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	cur := &v1alpha1.SecretSync{}
	err := d.Client.Get(ctx, client.ObjectKey{Name: d.Name}, cur)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	case err == nil && d.matches(cur):
		// As the chart wants it (every restart, every status or user-only change): no write.
		// Unless it lists a ServiceAccount the chart applied and no longer lists: the apply
		// (imagePullSecretFor is a set) removes it, and keeps those a user added.
		if dropped, err := d.dropsAServiceAccount(ctx, cur); err != nil || !dropped {
			return reconcile.Result{}, err
		}
	}
	// Force: the fields in this object are the chart's, whoever changed them since. Only they
	// are in it, so fields a user added keep their owner and their value.
	//nolint:staticcheck // Apply with an unstructured object needs no generated apply configurations.
	if err := d.Client.Patch(ctx, d.object(), client.Apply, client.FieldOwner(DefaultFieldOwner), client.ForceOwnership); err != nil {
		return reconcile.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Default SecretSync applied", "sourceNamespace", d.SourceNamespace, "type", d.Type)
	return reconcile.Result{}, nil
}

// dropsAServiceAccount reports whether cur lists in imagePullSecretFor a ServiceAccount that
// Default's field manager applied and that the chart no longer names. Only a SecretSync that
// lists more than the chart names is read again (past the cache, for its managedFields).
func (d *Default) dropsAServiceAccount(ctx context.Context, cur *v1alpha1.SecretSync) (bool, error) {
	extra := slices.DeleteFunc(slices.Clone(cur.Spec.ImagePullSecretFor), func(n string) bool {
		return slices.Contains(d.ImagePullSecretFor, n)
	})
	if len(extra) == 0 {
		return false, nil
	}
	live := &v1alpha1.SecretSync{}
	if err := cmp.Or[client.Reader](d.Reader, d.Client).Get(ctx, client.ObjectKey{Name: d.Name}, live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	applied := appliedServiceAccounts(live.ManagedFields)
	return slices.ContainsFunc(extra, func(n string) bool { return applied[n] }), nil
}

// appliedServiceAccounts returns the imagePullSecretFor entries DefaultFieldOwner's apply owns,
// read from managedFields: in FieldsV1 a set's item is the key `v:<item as JSON>`.
func appliedServiceAccounts(fields []metav1.ManagedFieldsEntry) map[string]bool {
	out := map[string]bool{}
	for _, f := range fields {
		if f.Manager != DefaultFieldOwner || f.Operation != metav1.ManagedFieldsOperationApply || f.FieldsV1 == nil {
			continue
		}
		var tree struct {
			// store: per pass; paid by the manager's own apply (its managed fields).
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(f.FieldsV1.GetRawBytes(), &tree) != nil {
			continue
		}
		var items map[string]json.RawMessage
		if json.Unmarshal(tree.Spec["f:imagePullSecretFor"], &items) != nil {
			continue
		}
		for k := range items {
			var name string
			if v, ok := strings.CutPrefix(k, "v:"); ok && json.Unmarshal([]byte(v), &name) == nil {
				out[name] = true
			}
		}
	}
	return out
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

// matches reports whether the SecretSync already has the fields Default applies.
func (d *Default) matches(cur *v1alpha1.SecretSync) bool {
	src := cur.Spec.Source
	if src.Namespace != d.SourceNamespace || string(src.Type) != d.Type || src.Name != d.SourceName {
		return false
	}
	if d.SourceName == "" && (src.Selector == nil || len(src.Selector.MatchLabels) > 0 || len(src.Selector.MatchExpressions) > 0) {
		return false
	}
	for _, n := range d.ImagePullSecretFor {
		if !slices.Contains(cur.Spec.ImagePullSecretFor, n) {
			return false
		}
	}
	return true
}
