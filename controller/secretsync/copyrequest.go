package secretsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/fairqueue"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/logic/writeerror"
	"github.com/platform-operators/platform-operators/controller/propagation"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=copyrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=copyrequests/status,verbs=get;update;patch

// RequestControllerName names the CopyRequest controller in logs and metrics. It runs with the
// secretsync controller (--controllers=secretsync): pull mode is the same copy, asked for by a
// tenant.
const RequestControllerName = "copyrequest"

// requestSourceIndex indexes CopyRequests by the source they name ("Kind/namespace/name").
const requestSourceIndex = "spec.source"

// RequestReconciler brings the copy a CopyRequest asks for in step, or refuses it.
//
// Threat model (docs/secretsync.md): the tenant who writes a CopyRequest has namespaced RBAC
// only. The copy lands in the CopyRequest's own namespace and only when the source carries the
// owner's offer for that namespace; a source that does not exist and one that is not offered get
// the same answer, so a request cannot probe for names; no object the add-on does not manage is
// ever written; the copy holds the source's data and nothing of its metadata.
type RequestReconciler struct {
	Clock  clock.PassiveClock
	Client client.Client
	// APIReader reads past the caches: to look at an object we do not manage (a conflict).
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Offered caches the metadata (bounded) of the Secrets and ConfigMaps that carry the offer
	// label, cluster-wide, and nothing else; Copies caches the copies made for CopyRequests, in
	// their bounded form. Both are built by NewRequestCaches.
	Offered, Copies cache.Cache
	// Proofs signs the copies and tells the manager's own from objects that only carry its label
	// (LoadOwnershipKey). Required.
	Proofs *propagation.Prover
	// LabelProof: as the Reconciler's.
	LabelProof *PolicyProof
	// ConflictRecheck is how soon a request whose target is held by someone else looks again
	// (zero: DefaultConflictRecheck); RejectedRecheck the same for a copy the API refused.
	ConflictRecheck, RejectedRecheck time.Duration
	// Protected names the manager's own secrets, never copied whoever offers them
	// (propagation.Withheld).
	Protected propagation.Protected
	// RetryBase and RetryCap bound the other retries, as the Reconciler's (see backoff.go).
	RetryBase, RetryCap time.Duration
	// Reads remembers the whole reads of sources by resourceVersion, shared with the SecretSync
	// controller's Sources: the requests that one event on a source wakes read it once. Required.
	Reads *SourceReads

	targets targets
	// stale counts, per CopyRequest, its retries in a row after a stale cache (see backoff.go).
	stale backoff
}

// NewRequestCaches builds the two label-selected caches of the CopyRequest controller. Any tenant
// can put either label on its objects, so neither holds data or a tenant's metadata: the offers
// are watched as metadata only (the API server sends no data, see offerMetadata) and bounded
// (boundOffer); the copies are bounded as the SecretSync's are (boundCopy). The source of a copy
// is read from the API when a copy is written.
func NewRequestCaches(mgr ctrl.Manager, namespaces []string) (offered, copies cache.Cache, err error) {
	// A manager limited to namespaces may list Secrets and ConfigMaps only there.
	opts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultNamespaces: cachebounds.InNamespaces(namespaces)}
	build := func(name, label string, kinds []cachebounds.Kind) (cache.Cache, error) {
		req, err := labels.NewRequirement(label, selection.Exists, nil)
		if err != nil {
			return nil, err
		}
		for i := range kinds {
			kinds[i].Label = labels.NewSelector().Add(*req)
		}
		return cachebounds.New(mgr.GetConfig(), cachebounds.Inventory{Name: name, Kinds: kinds}, opts)
	}
	var offers, made []cachebounds.Kind
	for _, kind := range kinds {
		offers = append(offers, cachebounds.Kind{Object: offerMetadata(kind), Transform: boundOffer,
			Bound: "offers only (label " + keys.LabelOffer + "), metadata only; boundOffer: identity, our keys bounded"})
		made = append(made, cachebounds.Kind{Object: kind.object(), Transform: boundCopy, Bound: "copies only (label " + keys.LabelCopyRequest + "); boundCopy"})
	}
	if offered, err = build("copyrequest-offers", keys.LabelOffer, offers); err != nil {
		return nil, nil, err
	}
	if copies, err = build("copyrequest-copies", keys.LabelCopyRequest, made); err != nil {
		return nil, nil, err
	}
	for _, c := range []cache.Cache{offered, copies} {
		if err := mgr.Add(c); err != nil {
			return nil, nil, err
		}
	}
	return offered, copies, nil
}

