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

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/fairqueue"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// sourceNamespaceIndex indexes SecretSyncs by spec.source.namespace.
const sourceNamespaceIndex = "spec.source.namespace"

// CacheKinds are the kinds the controller reads and watches through the manager's cache (the
// manager warms each before it campaigns for the lease), each with its bound:
// Secrets and ConfigMaps only when they carry our label (copies; never every Secret or ConfigMap
// of the cluster), each in its bounded form (boundCopy); Namespaces and ServiceAccounts trimmed to
// the fields the controller reads; SecretSyncs and CopyRequests without others' metadata. The
// source Secrets are not among them: Sources keeps a cache per source namespace of its own.
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

// TargetName is the target controller's name (the controller label of its work queue's and
// reconciles' metrics): its requests are {Namespace, Name}, one SecretSync in one namespace.
const TargetName = Name + "-target"

// SetupWithManager wires the two controllers of a SecretSync: the SecretSync's own (requests
// {Name}: every target in step, then the status) and the target controller (requests
// {Namespace, Name}: one namespace, no status). Both watch namespaces, our copies (Secrets and
// ConfigMaps) and ServiceAccounts; the SecretSync's own also watches SecretSyncs and (through
// Sources) the sources. An event that queues a target pass queues the SecretSync's pass too,
// a little later, to count it in the status: nothing passes between them but the API's events
// and the per-target memories the passes share.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.SecretSync{}, sourceNamespaceIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.SecretSync).Spec.Source.Namespace}
	}); err != nil {
		return err
	}
	r.Sources.Handler = handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.secretSyncs(ctx, o, nil, client.MatchingFields{sourceNamespaceIndex: o.GetNamespace()})
	})
	opts := controller.Options{MaxConcurrentReconciles: workers, NewQueue: fairqueue.NewQueue}
	whole := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.SecretSync{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	target := ctrl.NewControllerManagedBy(mgr).Named(TargetName)
	watch := func(obj client.Object, w, t handler.Funcs, opts ...builder.WatchesOption) {
		whole, target = whole.Watches(obj, w, opts...), target.Watches(obj, t, opts...)
	}
	if len(r.Namespaces) == 0 {
		// Limited to namespaces, the list is the namespaces (namespaced.go): nothing to watch.
		w, t := r.namespacePasses()
		watch(&corev1.Namespace{}, w, t, builder.WithPredicates(namespacePredicate()))
	}
	w, t := r.copyPasses(secretKind)
	watch(&corev1.Secret{}, w, t)
	w, t = r.copyPasses(configMapKind)
	watch(&corev1.ConfigMap{}, w, t)
	w, t = r.serviceAccountPasses()
	watch(&corev1.ServiceAccount{}, w, t, builder.WithPredicates(serviceAccountPredicate()))
	c, err := whole.WithOptions(opts).Build(r)
	if err != nil {
		return err
	}
	if err := target.WithOptions(opts).Complete(reconcile.Func(r.ReconcileTarget)); err != nil {
		return err
	}
	r.Sources.SetController(c)
	return mgr.Add(r.Sources)
}

// wholePassDelay is how long after a namespace event the SecretSync's pass runs, to write the
// status. Namespaces created in a burst share one pass per SecretSync and delay: at 10,000
// namespaces that pass plans 10,000 copies, a target pass one.
const wholePassDelay = time.Second

// copyPassDelay is how long after a copy's event the SecretSync's pass runs, to write the
// status. A tenant can edit or delete the copies in its namespace as often as it likes: each
// event costs a target pass (one copy), and at most one pass over every target per
// copyPassDelay per SecretSync (about 0.16 s of CPU at 10,000 namespaces).
const copyPassDelay = 5 * time.Second

// queue queues what one object of an event asks for; initial is set for the objects of the
// informer's initial list (a start, or a new informer).
type queue func(ctx context.Context, o client.Object, initial bool, q workqueue.TypedRateLimitingInterface[reconcile.Request])

// perObject is the handler that calls each for the object of a create or a delete, and for the
// new object of an update, and also for the old one when old is set (a label or an annotation of
// ours removed is seen on the old one only). A namespace's handlers read only its name, the same
// in both: calling them for the old one too would list every SecretSync twice per update.
func perObject(old bool, each queue) handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			each(ctx, e.Object, e.IsInInitialList, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if old {
				each(ctx, e.ObjectOld, false, q)
			}
			each(ctx, e.ObjectNew, false, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			each(ctx, e.Object, false, q)
		},
	}
}

// passes is the pair of handlers of one watched kind, the SecretSync controller's (whole) and
// the target controller's: for an event of o, names lists the whole passes of the SecretSyncs it
// concerns, and in is the namespace whose target passes it queues. The informer's initial list
// (a start, or a new informer) queues the whole passes at once, one per SecretSync serving every
// object, and no target pass (10,000 of them at 10,000 namespaces). A later event queues the
// target pass of in at once, a pass that reads and plans that one namespace, not every target;
// a namespace between batches of its ServiceAccounts (our own writes' events among these) after
// the pause. When later is set it also queues the whole pass after later, to count what the
// target pass did in the status. old is perObject's.
func (r *Reconciler) passes(old bool, later time.Duration, names func(context.Context, client.Object) []reconcile.Request, in func(client.Object) string) (whole, target handler.Funcs) {
	whole = perObject(old, func(ctx context.Context, o client.Object, initial bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if !initial && later == 0 {
			return
		}
		for _, req := range names(ctx, o) {
			if initial {
				q.Add(req)
			} else {
				q.AddAfter(req, later)
			}
		}
	})
	target = perObject(old, func(ctx context.Context, o client.Object, initial bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if initial {
			return
		}
		for _, whole := range names(ctx, o) {
			r.queueTarget(q, targetRequest(in(o), whole.Name))
		}
	})
	return whole, target
}

