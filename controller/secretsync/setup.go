package secretsync

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/fairqueue"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// sourceNamespaceIndex indexes SecretSyncs by spec.source.namespace.
const sourceNamespaceIndex = "spec.source.namespace"

// CacheByObject is the manager cache configuration the controller needs: Secrets and ConfigMaps
// only when they carry our label (copies; never every Secret or ConfigMap of the cluster), each
// in its bounded form (boundCopy), and Namespaces and ServiceAccounts trimmed to the fields the
// controller reads.
func CacheByObject() map[client.Object]cache.ByObject {
	managed, _ := labels.NewRequirement(keys.LabelSecretSync, selection.Exists, nil)
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}:         {Label: labels.NewSelector().Add(*managed), Transform: boundCopy},
		&corev1.ConfigMap{}:      {Label: labels.NewSelector().Add(*managed), Transform: boundCopy},
		&corev1.Namespace{}:      {Transform: trimNamespace},
		&corev1.ServiceAccount{}: {Transform: trimServiceAccount},
	}
}

// boundCopy keeps a copy in the cache in its bounded form (propagation.Bounded): no data (its
// digest instead), none of the labels and annotations others add, our own values bounded. Anyone
// who may label an object can put our label on it, so what the cache holds per object must not
// be theirs to decide: a 1 MiB ConfigMap with 256 KiB of annotations costs what a pull secret's
// copy costs (BenchmarkCachedBytes). The reconciler only compares a copy with the wanted one, and
// writes what it owns by a patch (writer.update) that needs nothing else of the copy; a release
// patches metadata.
func boundCopy(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Secret:
		b := propagation.Bounded(o)
		b.Type = corev1.SecretType(intern(string(b.Type)))
		internCopyMeta(&b.ObjectMeta)
		return b, nil
	case *corev1.ConfigMap:
		b := propagation.BoundedConfigMap(o)
		internCopyMeta(&b.ObjectMeta)
		return b, nil
	}
	return obj, nil
}

func trimNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	// Label keys repeat in every namespace, and so do most values (team, environment); the
	// value of kubernetes.io/metadata.name is the name, which it shares instead.
	for k, v := range ns.Labels {
		if v == ns.Name {
			v = ns.Name
		} else {
			v = intern(v)
		}
		ns.Labels[intern(k)] = v
	}
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels, DeletionTimestamp: ns.DeletionTimestamp},
		Status:     corev1.NamespaceStatus{Phase: ns.Status.Phase},
	}, nil
}

// trimServiceAccount keeps identity, imagePullSecrets and only our annotation: the controller
// patches ServiceAccounts with a merge patch computed from this trimmed object, which touches
// exactly the fields that differ.
func trimServiceAccount(obj any) (any, error) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return obj, nil
	}
	out := &corev1.ServiceAccount{
		// Most ServiceAccounts the controller patches are named default, in every namespace.
		ObjectMeta:       metav1.ObjectMeta{Name: intern(sa.Name), Namespace: sa.Namespace, UID: sa.UID, ResourceVersion: sa.ResourceVersion},
		ImagePullSecrets: sa.ImagePullSecrets,
	}
	for i := range out.ImagePullSecrets {
		out.ImagePullSecrets[i].Name = intern(out.ImagePullSecrets[i].Name)
	}
	if v, ok := sa.Annotations[keys.AnnotationPullSecrets]; ok {
		out.Annotations = map[string]string{keys.AnnotationPullSecrets: intern(v)}
	}
	return out, nil
}

// WatchedObjects lists the kinds SetupWithManager watches through the manager's cache, so the
// manager can start and sync their informers before it campaigns for the lease. The source
// Secrets are not among them: Sources keeps an informer per source namespace of its own.
func WatchedObjects() []client.Object {
	return []client.Object{&v1alpha1.SecretSync{}, &v1alpha1.CopyRequest{}, &corev1.Namespace{}, &corev1.Secret{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}}
}

// SetupWithManager wires the controller: it watches SecretSyncs, namespaces, our copies (Secrets
// and ConfigMaps), ServiceAccounts and (through Sources) the sources.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.SecretSync{}, sourceNamespaceIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.SecretSync).Spec.Source.Namespace}
	}); err != nil {
		return err
	}
	r.Sources.Handler = handler.EnqueueRequestsFromMapFunc(r.forSourceSecret)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.SecretSync{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.Namespace{}, r.namespaceEvents(), builder.WithPredicates(namespacePredicate())).
		Watches(&corev1.Secret{}, r.copyEvents(secretKind)).
		Watches(&corev1.ConfigMap{}, r.copyEvents(configMapKind)).
		Watches(&corev1.ServiceAccount{}, r.serviceAccountEvents(), builder.WithPredicates(serviceAccountPredicate())).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, NewQueue: fairqueue.NewQueue}).
		Build(r)
	if err != nil {
		return err
	}
	r.Sources.SetController(c)
	return mgr.Add(r.Sources)
}

// wholePassDelay is how long after a namespace event the whole pass of each SecretSync runs, to
// write the status. Namespaces created in a burst share one whole pass per SecretSync and delay:
// at 10,000 namespaces a whole pass plans 10,000 copies, one namespace's pass one.
const wholePassDelay = time.Second