// offerMetadata is the metadata-only form of kind, as the offers cache watches it.
func offerMetadata(kind *objectKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(kind.name)))
	return m
}

// boundOffer keeps of an offer's metadata its bounded form (propagation.Bounded): identity, our
// labels, the offer's namespaces (a list longer than the bound as its digest, see
// propagation.MayBeOffered).
func boundOffer(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	b := propagation.Bounded(&corev1.Secret{ObjectMeta: m.ObjectMeta})
	internCopyMeta(&b.ObjectMeta)
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: b.ObjectMeta}, nil
}

// SetupWithManager wires the controller: CopyRequests, the offered sources and the copies.
func (r *RequestReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.CopyRequest{}, requestSourceIndex, func(o client.Object) []string {
		return []string{requestSourceKey(o.(*v1alpha1.CopyRequest).Spec.Source)}
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(RequestControllerName).
		For(&v1alpha1.CopyRequest{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, NewQueue: fairqueue.NewQueue})
	for _, kind := range kinds {
		b = b.WatchesRawSource(source.Kind[client.Object](r.Offered, offerMetadata(kind), handler.EnqueueRequestsFromMapFunc(r.forSource(kind)))).
			WatchesRawSource(source.Kind[client.Object](r.Copies, kind.object(), handler.EnqueueRequestsFromMapFunc(forRequestCopy)))
	}
	return b.Complete(r)
}

func requestSourceKey(s v1alpha1.CopyRequestSource) string {
	return string(cmp.Or(s.Kind, v1alpha1.CopyKindSecret)) + "/" + s.Namespace + "/" + s.Name
}

// forSource maps an offered source to the CopyRequests that name it.
func (r *RequestReconciler) forSource(kind *objectKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &v1alpha1.CopyRequestList{}
		key := requestSourceKey(v1alpha1.CopyRequestSource{Kind: kind.name, Namespace: o.GetNamespace(), Name: o.GetName()})
		if err := r.Client.List(ctx, list, client.MatchingFields{requestSourceIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing CopyRequests to map an event failed; it waits for the next resync", "source", key)
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	}
}

// forRequestCopy maps a copy to the CopyRequest named by its label, in its namespace.
func forRequestCopy(_ context.Context, o client.Object) []reconcile.Request {
	if n := o.GetLabels()[keys.LabelCopyRequest]; n != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: n}}}
	}
	return nil
}

// requestOutcome is what a CopyRequest reconcile found and did.
type requestOutcome struct {
	reason, message string
	copy            string
	wrote           bool
	requeueAfter    time.Duration
	err             error
}

// Reconcile implements reconcile.Reconciler.
func (r *RequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cr := &v1alpha1.CopyRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, cr); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Gone: its copies go now (the garbage collector would, through their owner
		// reference, but it may be slow or, in a test bed, absent). An object left for want
		// of a proof is nobody's to report to: no need to look again.
		out := r.sync(ctx, req.NamespacedName, nil, nil)
		if out.reason == copyplan.ReasonConflict {
			out.requeueAfter = 0
		}
		if out.requeueAfter == 0 {
			r.stale.forget(req.NamespacedName)
		}
		// What was remembered of its targets (a refused write, a foreign object in the way)
		// goes with it: a tenant who creates and deletes requests whose copies are refused
		// leaves nothing behind in the manager.
		r.targets.forget(req.Namespace, req.Name)
		return requeue(out.requeueAfter), out.err
	}
	if !cr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector takes the copies with it
	}

	kind := kindOf(cr.Spec.Source.Kind)
	name := cmp.Or(cr.Spec.Name, cr.Spec.Source.Name)
	srcKey := types.NamespacedName{Namespace: cr.Spec.Source.Namespace, Name: cr.Spec.Source.Name}
	src, err := r.offeredSource(ctx, kind, srcKey, cr.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	var want *corev1.Secret
	if src != nil {
		want = propagation.Requested(src, cr.Namespace, name, cr.Name)
		want.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "CopyRequest", Name: cr.Name, UID: cr.UID, Controller: ptr.To(true),
		}}
		r.Proofs.Prove(want, requestOwner(cr.Name))
	}
	out := r.sync(ctx, req.NamespacedName, want, kind)
	if want != nil && out.copy == "" && out.reason == "" && out.requeueAfter == 0 && out.err == nil {
		// Not in step and nothing to wait for (a namespace that started terminating, which a
		// tenant can hold open): look again with backoff, never in a fixed short loop.
		out.requeueAfter = r.stale.next(req.NamespacedName, r.RetryBase, r.RetryCap)
	}
	if want == nil && out.err == nil {
		// The same answer for a source that does not exist and one not offered here: a
		// request must not tell a tenant which names exist in a namespace it cannot read.
		out.reason = copyplan.ReasonNotOffered
		out.message = fmt.Sprintf("%s %s does not exist or is not offered to namespace %s; its owner offers it with the label %s=true and the annotation %s listing this namespace",
			kind.name, srcKey, cr.Namespace, keys.LabelOffer, keys.AnnotationOfferNamespaces)
	}
	return r.writeRequestStatus(ctx, cr, out)
}

