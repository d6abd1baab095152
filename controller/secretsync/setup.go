package secretsync

import (
	"context"
	"maps"
	"slices"
	"strings"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/fairqueue"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// sourceNamespaceIndex indexes SecretSyncs by spec.source.namespace.
const sourceNamespaceIndex = "spec.source.namespace"

// CacheKinds are the kinds the controller reads through the manager's cache, each with its bound:
// Secrets and ConfigMaps only when they carry our label (copies; never every Secret or ConfigMap
// of the cluster), each in its bounded form (boundCopy); Namespaces and ServiceAccounts trimmed to
// the fields the controller reads; SecretSyncs and CopyRequests without others' metadata.
// limited is a manager limited to a list of namespaces (Reconciler.Namespaces), which reads no
// Namespace (see namespaced.go).
func CacheKinds(limited bool) []cachebounds.Kind {
	managed, _ := labels.NewRequirement(keys.LabelSecretSync, selection.Exists, nil)
	kinds := []cachebounds.Kind{
		{Object: &corev1.Secret{}, Label: labels.NewSelector().Add(*managed), Transform: boundCopy, Bound: "copies only (label " + keys.LabelSecretSync + "); boundCopy: no data (its digest), our keys bounded"},
		{Object: &corev1.ConfigMap{}, Label: labels.NewSelector().Add(*managed), Transform: boundCopy, Bound: "copies only (label " + keys.LabelSecretSync + "); boundCopy: no data (its digest), our keys bounded"},
		{Object: &corev1.Namespace{}, Transform: trimNamespace, Bound: "trimNamespace: identity, labels (set by cluster admins only), phase"},
		{Object: &corev1.ServiceAccount{}, Transform: trimServiceAccount, Bound: "trimServiceAccount: identity, our annotation bounded, the imagePullSecrets entries it names and others up to 2 KiB of names"},
		{Object: &v1alpha1.SecretSync{}, Transform: boundSpecAndStatus, Bound: "boundSpecAndStatus: metadata bounded (cachebounds.BoundedMeta), spec, status"},
		{Object: &v1alpha1.CopyRequest{}, Transform: boundSpecAndStatus, Bound: "boundSpecAndStatus: metadata bounded (cachebounds.BoundedMeta), spec, status (both bounded by the schema)"},
	}
	if limited {
		kinds = slices.DeleteFunc(kinds, func(k cachebounds.Kind) bool { _, ns := k.Object.(*corev1.Namespace); return ns })
	}
	return kinds
}

// boundSpecAndStatus is the SecretSync and CopyRequest caches' transform: the object without the
// labels and annotations others put on it (a tenant's CopyRequest can carry 256 KiB of them; the
// last-applied-configuration annotation repeats the object), which the controllers never read.
// Their status is written by a status update or merge patch, which leaves metadata alone.
func boundSpecAndStatus(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1alpha1.SecretSync:
		return &v1alpha1.SecretSync{TypeMeta: o.TypeMeta, ObjectMeta: cachebounds.BoundedMeta(&o.ObjectMeta), Spec: o.Spec, Status: o.Status}, nil
	case *v1alpha1.CopyRequest:
		return &v1alpha1.CopyRequest{TypeMeta: o.TypeMeta, ObjectMeta: cachebounds.BoundedMeta(&o.ObjectMeta), Spec: o.Spec, Status: o.Status}, nil
	}
	return obj, nil
}

// boundCopy keeps a copy in the cache in its bounded form (propagation.Bounded): no data (its
// digest instead), none of the labels and annotations others add, our own values bounded. Anyone
// who may label an object can put our label on it, so what the cache holds per object must not
// be theirs to decide: a 1 MiB ConfigMap with 256 KiB of annotations costs what a pull secret's
// copy costs (BenchmarkCachedBytes). The reconciler only compares a copy with the wanted one, and
// writes what it owns by a server-side apply (writer.update) that needs nothing else of the copy; a release
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

// maxOtherPullSecretBytes bounds the names of the imagePullSecrets entries a cached
// ServiceAccount keeps besides those our annotation names: a tenant may list 6,000 entries.
const maxOtherPullSecretBytes = 2 << 10

// trimServiceAccount keeps identity, our annotation (bounded) and of imagePullSecrets the entries
// our annotation names (the ones the manager added and may remove) and, in their order, others
// while their names fit in maxOtherPullSecretBytes. A pass decides on this form and, when it
// would change the list, reads the ServiceAccount from the API and computes the patch against
// that (syncPullSecrets): an entry the cache did not keep is neither duplicated nor removed.
func trimServiceAccount(obj any) (any, error) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return obj, nil
	}
	out := &corev1.ServiceAccount{
		// Most ServiceAccounts the controller patches are named default, in every namespace.
		ObjectMeta: metav1.ObjectMeta{Name: intern(sa.Name), Namespace: sa.Namespace, UID: sa.UID, ResourceVersion: sa.ResourceVersion},
	}
	added := map[string]bool{}
	if v, ok := sa.Annotations[keys.AnnotationPullSecrets]; ok {
		for _, n := range strings.Split(v, ",") {
			added[n] = true
		}
		out.Annotations = map[string]string{keys.AnnotationPullSecrets: intern(cachebounds.BoundedValue(v))}
	}
	otherBytes, oursKept := 0, 0
	for _, e := range sa.ImagePullSecrets {
		if !added[e.Name] {
			if otherBytes += len(e.Name); otherBytes > maxOtherPullSecretBytes {
				continue
			}
		} else if oursKept++; oursKept > maxPullSecretsOfOurs {
			continue
		}
		out.ImagePullSecrets = append(out.ImagePullSecrets, corev1.LocalObjectReference{Name: intern(e.Name)})
	}
	return out, nil
}