// namespaceEvents queues, for a namespace created, relabelled or deleted, the pass of that one
// namespace of every SecretSync at once (a new namespace gets its copies without waiting for a
// pass over every other namespace) and the whole pass of each after wholePassDelay.
func (r *Reconciler) namespaceEvents() handler.EventHandler {
	enqueue := func(ctx context.Context, ns client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, whole := range r.all(ctx, ns) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns.GetName(), Name: whole.Name}})
			q.AddAfter(whole, wholePassDelay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				// A start (or a new informer) lists every namespace: one whole pass per
				// SecretSync serves them all, not one pass per namespace.
				for _, whole := range r.all(ctx, e.Object) {
					q.Add(whole)
				}
				return
			}
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// namespacePredicate passes namespace events that can change the target set.
func namespacePredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// serviceAccountPredicate passes ServiceAccounts appearing and changes of their imagePullSecrets.
func serviceAccountPredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.ServiceAccount), e.ObjectNew.(*corev1.ServiceAccount)
			return !slices.Equal(o.ImagePullSecrets, n.ImagePullSecrets) ||
				o.Annotations[keys.AnnotationPullSecrets] != n.Annotations[keys.AnnotationPullSecrets]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func (r *Reconciler) all(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.SecretSyncList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		// The cache-backed list fails only while the cache is stopping; the periodic resync
		// brings the event's effect back, so say so rather than fail silently.
		ctrl.LoggerFrom(ctx).Error(err, "Listing SecretSyncs to map an event failed; it waits for the next resync", "object", klog.KObj(o))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// forCopy maps a copy to the SecretSync named by its label (old and new label both arrive on
// an update, so a relabelled copy wakes both).
func forCopy(_ context.Context, o client.Object) []reconcile.Request {
	if n := o.GetLabels()[keys.LabelSecretSync]; n != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n}}}
	}
	return nil
}

// copyEvents maps a copy's events to the SecretSync named by its label (forCopy) and, when the
// copy is deleted or its label changes, to the SecretSyncs waiting for its target (a rename:
// the old SecretSync's copies go, and the new one takes the targets at once rather than at
// its next conflict recheck).
func (r *Reconciler) copyEvents(kind *objectKind) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
		for _, req := range reqs {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, forCopy(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, forCopy(ctx, e.ObjectOld))
			add(q, forCopy(ctx, e.ObjectNew))
			if e.ObjectOld.GetLabels()[keys.LabelSecretSync] != e.ObjectNew.GetLabels()[keys.LabelSecretSync] {
				add(q, r.waitingFor(kind, e.ObjectNew))
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, forCopy(ctx, e.Object))
			add(q, r.waitingFor(kind, e.Object))
		},
	}
}

// recordWaiting remembers the targets a whole pass of the SecretSync found held by another
// owner's copy (conflicts), for copyEvents.
func (r *Reconciler) recordWaiting(name string, kind *objectKind, conflicts []v1alpha1.TargetFailure) {
	if len(conflicts) == 0 {
		r.waiting.Delete(name)
		return
	}
	m := make(map[targetKey]bool, len(conflicts))
	for _, c := range conflicts {
		m[targetKey{kind.name, types.NamespacedName{Namespace: c.Namespace, Name: c.Name}}] = true
	}
	r.waiting.Store(name, m)
}

// waitingFor returns the whole passes of the SecretSyncs waiting for the target o occupies.
func (r *Reconciler) waitingFor(kind *objectKind, o client.Object) []reconcile.Request {
	tk := targetKey{kind.name, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
	var out []reconcile.Request
	r.waiting.Range(func(name, v any) bool {
		if v.(map[targetKey]bool)[tk] {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name.(string)}})
		}
		return true
	})
	return out
}

// serviceAccountEvents queues, for a ServiceAccount that appears or whose imagePullSecrets or
// our annotation change, the pass of its namespace of every SecretSync that names it or may
// have an entry on it: a new namespace's ServiceAccount is filled without a pass over every
// other namespace. The informer's initial list queues the whole passes instead (once each).
func (r *Reconciler) serviceAccountEvents() handler.EventHandler {
	enqueue := func(ctx context.Context, sa client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], initial bool) {
		for _, req := range r.forServiceAccount(ctx, sa) {
			if !initial {
				req.Namespace = sa.GetNamespace()
			}
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q, e.IsInInitialList)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// Both: an annotation of ours removed is seen on the old object only.
			enqueue(ctx, e.ObjectOld, q, false)
			enqueue(ctx, e.ObjectNew, q, false)
		},
	}
}

func (r *Reconciler) forSourceSecret(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.SecretSyncList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{sourceNamespaceIndex: o.GetNamespace()}, client.UnsafeDisableDeepCopy); err != nil {
		// The cache-backed list fails only while the cache is stopping; the periodic resync
		// brings the event's effect back, so say so rather than fail silently.
		ctrl.LoggerFrom(ctx).Error(err, "Listing SecretSyncs to map an event failed; it waits for the next resync", "object", klog.KObj(o))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

func (r *Reconciler) forServiceAccount(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.SecretSyncList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		// The cache-backed list fails only while the cache is stopping; the periodic resync
		// brings the event's effect back, so say so rather than fail silently.
		ctrl.LoggerFrom(ctx).Error(err, "Listing SecretSyncs to map an event failed; it waits for the next resync", "object", klog.KObj(o))
		return nil
	}
	ours := o.GetAnnotations()[keys.AnnotationPullSecrets] != ""
	var out []reconcile.Request
	for i := range list.Items {
		if ours || slices.Contains(list.Items[i].Spec.ImagePullSecretFor, o.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}