// offeredSource returns the source of kind at key, read whole, when it is offered to namespace;
// nil when it does not exist or is not offered. The offers cache holds metadata only, so it says
// whether to look; the whole object, read once per resourceVersion for every request naming it
// (Reads), decides and gives the data.
func (r *RequestReconciler) offeredSource(ctx context.Context, kind *objectKind, key types.NamespacedName, namespace string) (*corev1.Secret, error) {
	meta := offerMetadata(kind)
	switch err := r.Offered.Get(ctx, key, meta); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if !propagation.MayBeOffered(&corev1.Secret{ObjectMeta: meta.ObjectMeta}, namespace) {
		return nil, nil
	}
	src, err := r.Reads.Read(ctx, namespace, kind, key, meta.ResourceVersion)
	if err != nil || src == nil {
		return nil, err
	}
	if !propagation.Offered(src, namespace) {
		return nil, nil
	}
	// An offer of the manager's own secrets (or of a cluster credential) is refused like no
	// offer at all: the tenant learns nothing it could not before; the log tells the admin.
	if why := propagation.Withheld(src, r.Protected); why != "" {
		ctrl.LoggerFrom(ctx).Info("An offered source is never copied", "source", key, "why", why)
		return nil, nil
	}
	return src, nil
}

// requestOwner is the Owner of the named CopyRequest's copies, without its proof check.
func requestOwner(name string) propagation.Owner {
	return propagation.Owner{Label: keys.LabelCopyRequest, Name: name, Kind: "CopyRequest"}
}

// sync brings the copies of the request key in line with want (nil: no copy wanted), for every
// kind: a copy of the other kind or another name (the spec changed) is deleted.
func (r *RequestReconciler) sync(ctx context.Context, key types.NamespacedName, want *corev1.Secret, wantKind *objectKind) requestOutcome {
	var out requestOutcome
	// A copy without a valid proof is the manager's only when its data already is what is wanted
	// (adopted); one not wanted is left alone (the garbage collector removes the proven ones with
	// their CopyRequest, through their owner reference).
	owner := requestOwner(key.Name)
	owner.Proven = provenBy(r.Proofs, keys.LabelCopyRequest, r.LabelProof.InForce(ctx))
	w := writer{client: r.Client, reader: r.APIReader, label: keys.LabelCopyRequest, owner: "CopyRequest", name: key.Name, recorder: r.Recorder, targets: &r.targets,
		clock: r.Clock, retryBase: r.RetryBase, retryCap: r.RetryCap, rejectedRecheck: r.RejectedRecheck}
	for _, kind := range kinds {
		list := kind.list()
		if err := r.Copies.List(ctx, list, client.InNamespace(key.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			out.err = err
			return out
		}
		owned, lookup := copiesOf(kind, list, keys.LabelCopyRequest, key.Name)
		var wanted []*corev1.Secret
		if want != nil && kind == wantKind {
			wanted = []*corev1.Secret{want}
		}
		plan := propagation.ComputeFor(owner, wanted, lookup, owned, propagation.PolicyDelete)
		if len(wanted) == 1 && plan.InStep == 1 {
			out.copy = want.Name
		}
		for _, a := range plan.Actions {
			switch a.Op {
			case propagation.OpConflict:
				out.reason, out.message, out.requeueAfter = copyplan.ReasonConflict, a.Message, orDefault(r.ConflictRecheck, DefaultConflictRecheck)
				continue
			case propagation.OpHeld:
				// Reported once (the same status each pass) and looked at with backoff; the
				// copy's deletion brings the create sooner.
				out.reason, out.message, out.requeueAfter = copyplan.ReasonHeld, a.Message, w.noteHeld(w.target(kind, a.Key), a)
				continue
			}
			op, err := w.writeOnce(ctx, kind, a)
			var unmanaged *unmanagedError
			var failed *writeError
			switch {
			case err == nil:
				out.wrote = out.wrote || op != ""
				if a.Want != nil {
					out.copy = a.Want.Name
				}
			case errors.As(err, &unmanaged):
				out.reason, out.message, out.requeueAfter = copyplan.ReasonConflict, unmanaged.Error(), orDefault(r.ConflictRecheck, DefaultConflictRecheck)
			case errors.As(err, &failed):
				out.reason, out.message, out.requeueAfter = failed.reason, failed.Error(), failed.wait
			case writeerror.Classify(err) == writeerror.NamespaceTerminating:
				// The namespace, and the request with it, is going away.
			default: // a stale cache: the event that follows brings us back, or this retry
				out.requeueAfter = r.stale.next(key, r.RetryBase, r.RetryCap)
			}
		}
	}
	return out
}

// writeRequestStatus records the outcome in status (only when it changed) and tells the tenant
// about a new refusal with a Warning Event, after the status that explains it.
func (r *RequestReconciler) writeRequestStatus(ctx context.Context, cr *v1alpha1.CopyRequest, out requestOutcome) (ctrl.Result, error) {
	st, warning := requestStatus(cr, out, now(r.Clock))
	before := cr.DeepCopy()
	cr.Status = *st
	switch answer, err := statuswrite.Patch(ctx, r.Client, cr, before, func(cr *v1alpha1.CopyRequest) v1alpha1.CopyRequestStatus { return cr.Status }); {
	case err != nil:
		return ctrl.Result{}, err
	case answer == statuswrite.Stale:
		// A newer CopyRequest exists: its watch event brings the pass that decides again.
		return requeue(minRequeue), nil
	case answer == statuswrite.Written && warning != nil:
		r.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, warning.Reason, "Copy", "%s", warning.Message)
	}
	if out.err != nil {
		return ctrl.Result{}, out.err
	}
	if out.requeueAfter == 0 {
		r.stale.forget(client.ObjectKeyFromObject(cr))
	}
	return requeue(out.requeueAfter), nil
}