// maxPullSecretsOfOurs bounds the entries kept because our annotation names them (where the
// chart's admission policies are off, a tenant can write that annotation too).
const maxPullSecretsOfOurs = 64

// WatchedObjects lists the kinds SetupWithManager watches through the manager's cache, so the
// manager can start and sync their informers before it campaigns for the lease. The source
// Secrets are not among them: Sources keeps an informer per source namespace of its own. A
// manager limited to namespaces (limited) watches no Namespace.
func WatchedObjects(limited bool) []client.Object {
	if limited {
		return []client.Object{&v1alpha1.SecretSync{}, &v1alpha1.CopyRequest{}, &corev1.Secret{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}}
	}
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
	r.wholePasses = make(chan event.GenericEvent, 64)
	r.namespacePasses = make(chan event.GenericEvent, 64)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.SecretSync{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	if len(r.Namespaces) == 0 {
		// Limited to namespaces, the list is the namespaces (namespaced.go): nothing to watch.
		b = b.Watches(&corev1.Namespace{}, r.namespaceEvents(), builder.WithPredicates(namespacePredicate()))
	}
	c, err := b.
		Watches(&corev1.Secret{}, r.copyEvents(secretKind)).
		Watches(&corev1.ConfigMap{}, r.copyEvents(configMapKind)).
		Watches(&corev1.ServiceAccount{}, r.serviceAccountEvents(), builder.WithPredicates(serviceAccountPredicate())).
		WatchesRawSource(source.Channel(r.wholePasses, wholePassEvents())).
		WatchesRawSource(source.Channel(r.namespacePasses, namespacePassEvents())).
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

// forCopy maps a copy to the pass of its namespace of the SecretSync named by its label (old
// and new label both arrive on an update, so a relabelled copy wakes both).
func forCopy(_ context.Context, o client.Object) []reconcile.Request {
	if n := o.GetLabels()[keys.LabelSecretSync]; n != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: n}}}
	}
	return nil
}

// copyEvents maps a copy's events to the pass of its namespace of the SecretSync named by its
// label (forCopy): an edited or deleted copy is put back by a pass that reads and plans that one
// namespace, not every target (settleCopyPass then keeps the status true). When the copy is
// deleted or its label changes, the event also wakes the whole passes of the SecretSyncs waiting
// for its target (a rename: the old SecretSync's copies go, and the new one takes the targets at
// once rather than at its next conflict recheck). The informer's initial list queues whole
// passes (one per SecretSync serves every copy), as namespaceEvents does.
func (r *Reconciler) copyEvents(kind *objectKind) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
		for _, req := range reqs {
			if req.Namespace != "" {
				r.copyPasses.Store(req, true)
			}
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				for _, req := range forCopy(ctx, e.Object) {
					q.Add(wholePass(req.Name))
				}
				return
			}
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

// wholePassEvents queues the whole passes a pass of one namespace asks for (wakeWholePass),
// after wholePassDelay: the copies of a burst share one.
func wholePassEvents() handler.EventHandler {
	return handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.AddAfter(wholePass(e.Object.GetName()), wholePassDelay)
		},
	}
}

// namespacePassEvents queues the passes of one namespace a whole pass asks for
// (queueNamespacePasses), after serviceAccountBatchPause: the whole pass wrote that namespace's
// first batch. The event's object carries the SecretSync's name and the namespace.
func namespacePassEvents() handler.EventHandler {
	return handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}}, serviceAccountBatchPause)
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
// our annotation change, the pass of its namespace of every SecretSync that selects it (by name
// or "*") or may have an entry on it: a new namespace's ServiceAccount is filled without a pass over every
// other namespace. The informer's initial list queues the whole passes instead (once each).
func (r *Reconciler) serviceAccountEvents() handler.EventHandler {
	enqueue := func(ctx context.Context, sa client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], initial bool) {
		for _, req := range r.forServiceAccount(ctx, sa) {
			if !initial {
				req.Namespace = sa.GetNamespace()
				if _, batching := r.batching.Load(req); batching {
					// Its next batch is due after the pause anyway (serviceAccountBatchPause).
					q.AddAfter(req, serviceAccountBatchPause)
					continue
				}
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
		if ours || propagation.AccountsFor(list.Items[i].Spec.ImagePullSecretFor).Selects(o.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}