// queueTarget queues the target pass req: at once, or after the pause when its namespace is
// between batches of its ServiceAccounts.
func (r *Reconciler) queueTarget(q workqueue.TypedRateLimitingInterface[reconcile.Request], req reconcile.Request) {
	if _, batching := r.targets.batches.load(batchOf(req.Namespace, req.Name)); batching {
		q.AddAfter(req, serviceAccountBatchPause)
		return
	}
	q.Add(req)
}

// namespacePasses are the handlers of a namespace created, relabelled or deleted (passes): the
// target pass of that namespace for every SecretSync, so a new namespace gets its copies without
// waiting for a pass over every other namespace, and every SecretSync's whole pass after
// wholePassDelay.
func (r *Reconciler) namespacePasses() (whole, target handler.Funcs) {
	return r.passes(false, wholePassDelay, func(ctx context.Context, ns client.Object) []reconcile.Request {
		return r.secretSyncs(ctx, ns, nil)
	}, client.Object.GetName)
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

// secretSyncs are the requests of the SecretSyncs the list finds (opts narrow it) that keep
// keeps (nil: all), for an event of o.
func (r *Reconciler) secretSyncs(ctx context.Context, o client.Object, keep func(*v1alpha1.SecretSync) bool, opts ...client.ListOption) []reconcile.Request {
	list := &v1alpha1.SecretSyncList{}
	if err := r.Client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		// The cache-backed list fails only while the cache is stopping; the periodic resync
		// brings the event's effect back, so say so rather than fail silently.
		ctrl.LoggerFrom(ctx).Error(err, "Listing SecretSyncs to map an event failed; it waits for the next resync", "object", klog.KObj(o))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// copyName is the SecretSync a copy's label names ("" for none).
func copyName(o client.Object) string { return o.GetLabels()[keys.LabelSecretSync] }

// copyPasses are the handlers of a copy's events (passes), for the SecretSync its label names
// (old and new label both, on an update: a relabelled copy counts for both): an edited or
// deleted copy is put back by the target pass of its namespace, and the whole pass after
// copyPassDelay counts it. When the copy is deleted or its label changes, the event also queues
// at once the target passes of its namespace of the SecretSyncs whose status says they wait for
// its target (a rename: the old SecretSync's copies go, and the new one takes the targets at
// once rather than at its next conflict recheck).
func (r *Reconciler) copyPasses(kind *objectKind) (whole, target handler.Funcs) {
	whole, target = r.passes(true, copyPassDelay, func(_ context.Context, o client.Object) []reconcile.Request {
		if n := copyName(o); n != "" {
			return []reconcile.Request{wholePass(n)}
		}
		return nil
	}, client.Object.GetNamespace)
	wake := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		for _, req := range r.waitingFor(ctx, kind, o) {
			r.queueTarget(q, targetRequest(o.GetNamespace(), req.Name))
		}
	}
	update, remove := target.UpdateFunc, target.DeleteFunc
	target.UpdateFunc = func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		update(ctx, e, q)
		if copyName(e.ObjectOld) != copyName(e.ObjectNew) {
			wake(ctx, q, e.ObjectNew)
		}
	}
	target.DeleteFunc = func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		remove(ctx, e, q)
		wake(ctx, q, e.Object)
	}
	return whole, target
}

// waitingFor returns the SecretSyncs of kind whose status says another owner's copy holds the
// target o occupies: a Conflict failure names it, or the status lists fewer conflicts than it
// counts (status.failures is bounded), so the target may be one not listed. What the whole
// pass wrote is the record: no memory of its own, and a new leader reads the same.
func (r *Reconciler) waitingFor(ctx context.Context, kind *objectKind, o client.Object) []reconcile.Request {
	return r.secretSyncs(ctx, o, func(ss *v1alpha1.SecretSync) bool {
		if kindOf(ss.Spec.Source.Kind) != kind || ss.Name == copyName(o) {
			return false
		}
		listed := 0
		for _, f := range ss.Status.Failures {
			if f.Reason != copyplan.ReasonConflict {
				continue
			}
			if f.Namespace == o.GetNamespace() && f.Name == o.GetName() {
				return true
			}
			listed++
		}
		return int(ss.Status.Conflicts) > listed
	})
}

// serviceAccountPasses are the handlers of a ServiceAccount that appears or whose
// imagePullSecrets or our annotation change (passes): the target pass of its namespace of every
// SecretSync that selects it (by name or "*") or may have an entry on it, so a new namespace's
// ServiceAccount is filled without a pass over every other namespace. The informer's initial list
// queues the whole pass of each such SecretSync (once each).
func (r *Reconciler) serviceAccountPasses() (whole, target handler.Funcs) {
	return r.passes(true, 0, func(ctx context.Context, o client.Object) []reconcile.Request {
		ours := o.GetAnnotations()[keys.AnnotationPullSecrets] != ""
		return r.secretSyncs(ctx, o, func(ss *v1alpha1.SecretSync) bool {
			return ours || propagation.AccountsFor(ss.Spec.ImagePullSecretFor).Selects(o.GetName())
		})
	}, client.Object.GetNamespace)
}