// requestStatus decides, from what a reconcile found and did, a CopyRequest's new status and the
// Ready condition to announce as a Warning Event (nil: none; a refusal is announced once, when
// its reason is new). It is pure: now is the time a write is recorded at.
func requestStatus(cr *v1alpha1.CopyRequest, out requestOutcome, now time.Time) (*v1alpha1.CopyRequestStatus, *metav1.Condition) {
	st := cr.Status.DeepCopy()
	st.ObservedGeneration = cr.Generation
	cond := metav1.Condition{Type: copyplan.ConditionReady, Status: metav1.ConditionTrue, Reason: copyplan.ReasonCopied, ObservedGeneration: cr.Generation,
		Message: fmt.Sprintf("%s %s/%s is in step with %s/%s", cr.Spec.Source.Kind, cr.Namespace, out.copy, cr.Spec.Source.Namespace, cr.Spec.Source.Name)}
	st.Copy = out.copy
	if out.reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, out.reason, out.message
		st.Copy = ""
	} else if out.copy == "" {
		// Written now but not yet seen in step (or a retry is due): say so, not Copied.
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, copyplan.ReasonProgressing, "the copy is being written"
	}
	if out.wrote {
		t := metav1.NewTime(now)
		st.LastSyncTime = &t
	}
	before := meta.FindStatusCondition(cr.Status.Conditions, copyplan.ConditionReady)
	meta.SetStatusCondition(&st.Conditions, cond)
	var warning *metav1.Condition
	if cond.Status == metav1.ConditionFalse && cond.Reason != copyplan.ReasonProgressing && (before == nil || before.Reason != cond.Reason) {
		warning = &cond
	}
	return st, warning
}

// SetupRequestController builds the CopyRequest controller as the manager runs it: its two
// caches, the manager's client and event recorder, and the installation's proofs.
// reads are the source reads it shares with the SecretSync controller;
// namespaces, when not empty, limit its caches to those namespaces (--watch-namespaces).
func SetupRequestController(ctx context.Context, mgr ctrl.Manager, workers int, proofs *propagation.Prover, reads *SourceReads, namespaces []string) (*RequestReconciler, error) {
	offered, copies, err := NewRequestCaches(mgr, namespaces)
	if err != nil {
		return nil, fmt.Errorf("building the %s caches: %w", RequestControllerName, err)
	}
	r := &RequestReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(RequestControllerName),
		Offered: offered, Copies: copies, Proofs: proofs, Reads: reads,
	}
	if err := r.SetupWithManager(ctx, mgr, workers); err != nil {
		return nil, fmt.Errorf("setting up %s: %w", RequestControllerName, err)
	}
	return r, nil
}
