package secretsync

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/logic/writeerror"
	"github.com/platform-operators/platform-operators/controller/propagation"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
	"github.com/platform-operators/platform-operators/controller/writegate"
)

// Name is the controller's name in --controllers.
const Name = "secretsync"

// DefaultConflictRecheck is the default of Reconciler.ConflictRecheck.
const DefaultConflictRecheck = time.Minute

// DefaultRejectedRecheck is the default of Reconciler.RejectedRecheck.
const DefaultRejectedRecheck = 10 * time.Minute

// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=secretsyncs,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=secretsyncs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;patch

// Reconciler brings one SecretSync's copies in step.
type Reconciler struct {
	// Clock stamps status.lastSyncTime; nil is the real clock.
	Clock clock.PassiveClock
	// Client reads from the manager's cache (our copies, namespaces, ServiceAccounts) and writes.
	Client client.Client
	// APIReader reads past the cache: to look at a Secret we do not manage (a conflict).
	APIReader client.Reader
	Sources   *Sources
	Recorder  events.EventRecorder
	Metrics   *Metrics
	// Workers bounds the concurrent writes of one reconcile.
	Workers int
	// ConflictRecheck is how soon a SecretSync with conflicts looks at its targets again
	// (zero: DefaultConflictRecheck). See writeStatus.
	ConflictRecheck time.Duration
	// RejectedRecheck is how long a copy the API server rejected (too large, invalid) is not
	// written again unless its source or the SecretSync changes (zero: DefaultRejectedRecheck).
	RejectedRecheck time.Duration
	// RetryBase and RetryCap bound every other retry of the copy path (see backoff.go): the
	// first waits RetryBase, each one after it twice as long, at most RetryCap (zero:
	// DefaultRetryBase, DefaultRetryCap).
	RetryBase, RetryCap time.Duration
	// Writes, when set, counts a pass's copy writes as in flight while they run, so that the
	// other controllers' writes that can wait (a ScheduledJob's status) hold back for them.
	Writes *writegate.Gate
	// Proofs signs the copies and tells the manager's own from objects that only carry its label
	// (LoadOwnershipKey). Required.
	Proofs *propagation.Prover
	// Protected names the manager's own secrets (its namespace, its ownership key), which are
	// never copied whatever the SecretSync says (propagation.Withheld).
	Protected propagation.Protected
	// LabelProof, when set and the chart's ownership-keys admission policy is in force, makes a
	// copy carrying our label and a proof annotation proven even when the proof does not verify
	// (a lost or retired key): it is re-signed, not stranded. Nil: the proof alone decides.
	LabelProof *PolicyProof
	// Namespaces, when not empty, are the only namespaces the manager works in
	// (--watch-namespaces): sources are read and copies written there only, and Namespace objects
	// are never read (namespaced.go). A SecretSync naming another namespace is told so in its
	// status. Sorted.
	Namespaces []string

	targets targets
	// stale counts, per request, the retries in a row after a stale cache (see backoff.go).
	stale backoff
	// confirmed are the SecretSyncs whose cached version this process wrote (see writeStatus).
	// store: one resourceVersion per SecretSync (about 300 bytes); paid by the admins.
	confirmed statuswrite.Confirmations
	// targetWrites marks, per SecretSync name, that a target pass wrote copies since the
	// SecretSync's last status write, which records it in status.lastSyncTime.
	// store: about 50 bytes per SecretSync; paid by the admins.
	targetWrites sync.Map
	// gone holds, per SecretSync name, when a whole pass found it gone (time.Time): for goneFor
	// after, the passes of its namespaces clean up the copies they find (cleanedUp).
	// store: about 100 bytes per SecretSync deleted in the goneFor before the last deletion
	// (noteGone sweeps the older ones); paid by the admins.
	gone sync.Map
}

// Reconcile implements reconcile.Reconciler for the SecretSync controller: a request names a
// SecretSync (it is cluster-scoped), and its pass brings every target in step and writes the
// status. The passes of one target namespace are the target controller's (ReconcileTarget).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ss := &v1alpha1.SecretSync{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: req.Name}, ss); err != nil {
		if apierrors.IsNotFound(err) {
			r.noteGone(req.Name)
			r.confirmed.Forget(client.ObjectKey{Name: req.Name})
			r.targetWrites.Delete(req.Name)
			r.targets.forget("", req.Name)
			return r.cleanup(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	r.gone.Delete(req.Name)
	kind := kindOf(ss.Spec.Source.Kind)
	obs, err := r.observe(ctx, ss, kind, "")
	if err != nil {
		if ctx.Err() != nil {
			return ctrl.Result{}, err // the next leader reports it
		}
		// Ready must not keep saying True while the pass cannot see the world.
		return r.writeReadFailure(ctx, ss, err)
	}
	res, err := r.bringInStep(ctx, ss, kind, &obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if obs.blocked == nil {
		// The namespaces whose ServiceAccounts this pass did not all write are their target
		// passes' from now on (a namespace already between batches keeps its time): the
		// ServiceAccount events of this pass's writes there queue those passes.
		for _, ns := range res.accountsLeft {
			if _, ok := r.targets.batches.load(batchOf(ns, ss.Name)); !ok {
				r.targets.batches.store(batchOf(ns, ss.Name), r.now())
			}
		}
	}
	_, res.targetWrote = r.targetWrites.LoadAndDelete(ss.Name)
	return r.writeStatus(ctx, ss, obs, res)
}

// ReconcileTarget is the target controller's reconcile: a request {Namespace, Name} brings the
// copies (and ServiceAccounts) of SecretSync Name in the one namespace Namespace in step. It
// writes no status, which counts every namespace: the events that queue a target pass queue
// the SecretSync's own pass too, a little later (see setup.go), and it writes the status.
func (r *Reconciler) ReconcileTarget(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if last, ok := r.targets.batches.load(batchOf(req.Namespace, req.Name)); ok {
		// The next batch of this namespace's ServiceAccounts waits for the pause, however the
		// pass was queued (an event that came while the last batch ran queues it at once).
		if wait := last.Add(serviceAccountBatchPause).Sub(r.now()); wait > 0 {
			return requeue(wait), nil
		}
	}
	ss := &v1alpha1.SecretSync{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: req.Name}, ss); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// The SecretSync's pass cleans up what it sees; a copy in this namespace it could not
		// see (created by a target pass that ran beside the deletion, after that pass had
		// listed) queues this pass, which removes it. Only after a pass found the SecretSync
		// gone: a copy seen before its SecretSync (restored first from a backup, or a cache
		// behind) is left to the SecretSync's passes. What a pass of it that ran beside the
		// deletion remembered here (a refused write, which brings this pass back) goes too.
		r.targets.forget(req.Namespace, req.Name)
		if r.cleanedUp(req.Name) {
			return r.cleanupNamespace(ctx, req)
		}
		return ctrl.Result{}, nil
	}
	kind := kindOf(ss.Spec.Source.Kind)
	obs, err := r.observe(ctx, ss, kind, req.Namespace)
	if err != nil {
		return ctrl.Result{}, err // the SecretSync's pass reports it
	}
	res, err := r.bringInStep(ctx, ss, kind, &obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	var recheck time.Duration
	if len(res.accountsLeft) > 0 {
		r.targets.batches.store(batchOf(req.Namespace, req.Name), r.now())
		// The next batch of this namespace's ServiceAccounts, after the other namespaces'
		// work queued meanwhile (serviceAccountWritesPerPass). Each batch settles its
		// ServiceAccounts (written, or found in step and remembered), so the batches end.
		recheck = serviceAccountBatchPause
	} else {
		r.targets.batches.delete(batchOf(req.Namespace, req.Name))
	}
	if res.writes() > 0 {
		// The SecretSync's pass, queued by this write's event, records it in lastSyncTime.
		r.targetWrites.Store(ss.Name, true)
		r.emitWrites(ss, res, "in "+req.Namespace)
	}
	return r.nextPass(req, res, recheck)
}

// nextPass says when the pass of req comes back, from what it did: with the error of a write
// that failed unexpectedly (the work queue's backoff); after a stale cache shortly, with the
// request's backoff; otherwise after recheck (zero: none) or, when sooner, the backoff of a
// target whose write failed or whose copy is held (writeOnce): it is looked at again then, or
// sooner when its source or the SecretSync changes.
func (r *Reconciler) nextPass(req ctrl.Request, res result, recheck time.Duration) (ctrl.Result, error) {
	if res.writeErr != nil {
		return ctrl.Result{}, res.writeErr
	}
	if res.requeue {
		return requeue(r.stale.next(req, r.RetryBase, r.RetryCap)), nil
	}
	r.stale.forget(req)
	return requeue(sooner(recheck, res.retryAfter)), nil
}

// batchOf is the key of the batches of SecretSync name's target pass of namespace ns: the
// namespace, with no kind or name of a target.
func batchOf(ns, name string) ownedTarget {
	return ownedTarget{owner: name, targetKey: targetKey{key: types.NamespacedName{Namespace: ns}}}
}

// targetRequest is the target controller's request for SecretSync name in namespace ns.
func targetRequest(ns, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// bringInStep plans what obs asks for and writes it: copies first, then ServiceAccounts, then
// copies removed. A pass tells which imagePullSecrets entries are this SecretSync's from its
// live copies: an entry is added once its copy exists (in the same pass, so that the pods of a
// new namespace find it listed as early as possible), and removed while its copy still exists.
// When a ServiceAccount patch met a stale cache, the removals wait for the retry. The error is
// a failed read of the source namespace only; what the writes met is in the result.
func (r *Reconciler) bringInStep(ctx context.Context, ss *v1alpha1.SecretSync, kind *objectKind, obs *observation) (result, error) {
	var res result
	if obs.blocked != nil {
		return res, nil
	}
	pass := "whole"
	if obs.only != "" {
		pass = "namespace"
	}
	r.Metrics.Planned.WithLabelValues(ss.Name, pass).Add(float64(len(obs.want)))
	owner := r.owner(ctx, ss.Name, obs.templates)
	owner.SourceGone = obs.sourceGone(ss)
	plan := propagation.ComputeFor(owner, obs.want, obs.lookup, obs.owned, propagation.DeletionPolicy(string(ss.Spec.DeletionPolicy)))
	if slices.ContainsFunc(plan.Actions, isRemoval) {
		blocked, confirmed, err := r.confirmSourceNamespace(ctx, ss.Spec.Source.Namespace)
		if err != nil {
			return res, err
		}
		if obs.blocked = blocked; blocked != nil {
			return res, nil
		}
		if !confirmed {
			// The source namespace cannot be read: the removals that only a gone source
			// explains wait; copies are written, and those outside the targets (the
			// SecretSync no longer wants them, whatever the source) are removed.
			target := sets.New(obs.targets...)
			var held int
			plan, held = withoutActions(plan, func(a propagation.Action) bool { return isRemoval(a) && target.Has(a.Key.Namespace) })
			if held > 0 {
				obs.unconfirmed = &blocker{copyplan.ReasonSourceNamespaceUnconfirmed, fmt.Sprintf("%d copies are kept although their source is gone: the manager may not read source namespace %q to confirm it is not being deleted (chart: rbac.scope=namespaced grants get on the listed Namespaces by name); the other copies are written and removed as usual", held, ss.Spec.Source.Namespace)}
			}
		}
	}
	additions, _ := withoutActions(plan, isRemoval)
	removals, _ := withoutActions(plan, func(a propagation.Action) bool { return !isRemoval(a) })
	res = r.apply(ctx, ss.Name, kind, additions)
	var sas result
	if kind == secretKind { // admission refuses imagePullSecretFor on ConfigMaps
		r.syncPullSecrets(ctx, ss, obs.withPresent(res.present), plan, &sas, serviceAccountWritesPerPass)
	}
	if !sas.requeue {
		// A namespace whose ServiceAccounts are not all written yet keeps its copies until
		// they are: its own pass removes them after its last batch.
		left := sets.New(sas.accountsLeft...)
		removals, _ = withoutActions(removals, func(a propagation.Action) bool { return left.Has(a.Key.Namespace) })
		res.add(r.apply(ctx, ss.Name, kind, removals))
	}
	res.accountsLeft = sas.accountsLeft
	// A target whose namespace is being deleted is not wanted any more (the namespace's
	// update event brings a pass that no longer lists it).
	res.desired, res.inStep = plan.Desired-res.skipped, plan.InStep
	res.requeue = res.requeue || sas.requeue
	res.writeErr = errors.Join(res.writeErr, sas.writeErr)
	res.notDockerConfig = sas.notDockerConfig
	if obs.unconfirmed != nil {
		// Look again now and then: the grant that lets the namespace be read comes without
		// an event to us.
		res.retryAfter = sooner(DefaultConflictRecheck, res.retryAfter)
	}
	return res, nil
}

// observation is what a reconcile read from the world.
type observation struct {
	// only, when set, is the one namespace the pass looks at (see Reconcile).
	only string
	// blocked, when set, stops the sync: a condition reason and message for the user.
	blocked *blocker
	sources []*corev1.Secret
	targets []string
	want    []*corev1.Secret
	owned   []*corev1.Secret
	lookup  propagation.Lookup
	// templates holds, per copy name, the copy the sources give before its namespace is chosen:
	// an unproven copy that holds its data and type is expendable (see owner).
	// store: per pass; paid by the admin's SecretSync (its sources).
	templates map[string]*corev1.Secret
	// sourceMissing is set when a named source does not exist (copies are then removed per policy).
	sourceMissing bool
	// missingKeys lists, per source ("ns/name"), the spec.keys the source lacks (the rest is copied).
	// store: per pass; paid by the admin's SecretSync.
	missingKeys map[string][]string
	// withheld lists, per source ("ns/name") the spec picks, why it is never copied
	// (propagation.Withheld): its copies are unwanted, and the status says so.
	// store: per pass; paid by the admin's SecretSync.
	withheld map[string]string
	// unconfirmed, when set, says why removals were kept: the source namespace could not be read
	// to confirm it is not being deleted (confirmSourceNamespace).
	unconfirmed *blocker
	// unmanaged lists the target namespaces the spec names that the manager does not work in
	// (Reconciler.Namespaces): no copy goes there, and the status says so.
	unmanaged []string
}

type blocker struct{ reason, message string }

// observe reads what a pass needs: of every namespace, or of the namespace only when it is set.
func (r *Reconciler) observe(ctx context.Context, ss *v1alpha1.SecretSync, kind *objectKind, only string) (observation, error) {
	obs := observation{only: only, withheld: map[string]string{}, missingKeys: map[string][]string{}}
	src := ss.Spec.Source
	srcSel, badSrc := selectorOf("spec.source.selector", src.Selector)
	nsSel, badNS := selectorOf("spec.target.namespaceSelector", ss.Spec.Target.NamespaceSelector)
	if obs.blocked = cmp.Or(badSrc, badNS); obs.blocked != nil {
		return obs, nil
	}
	if len(r.Namespaces) > 0 {
		// Limited to namespaces: no Namespace can be read. The source must be listed (its Role
		// lets us read it); a listed namespace that is gone or being deleted is caught before
		// any removal (confirmSourceNamespace).
		if obs.blocked = namespacedBlocker(ss, nsSel, r.Namespaces); obs.blocked != nil {
			return obs, nil
		}
		obs.unmanaged = unmanagedTargets(ss, r.Namespaces)
	} else {
		// A missing source namespace is most likely a typo or a namespace not created yet, and
		// one being deleted loses its Secrets first: report it and touch nothing, rather than
		// treat every copy as unwanted (one mistaken namespace deletion would strip every tenant).
		var err error
		if obs.blocked, err = sourceNamespaceBlocker(ctx, r.Client, src.Namespace); err != nil || obs.blocked != nil {
			return obs, err
		}
	}
	if only == "" {
		if err := r.pruneSources(ctx); err != nil {
			return obs, err
		}
	}
	reader, err := r.Sources.Reader(ctx, src.Namespace, kind)
	if err != nil {
		return obs, err
	}
	sources := kind.list()
	if err := reader.List(ctx, sources, client.InNamespace(src.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return obs, err
	}
	for _, s := range kind.items(sources) {
		// The source cache keeps no data, and no labels past a bound (sources.go): a source
		// that matches, or whose labels the cache dropped, is read whole; but only when its
		// labels can decide: not when its name or type (which the cache keeps) rule it out, nor
		// for an empty selector, which matches whatever the labels.
		if sourceLabelsUnknown(s) && labelsDecide(s, src, srcSel) {
			if s, err = r.Sources.Full(ctx, kind, s); err != nil {
				return obs, err
			} else if s == nil {
				continue
			}
		}
		if propagation.SourceMatches(s, src.Name, srcSel, src.Type) {
			// The manager's own secrets (and credentials of the cluster) are left out here,
			// where sources are chosen, whatever the spec says; the status names them. Asked of
			// the cached form first (no read of a withheld Secret's data), then of the whole one
			// (the cache may have dropped the labels a rule reads).
			if why := propagation.Withheld(s, r.Protected); why != "" {
				obs.withheld[s.Namespace+"/"+s.Name] = why
				continue
			}
			full, err := r.Sources.Full(ctx, kind, s)
			if err != nil {
				return obs, err
			} else if full == nil {
				continue
			}
			if why := propagation.Withheld(full, r.Protected); why != "" {
				obs.withheld[full.Namespace+"/"+full.Name] = why
				continue
			}
			obs.sources = append(obs.sources, full)
			continue
		}
		// The named source exists with another type than spec.source.type asks for: most
		// likely a mistake in one of the two. Say so (not "not found") and touch nothing, so
		// the copies already made stay until one of them is fixed.
		if src.Name != "" && s.Name == src.Name && s.DeletionTimestamp == nil && s.Type != src.Type {
			obs.blocked = &blocker{copyplan.ReasonSourceTypeMismatch, fmt.Sprintf("source Secret %s/%s is of type %s, but spec.source.type asks for %s; nothing is copied or removed until they agree", src.Namespace, src.Name, s.Type, src.Type)}
			return obs, nil
		}
	}
	obs.sourceMissing = src.Name != "" && len(obs.sources) == 0

	nss, err := r.namespaces(ctx, only)
	if err != nil {
		return obs, err
	}
	obs.targets = propagation.Targets(nss, nsSel, ss.Spec.Target.IncludeNamespaces, ss.Spec.Target.ExcludeNamespaces, src.Namespace)
	owner := propagation.SecretSyncOwner(ss.Name)
	obs.templates = map[string]*corev1.Secret{}
	for _, s := range obs.sources {
		// The template is the copy of no namespace: only its name, data and type are read.
		t, _ := copyplan.Wanted(ss, s, "")
		obs.templates[t.Name] = t
		for _, ns := range obs.targets {
			w, missing := copyplan.Wanted(ss, s, ns)
			r.Proofs.Prove(w, owner)
			if len(missing) > 0 {
				obs.missingKeys[s.Namespace+"/"+s.Name] = missing
			}
			obs.want = append(obs.want, w)
		}
	}

	// Every Secret and ConfigMap in the cache carries our label (the cache selects on it).
	copies := kind.list()
	if err := r.Client.List(ctx, copies, client.InNamespace(only), client.UnsafeDisableDeepCopy); err != nil {
		return obs, err
	}
	obs.owned, obs.lookup = copiesOf(kind, copies, keys.LabelSecretSync, ss.Name)
	return obs, nil
}

// copiesOf is, of the copies in list, those whose label names name, and a lookup of them all.
func copiesOf(kind *objectKind, list client.ObjectList, label, name string) (owned []*corev1.Secret, lookup propagation.Lookup) {
	items := kind.items(list)
	live := make(map[types.NamespacedName]*corev1.Secret, len(items))
	for _, c := range items {
		live[client.ObjectKeyFromObject(c)] = c
		if c.Labels[label] == name {
			owned = append(owned, c)
		}
	}
	return owned, func(k types.NamespacedName) *corev1.Secret { return live[k] }
}

// selectorOf is s as a selector (nil for none), or the blocker of an invalid one at field.
func selectorOf(field string, s *metav1.LabelSelector) (labels.Selector, *blocker) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, &blocker{copyplan.ReasonInvalidSpec, fmt.Sprintf("%s: %v", field, err)}
	}
	return sel, nil
}

// labelsDecide reports whether a source's labels can decide if it is picked: its name and type
// (which the source cache keeps) do not rule it out, and the selector is not empty.
func labelsDecide(s *corev1.Secret, src v1alpha1.SecretSyncSource, sel labels.Selector) bool {
	return sel != nil && !sel.Empty() && s.DeletionTimestamp == nil && (src.Name == "" || s.Name == src.Name) && (src.Type == "" || s.Type == src.Type)
}

// sourceGone tells the copies that are unwanted only because the source spec.source.name names
// is missing: those of that source in namespaces that still are targets (nil when the source is
// there, or the spec selects sources). Under deletionPolicy Orphan they are kept for its return.
func (obs observation) sourceGone(ss *v1alpha1.SecretSync) func(*corev1.Secret) bool {
	if !obs.sourceMissing || ss.Spec.Source.Name == "" {
		return nil
	}
	targets := sets.New(obs.targets...)
	src := ss.Spec.Source.Namespace + "/" + ss.Spec.Source.Name
	return func(s *corev1.Secret) bool {
		return targets.Has(s.Namespace) && s.Annotations[keys.AnnotationSource] == src
	}
}

// sourceNamespaceBlocker reads the source namespace name with reader: the blocker of one that
// does not exist or is being deleted, else nil.
func sourceNamespaceBlocker(ctx context.Context, reader client.Reader, name string) (*blocker, error) {
	ns := &corev1.Namespace{}
	switch err := reader.Get(ctx, types.NamespacedName{Name: name}, ns); {
	case apierrors.IsNotFound(err):
		return &blocker{copyplan.ReasonSourceNamespaceNotFound, fmt.Sprintf("source namespace %q does not exist; nothing is copied or removed until it does", name)}, nil
	case err != nil:
		return nil, err
	case ns.DeletionTimestamp != nil:
		return &blocker{copyplan.ReasonSourceNamespaceTerminating, fmt.Sprintf("source namespace %q is being deleted; nothing is copied or removed (the copies and imagePullSecrets entries stay) until it is re-created or the SecretSync changes", name)}, nil
	}
	return nil, nil
}

// confirmSourceNamespace reads the source namespace past the cache before a plan removes
// copies: the source informer can deliver the deletions of a terminating namespace's Secrets
// before the manager's cache shows the namespace terminating, and a removal is not undone by
// the next pass. It returns the blocker when the namespace is missing or being deleted, and
// confirmed false when the manager may not read it (a manager limited to namespaces whose
// ClusterRole lacks get on that Namespace by name; the chart grants it): the pass then keeps
// the removals only a gone source explains. It writes nothing: a dry-run create there would be
// refused by the chart's manager-writes policy (admission runs for dry runs) and wedge the pass.
func (r *Reconciler) confirmSourceNamespace(ctx context.Context, name string) (*blocker, bool, error) {
	blocked, err := sourceNamespaceBlocker(ctx, r.APIReader, name)
	if apierrors.IsForbidden(err) {
		return nil, false, nil
	}
	return blocked, err == nil, err
}

// withoutActions is plan without the actions drop says, and how many it left out.
func withoutActions(plan propagation.Plan, drop func(propagation.Action) bool) (propagation.Plan, int) {
	out := plan
	out.Actions = slices.DeleteFunc(slices.Clone(plan.Actions), drop)
	return out, len(plan.Actions) - len(out.Actions)
}

// sooner is the sooner of two waits, zero meaning none: b when it is set and a is not or is later.
func sooner(a, b time.Duration) time.Duration {
	if b > 0 && (a == 0 || b < a) {
		return b
	}
	return a
}

// isRemoval reports whether the action deletes or releases a copy.
func isRemoval(a propagation.Action) bool {
	return a.Op == propagation.OpDelete || a.Op == propagation.OpRelease
}

// withPresent is the observation with the copies a write just made (present) looked up as
// live, so that the ServiceAccounts list them in the pass that created them.
func (obs observation) withPresent(present map[types.NamespacedName]*corev1.Secret) observation {
	if len(present) == 0 {
		return obs
	}
	live := obs.lookup
	obs.lookup = func(k types.NamespacedName) *corev1.Secret {
		if c := live(k); c != nil {
			return c
		}
		return present[k]
	}
	return obs
}

// namespaces lists every namespace, or only the one named (none when it does not exist); limited
// to namespaces (Reconciler.Namespaces), those listed.
func (r *Reconciler) namespaces(ctx context.Context, only string) ([]*corev1.Namespace, error) {
	if len(r.Namespaces) > 0 {
		return managedNamespaces(r.Namespaces, only), nil
	}
	if only != "" {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: only}, ns); err != nil {
			if apierrors.IsNotFound(err) {
				// Gone (its deletion queues this pass): so are its targets, and what the passes
				// remembered of them, however many namespaces come and go.
				r.targets.forget(only, "")
			}
			return nil, client.IgnoreNotFound(err)
		}
		return []*corev1.Namespace{ns}, nil
	}
	list := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return pointers(list.Items, func(ns *corev1.Namespace) *corev1.Namespace { return ns }), nil
}

// result is what a reconcile did.
type result struct {
	desired, inStep int
	// caughtUp counts copies found in step past a stale cache (no write was needed).
	caughtUp int
	// store: per pass; paid by nobody outside (a count per kind of write).
	written   map[propagation.Op]int
	conflicts []v1alpha1.TargetFailure
	failures  []v1alpha1.TargetFailure
	// retryAfter, when set, is how soon the first target whose write failed (or whose copy is
	// held Terminating) may be tried again (see writeOnce).
	retryAfter time.Duration
	// skipped counts copies not created because their namespace is being deleted.
	skipped int
	// requeue is set when a write met a conflict (stale cache): retry shortly, not an error.
	requeue bool
	// notDockerConfig lists copies that cannot be image pull secrets.
	notDockerConfig []string
	// accountsLeft lists the namespaces whose ServiceAccounts this pass did not all write
	// (serviceAccountWritesPerPass): their own passes write the rest.
	accountsLeft []string
	// targetWrote is set when a target pass wrote copies since the last status write.
	targetWrote bool
	// writeErr is the first unexpected write error (returned to back off).
	writeErr error
	// present are the copies a create or replace of this pass left in step (written, or found
	// written past a stale cache), by key: they exist although the cache does not show them yet.
	// store: per pass; paid by the admin's SecretSync (its copies).
	present map[types.NamespacedName]*corev1.Secret
}

// add folds the result of another apply of the same pass into res (one of apply's).
func (res *result) add(o result) {
	res.caughtUp += o.caughtUp
	for op, n := range o.written {
		res.written[op] += n
	}
	res.conflicts = append(res.conflicts, o.conflicts...)
	res.failures = append(res.failures, o.failures...)
	res.retryAfter = sooner(res.retryAfter, o.retryAfter)
	res.skipped += o.skipped
	res.requeue = res.requeue || o.requeue
	res.writeErr = errors.Join(res.writeErr, o.writeErr)
	maps.Copy(res.present, o.present)
}

func (r *Reconciler) apply(ctx context.Context, name string, kind *objectKind, plan propagation.Plan) result {
	// Each worker writes only its own action's outcome; the outcomes are folded into the result
	// after every worker is done, in plan order, so nothing in res is shared between goroutines.
	ops, errs := make([]propagation.Op, len(plan.Actions)), make([]error, len(plan.Actions))
	if r.Writes != nil && len(plan.Actions) > 0 {
		r.Writes.Begin()
		defer r.Writes.End()
	}
	w := r.writer(name)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrentWrites(r.Workers, plan))
	for i, a := range plan.Actions {
		if a.Op == propagation.OpConflict || a.Op == propagation.OpHeld {
			continue
		}
		g.Go(func() error {
			ops[i], errs[i] = w.writeOnce(gctx, kind, a)
			return nil
		})
	}
	_ = g.Wait()

	res := result{written: map[propagation.Op]int{}, present: map[types.NamespacedName]*corev1.Secret{}}
	for i, a := range plan.Actions {
		switch a.Op {
		case propagation.OpConflict:
			res.conflicts = append(res.conflicts, v1alpha1.TargetFailure{Namespace: a.Key.Namespace, Name: a.Key.Name, Reason: copyplan.ReasonConflict, Message: a.Message})
			continue
		case propagation.OpHeld:
			// Reported (the same message each pass, so one status write and one Event) and
			// looked at again with backoff; its deletion brings the create sooner.
			res.failures = append(res.failures, v1alpha1.TargetFailure{Namespace: a.Key.Namespace, Name: a.Key.Name, Reason: copyplan.ReasonHeld, Message: a.Message})
			res.retryAfter = sooner(res.retryAfter, w.noteHeld(w.target(kind, a.Key), a))
			continue
		}
		op, err := ops[i], errs[i]
		var conflict *unmanagedError
		var failed *writeError
		switch {
		case err == nil:
			if a.Op == propagation.OpCreate || a.Op == propagation.OpReplace {
				res.present[a.Key] = a.Want
			}
			if op != "" {
				res.written[op]++
				r.Metrics.Writes.WithLabelValues(name, string(op)).Inc()
			} else if !isRemoval(a) {
				res.caughtUp++
			}
		case errors.As(err, &conflict):
			res.conflicts = append(res.conflicts, v1alpha1.TargetFailure{Namespace: a.Key.Namespace, Name: a.Key.Name, Reason: copyplan.ReasonConflict, Message: conflict.Error()})
		case errors.As(err, &failed):
			if !failed.remembered {
				r.Metrics.Failures.WithLabelValues(name).Inc()
			}
			res.retryAfter = sooner(res.retryAfter, failed.wait)
			res.failures = append(res.failures, v1alpha1.TargetFailure{Namespace: a.Key.Namespace, Name: a.Key.Name, Reason: failed.reason, Message: failed.Error()})
		case writeerror.Classify(err) == writeerror.NamespaceTerminating:
			// The namespace began terminating after the cache showed it: not a failure, and not
			// retried (its deletion, when the cache sees it, takes it off the targets).
			res.skipped++
		case writeerror.Classify(err) == writeerror.Stale:
			// The cache was behind the API: the watch event that follows brings us back.
			res.requeue = true
		default:
			r.Metrics.Failures.WithLabelValues(name).Inc()
			res.failures = append(res.failures, v1alpha1.TargetFailure{Namespace: a.Key.Namespace, Name: a.Key.Name, Reason: copyplan.ReasonWriteFailed, Message: fmt.Sprintf("%s: %v", a.Op, err)})
			res.writeErr = cmp.Or(res.writeErr, err)
		}
	}
	return res
}

// targetKey is a copy's kind and place.
type targetKey struct {
	kind v1alpha1.CopyKind
	key  types.NamespacedName
}

// ownedTarget is a target of one owner (a SecretSync's name, a CopyRequest's in the target's
// namespace): the key of the per-target memories, so that each owner's are forgotten with it.
type ownedTarget struct {
	owner string
	targetKey
}

// unmanagedError is a target held by an object we do not manage.
type unmanagedError targetKey

// writeError is a write that failed, as a target's status reports it. Rejected: a copy the API
// server refused as such, too large (413, or a 422 naming a value too long or too many) or
// invalid (422, e.g. an admission policy); writing it again gives the same answer, so it is not
// retried with backoff, only once the copy would differ (its source or the SecretSync changed)
// or RejectedRecheck has passed (a limit or a policy may have changed). Otherwise (Forbidden by a
// webhook or a quota, a server error, a timeout) the same write is tried again with backoff, per
// target (see backoff.go). The message stays the same from one retry to the next, so the status
// is not rewritten.
type writeError struct {
	// reason is the target's failure reason: the rejection's, or copyplan.ReasonWriteFailed.
	reason   string
	rejected bool
	op       propagation.Op
	err      error
	// owner is the kind of what asks for the copy (writer.owner).
	owner string
	// remembered is set when no write was tried (the same write failed before, and its time
	// has not come).
	remembered bool
	// wait is how long until it may be tried again.
	wait time.Duration
}

func (e *writeError) Error() string {
	if e.rejected {
		return fmt.Sprintf("the API server rejected the %s of the copy: %s; it is tried again when the source or the %s changes", e.op, boundedMessage(e.err), e.owner)
	}
	return fmt.Sprintf("the %s of the copy failed: %s; it is tried again with backoff, or when the source or the %s changes", e.op, boundedMessage(e.err), e.owner)
}

func (e *writeError) Unwrap() error { return e.err }

// boundedMessage is err's message, at most maxRejectionMessage bytes of it.
func boundedMessage(err error) string {
	msg := err.Error()
	if len(msg) > maxRejectionMessage {
		msg = msg[:maxRejectionMessage] + "..."
	}
	return msg
}

// maxRejectionMessage bounds the API server's message quoted in status and Events.
const maxRejectionMessage = 512

// rejection is a target's last failed write (or its copy found held Terminating), remembered
// per target: the same write is not tried again before until.
type rejection struct {
	fingerprint [sha256.Size]byte
	until       time.Time
	// failures counts the failures in a row, for the backoff.
	failures int
	// err is what the last attempt returned (nil for a held copy).
	err *writeError
}

// rejectionReason says whether err refuses the copy itself (the same write gets the same
// answer), and how. A 400 or a 403 is not such a refusal for a copy: the copy is built by the
// manager, and a webhook or a quota may let it pass later.
func rejectionReason(err error) (string, bool) {
	switch writeerror.Classify(err) {
	case writeerror.TooLarge, writeerror.TooLong:
		return copyplan.ReasonTooLarge, true
	case writeerror.Invalid:
		return copyplan.ReasonInvalid, true
	}
	return "", false
}

// fingerprint digests what a copy's write sets (see propagation.InStep): two copies with the
// same fingerprint get the same answer from the API server.
func fingerprint(s *corev1.Secret) [sha256.Size]byte {
	h := sha256.New()
	field := func(b []byte) {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	field([]byte(s.Type))
	field([]byte(fmt.Sprint(s.Immutable != nil && *s.Immutable)))
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		field([]byte(k))
		field(s.Data[k])
	}
	for _, k := range []string{keys.LabelSecretSync, keys.LabelManagedBy} {
		field([]byte(s.Labels[k]))
	}
	for _, k := range []string{keys.AnnotationSource, keys.AnnotationDeletionPolicy, keys.AnnotationBinaryKeys} {
		field([]byte(s.Annotations[k]))
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// actionFingerprint tells one write from another: the copy it writes, or, for a delete or a
// release, the operation and the exact object it removes.
func actionFingerprint(a propagation.Action) [sha256.Size]byte {
	if a.Want != nil {
		return fingerprint(a.Want)
	}
	var uid, rv string
	if a.Current != nil {
		uid, rv = string(a.Current.UID), a.Current.ResourceVersion
	}
	return sha256.Sum256([]byte(string(a.Op) + "\x00" + uid + "\x00" + rv))
}

// writeOnce is write, except that a write that failed is not sent again, the same, before its
// time: a copy the API server rejected as such (writeError.rejected) after RejectedRecheck, any
// other failure after its backoff. A changed copy (its source or the SecretSync changed)
// is written at once. A replace whose create failed after its delete (incompleteReplaceError)
// backs off from RetryBase, never RejectedRecheck: the target has no copy meanwhile.
func (w writer) writeOnce(ctx context.Context, kind *objectKind, a propagation.Action) (propagation.Op, error) {
	tk := w.target(kind, a.Key)
	defer w.writing.lock(tk)()
	fp := actionFingerprint(a)
	now := now(w.clock)
	failures := 0
	var incomplete *incompleteReplaceError
	// A create after a replace that deleted the old copy: the target has none, so it backs
	// off from RetryBase whatever the API server answers.
	afterReplace := false
	if rej, ok := w.rejected.load(tk); ok {
		if rej.fingerprint == fp {
			if now.Before(rej.until) && rej.err != nil {
				// Not tried: the remembered failure, with how long until it may be.
				again := *rej.err
				again.remembered, again.wait = true, rej.until.Sub(now)
				return "", &again
			}
			failures = rej.failures
			afterReplace = rej.err != nil && errors.As(rej.err, &incomplete)
		}
		w.rejected.delete(tk)
	}
	op, err := w.write(ctx, kind, a)
	if err == nil {
		return op, nil
	}
	// A cache behind the API (retried per request, see backoff.go) or the namespace going away
	// (not retried) is not the target's failure.
	var unmanaged *unmanagedError
	class := writeerror.Classify(err)
	if errors.As(err, &unmanaged) || ((class == writeerror.Stale || class == writeerror.NamespaceTerminating) && !errors.As(err, &incomplete)) {
		return op, err
	}
	failures++
	if afterReplace && !errors.As(err, &incomplete) {
		err = &incompleteReplaceError{err}
	}
	out := &writeError{reason: copyplan.ReasonWriteFailed, op: a.Op, err: err, owner: w.owner, wait: backoffDelay(failures, w.retryBase, w.retryCap)}
	if reason, ok := rejectionReason(err); ok && !errors.As(err, &incomplete) {
		out.reason, out.rejected, out.wait = reason, true, orDefault(w.rejectedRecheck, DefaultRejectedRecheck)
	}
	w.rejected.store(tk, rejection{fingerprint: fp, until: now.Add(out.wait), failures: failures, err: out})
	return "", out
}

// noteHeld records that the target tk's copy is held Terminating and returns how soon to look
// again: the backoff of the target grows once per look that is due, not once per pass.
func (w writer) noteHeld(tk ownedTarget, a propagation.Action) time.Duration {
	fp := actionFingerprint(propagation.Action{Op: a.Op, Current: a.Current})
	now := now(w.clock)
	n := 1
	if rej, ok := w.rejected.load(tk); ok && rej.fingerprint == fp {
		if now.Before(rej.until) {
			return rej.until.Sub(now)
		}
		n = rej.failures + 1
	}
	wait := backoffDelay(n, w.retryBase, w.retryCap)
	w.rejected.store(tk, rejection{fingerprint: fp, until: now.Add(wait), failures: n})
	return wait
}

// incompleteReplaceError is a replace whose delete went through and whose create did not: the
// target has no copy until a create passes, so it is retried with backoff from RetryBase.
type incompleteReplaceError struct{ err error }

func (e *incompleteReplaceError) Error() string {
	return fmt.Sprintf("the old copy was deleted but the new one could not be created: %v", e.err)
}

func (e *incompleteReplaceError) Unwrap() error { return e.err }

func (e *unmanagedError) Error() string {
	return fmt.Sprintf("%s %s exists and is not managed by platform-operators; it is left untouched (delete or rename it to let the copy in)", e.kind, e.key)
}

// writer performs the writes of a plan for one kind of owner (SecretSync or CopyRequest).
type writer struct {
	client client.Client
	// reader reads past the cache: to look at an object we do not manage (a conflict).
	reader client.Reader
	// label marks the owner's copies: an object without it is not ours; owner is the owner's
	// kind, as failures name it; name is the owner's name, which keys its memories (target).
	label, owner, name string
	// recorder, when set, is told of a copy written back after other field managers had set
	// fields of it that the manager writes (see update).
	recorder events.EventRecorder
	// targets are the owner's controller's memories, per target (writeOnce).
	*targets
	// clock, retryBase, retryCap and rejectedRecheck are the owner's controller's (writeOnce).
	clock                                clock.PassiveClock
	retryBase, retryCap, rejectedRecheck time.Duration
}

// targets are a copy controller's memories per target (a copy's kind and place), see backoff.go.
type targets struct {
	// unmanaged remembers targets found held by an object we do not manage, so later writes
	// look (a read) instead of trying to create (a failed write) each time. About 150 bytes per
	// target a foreign object holds; paid by the tenant who put it there, one per target of an
	// admin's SecretSync in a namespace that exists or one per CopyRequest (its object quota);
	// forgotten with the namespace (see namespaces) and with the owner (its NotFound passes).
	unmanaged memory[struct{}]
	// rejected remembers, per target, the write that last failed (or the copy found held) and
	// when it may be tried again (see writeOnce). About 300 bytes per target whose write was
	// refused (the refusal's message cut, see writeOnce); paid by whoever refuses (a tenant's
	// webhook, policy or quota), one per target of an admin's SecretSync in a namespace that
	// exists or per CopyRequest (forgotten as above).
	rejected memory[rejection]
	// accounts remembers, per SecretSync and ServiceAccount, a ServiceAccount found in step past
	// the cache (accountVerdict). About 200 bytes per such ServiceAccount; paid by tenants'
	// ServiceAccounts (their object quota), dropped with the SecretSync, the namespace, or the
	// ServiceAccount's change (keepOnly).
	accounts memory[accountVerdict]
	// batches holds, for the target passes (a namespace, a SecretSync: batchOf) that have
	// ServiceAccounts left for their next batch, when the last batch ended: the pass does nothing
	// before serviceAccountBatchPause has passed since, and the events of that namespace's
	// ServiceAccounts (our own writes among them) queue it after the pause, not at once; the
	// SecretSync's pass leaves those namespaces to their target passes. About 100 bytes per
	// namespace with ServiceAccounts left, at most one per target namespace and SecretSync; paid
	// by the admins.
	batches memory[time.Time]
	// writing lets one write per target be in flight, so the check of rejected and the write
	// it allows are one step (see writeOnce).
	writing oneWriter
}

// forget drops the memories of owner's targets in namespace ns: every owner's when owner is
// "", in every namespace when ns is "".
func (t *targets) forget(ns, owner string) {
	t.unmanaged.forget(ns, owner)
	t.rejected.forget(ns, owner)
	t.accounts.forget(ns, owner)
	t.batches.forget(ns, owner)
}

// memory is one memory per target, kept by the target's namespace: a namespace's memories, or
// one owner's in one namespace, are forgotten without walking the others'. It is safe for
// concurrent use.
type memory[V any] struct {
	mu sync.Mutex
	// store: the bytes targets says per target remembered, and about 100 bytes per namespace with
	// one (a namespace whose last is forgotten is dropped); paid by whom targets says.
	byNamespace map[string]map[ownedTarget]V
}

func (m *memory[V]) load(tk ownedTarget) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.byNamespace[tk.key.Namespace][tk]
	return v, ok
}

func (m *memory[V]) store(tk ownedTarget, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byNamespace == nil {
		m.byNamespace = map[string]map[ownedTarget]V{}
	}
	if m.byNamespace[tk.key.Namespace] == nil {
		m.byNamespace[tk.key.Namespace] = map[ownedTarget]V{}
	}
	m.byNamespace[tk.key.Namespace][tk] = v
}

func (m *memory[V]) delete(tk ownedTarget) {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.byNamespace[tk.key.Namespace]
	if delete(held, tk); len(held) == 0 {
		delete(m.byNamespace, tk.key.Namespace)
	}
}

// forget is targets.forget for one memory.
func (m *memory[V]) forget(ns, owner string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if owner == "" {
		delete(m.byNamespace, ns)
		return
	}
	namespaces := []string{ns}
	if ns == "" {
		namespaces = slices.Collect(maps.Keys(m.byNamespace))
	}
	for _, ns := range namespaces {
		maps.DeleteFunc(m.byNamespace[ns], func(k ownedTarget, _ V) bool { return k.owner == owner })
		if len(m.byNamespace[ns]) == 0 {
			delete(m.byNamespace, ns)
		}
	}
}

// keepOnly forgets owner's memories of the keys not in present: the memory holds at most one
// per key that exists.
func (m *memory[V]) keepOnly(owner string, present map[types.NamespacedName]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ns, held := range m.byNamespace {
		maps.DeleteFunc(held, func(k ownedTarget, _ V) bool { return k.owner == owner && !present[k.key] })
		if len(held) == 0 {
			delete(m.byNamespace, ns)
		}
	}
}

// target is the key of the memories of w's owner's target of kind at key.
func (w writer) target(kind *objectKind, key types.NamespacedName) ownedTarget {
	return ownedTarget{w.name, targetKey{kind.name, key}}
}

// writer writes the copies of the SecretSync name.
func (r *Reconciler) writer(name string) writer {
	return writer{client: r.Client, reader: r.APIReader, label: keys.LabelSecretSync, owner: "SecretSync", name: name, recorder: r.Recorder, targets: &r.targets,
		clock: r.Clock, retryBase: r.RetryBase, retryCap: r.RetryCap, rejectedRecheck: r.RejectedRecheck}
}

// write performs one action and returns the operation that was written ("" when nothing was).
func (w writer) write(ctx context.Context, kind *objectKind, a propagation.Action) (propagation.Op, error) {
	tk := w.target(kind, a.Key)
	switch a.Op {
	case propagation.OpCreate:
		if _, known := w.unmanaged.load(tk); known {
			// Held by an object we do not manage last time: look before writing.
			switch err := w.reader.Get(ctx, a.Key, kind.object()); {
			case err == nil:
				return "", &unmanagedError{kind.name, a.Key}
			case !apierrors.IsNotFound(err):
				return "", err
			}
			w.unmanaged.delete(tk)
		}
		err := w.client.Create(ctx, kind.unwrap(a.Want.DeepCopy()), client.FieldOwner(propagation.FieldManager))
		if apierrors.IsAlreadyExists(err) {
			// Not in our cache, so not labelled by us: someone else's object. Unless it was
			// created by us a moment ago and the cache is behind, which a read tells apart.
			live := kind.object()
			if gerr := w.reader.Get(ctx, a.Key, live); gerr == nil {
				cur := kind.wrap(live)
				if cur.Labels[w.label] == "" {
					w.unmanaged.store(tk, struct{}{})
					return "", &unmanagedError{kind.name, a.Key}
				}
				if propagation.InStep(cur, a.Want) {
					return "", nil
				}
			}
		}
		return propagation.OpCreate, err
	case propagation.OpUpdate:
		err := w.update(ctx, kind, a)
		if apierrors.IsConflict(err) {
			// Our cache had not caught up with our own last write when the copy already is in step.
			if live := kind.object(); w.reader.Get(ctx, a.Key, live) == nil && propagation.InStep(kind.wrap(live), a.Want) {
				return "", nil
			}
		}
		return propagation.OpUpdate, err
	case propagation.OpReplace:
		// Type changes and immutable Secrets cannot be updated: delete exactly the object we
		// compared (uid and resourceVersion preconditions), then create. Admission is asked
		// first, by a dry-run create: the API server runs admission before its storage finds the
		// name taken, so AlreadyExists says the copy would pass, and a refusal (a webhook, a
		// policy, a copy too large) leaves the old copy in place rather than none.
		if err := w.client.Create(ctx, kind.unwrap(a.Want.DeepCopy()), client.DryRunAll, client.FieldOwner(propagation.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) && !exceededQuota(err) {
			return "", err
		}
		if err := w.deleteExact(ctx, kind, a.Current); err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		if err := w.client.Create(ctx, kind.unwrap(a.Want.DeepCopy()), client.FieldOwner(propagation.FieldManager)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Deleted but still there: a finalizer holds it (the next pass sees it held).
				return "", err
			}
			return "", &incompleteReplaceError{err}
		}
		return propagation.OpReplace, nil
	case propagation.OpDelete:
		err := w.deleteExact(ctx, kind, a.Current)
		if apierrors.IsNotFound(err) {
			// Already gone (our own earlier delete, the cache not caught up yet).
			return "", nil
		}
		return propagation.OpDelete, err
	case propagation.OpOrphan:
		// A patch of the one annotation the mark adds, on the version compared.
		return propagation.OpOrphan, w.client.Patch(ctx, kind.unwrap(a.Want), client.MergeFromWithOptions(kind.unwrap(a.Current), client.MergeFromWithOptimisticLock{}), client.FieldOwner(propagation.FieldManager))
	case propagation.OpRelease:
		// A patch of the metadata Released changes, on the version compared: a cached copy
		// holds no data (boundCopy), so an update from it would empty the Secret we leave behind.
		return propagation.OpRelease, w.client.Patch(ctx, kind.unwrap(propagation.Released(a.Current)), client.MergeFromWithOptions(kind.unwrap(a.Current), client.MergeFromWithOptimisticLock{}), client.FieldOwner(propagation.FieldManager))
	}
	return "", fmt.Errorf("unknown action %q", a.Op)
}

// exceededQuota reports whether err is a quota's refusal. A dry-run create of a replace is
// counted beside the copy it replaces, so a namespace at its quota refuses it although the
// replace itself (delete, then create) fits: that refusal does not stop the replace.
func exceededQuota(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

func (w writer) deleteExact(ctx context.Context, kind *objectKind, s *corev1.Secret) error {
	uid, rv := s.UID, s.ResourceVersion
	return w.client.Delete(ctx, kind.unwrap(s.DeepCopy()), client.Preconditions{UID: &uid, ResourceVersion: &rv})
}

// serviceAccountWritesPerPass bounds the ServiceAccounts one pass writes in one namespace. With
// imagePullSecretFor ["*"] a tenant decides how many ServiceAccounts its namespace has: past the
// bound, the rest of that namespace is left to the pass of that namespace, which writes the next
// batch and queues itself again (serviceAccountBatchPause) behind the other namespaces' work in
// the fair queue, so 10,000 ServiceAccounts of one tenant delay another namespace's copy by one
// batch, not by 10,000 writes. A list of names (at most 16) always fits in one pass.
const serviceAccountWritesPerPass = 64

// serviceAccountBatchPause is how long a namespace's target pass waits before its next batch of
// ServiceAccounts: at most serviceAccountWritesPerPass writes per pause per namespace and
// SecretSync (128 a second), so one tenant's ServiceAccounts cannot take the manager's whole
// write rate. It is the shortest requeue of the copy path (minRequeue).
const serviceAccountBatchPause = minRequeue

// syncPullSecrets brings the imagePullSecrets of the selected ServiceAccounts in line with the
// live copies, in every namespace where this SecretSync has or wants copies. It runs after the
// copies are written and before copies are removed: a copy is listed once it exists and is not in
// conflict. limit bounds the writes per namespace (serviceAccountWritesPerPass; zero: none): the
// namespaces with more to write are left in res.accountsLeft.
func (r *Reconciler) syncPullSecrets(ctx context.Context, ss *v1alpha1.SecretSync, obs observation, plan propagation.Plan, res *result, limit int) {
	accounts := propagation.AccountsFor(ss.Spec.ImagePullSecretFor)
	want, known, notDocker := propagation.PullSecretNames(plan, obs.want, obs.lookup, obs.owned, accounts.Any())
	res.notDockerConfig = append(res.notDockerConfig, notDocker...)

	sas := &corev1.ServiceAccountList{}
	if err := r.Client.List(ctx, sas, client.InNamespace(obs.only), client.UnsafeDisableDeepCopy); err != nil {
		res.writeErr = errors.Join(res.writeErr, err)
		return
	}
	// Decide on the cached form: at steady state nothing changes, and nothing is read or written.
	type change struct {
		sa *corev1.ServiceAccount
		// store: per pass; paid by the admin's spec.imagePullSecretFor.
		want   map[string]bool
		digest [sha256.Size]byte
	}
	var todo []change
	var present map[types.NamespacedName]bool
	if obs.only == "" {
		present = make(map[types.NamespacedName]bool, len(sas.Items))
	}
	digests := map[string][sha256.Size]byte{} // by namespace, and "!" + namespace for not selected
	for i := range sas.Items {
		sa := &sas.Items[i]
		if present != nil {
			present[client.ObjectKeyFromObject(sa)] = true
		}
		selected := accounts.Selects(sa.Name)
		if known[sa.Namespace] == nil || (!selected && sa.Annotations[keys.AnnotationPullSecrets] == "") {
			continue
		}
		w, dk := want[sa.Namespace], sa.Namespace
		if !selected {
			w, dk = nil, "!"+sa.Namespace
		}
		if _, changed := propagation.PullSecrets(sa, w, known[sa.Namespace]); !changed {
			continue
		}
		d, ok := digests[dk]
		if !ok {
			d = wantedDigest(w, known[sa.Namespace])
			digests[dk] = d
		}
		if r.targets.inStep(ss.Name, client.ObjectKeyFromObject(sa), sa.ResourceVersion, d) {
			continue // read past the cache at this version: nothing to write
		}
		todo = append(todo, change{sa, w, d})
	}
	if present != nil {
		r.targets.accounts.keepOnly(ss.Name, present)
	}
	// A whole pass leaves a namespace whose target pass is between batches to that pass: the
	// pause between batches holds whatever else wakes the whole pass.
	if obs.only == "" && limit > 0 {
		todo = slices.DeleteFunc(todo, func(c change) bool {
			_, batching := r.targets.batches.load(batchOf(c.sa.Namespace, ss.Name))
			if batching {
				res.accountsLeft = append(res.accountsLeft, c.sa.Namespace)
			}
			return batching
		})
	}
	now, later := propagation.PerNamespace(todo, func(c change) string { return c.sa.Namespace }, limit)
	res.accountsLeft = append(res.accountsLeft, later...)
	slices.Sort(res.accountsLeft)
	res.accountsLeft = slices.Compact(res.accountsLeft)
	if len(now) == 0 {
		return
	}
	// A pod takes its ServiceAccount's imagePullSecrets when it is created: these writes are
	// waited for, like copies (writegate).
	if r.Writes != nil {
		r.Writes.Begin()
		defer r.Writes.End()
	}
	errs := make([]error, len(now))
	conflicts := make([]bool, len(now))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, r.Workers))
	for i, c := range now {
		g.Go(func() error {
			conflicts[i], errs[i] = r.patchPullSecrets(gctx, ss.Name, c.sa, c.want, known[c.sa.Namespace], c.digest)
			return nil
		})
	}
	_ = g.Wait()
	for i := range now {
		res.requeue = res.requeue || conflicts[i]
		res.writeErr = errors.Join(res.writeErr, errs[i])
	}
}

// patchPullSecrets writes one ServiceAccount's imagePullSecrets. The cache keeps a bounded form
// (trimServiceAccount: not every entry a tenant listed), and a merge patch replaces the whole
// list: decide and patch against the API's object, on its version. conflict is set when the
// ServiceAccount changed under us (the pass is retried shortly).
func (r *Reconciler) patchPullSecrets(ctx context.Context, ssName string, sa *corev1.ServiceAccount, want, known map[string]bool, digest [sha256.Size]byte) (conflict bool, err error) {
	key := client.ObjectKeyFromObject(sa)
	live := &corev1.ServiceAccount{}
	if err := r.APIReader.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading ServiceAccount %s: %w", klog.KObj(sa), err)
	}
	updated, changed := propagation.PullSecrets(live, want, known)
	if !changed {
		// In step, though the cached form said otherwise (or the cache was behind): not read
		// again at this version for this wanted state.
		r.targets.accounts.store(account(ssName, key), accountVerdict{live.ResourceVersion, digest})
		return false, nil
	}
	r.targets.accounts.delete(account(ssName, key))
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{}), client.FieldOwner(propagation.FieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return true, nil
		}
		r.Metrics.Failures.WithLabelValues(ssName).Inc()
		return false, fmt.Errorf("patching ServiceAccount %s: %w", klog.KObj(sa), err)
	}
	r.Metrics.Writes.WithLabelValues(ssName, "serviceaccount").Inc()
	return false, nil
}

// cleanup handles a SecretSync that is gone: every copy still labelled with its name is
// deleted or released as the copy's deletion-policy annotation says, and the imagePullSecrets
// entries we added for them are removed. Copies carry the policy so that no finalizer is needed:
// deleting a SecretSync never hangs, even when the manager is not running, and the cleanup runs
// when the manager next sees the copies.
func (r *Reconciler) cleanup(ctx context.Context, name string) (ctrl.Result, error) {
	if err := r.pruneSources(ctx); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.cleanupNamespace(ctx, wholePass(name))
	if err == nil && res.RequeueAfter == 0 {
		r.Metrics.forget(name)
	}
	return res, err
}

// goneFor is how long after a whole pass found a SecretSync gone the passes of its namespaces
// clean up the copies they find (cleanedUp).
const goneFor = 10 * time.Minute

// noteGone records that a whole pass found the named SecretSync gone, and forgets those found
// gone more than goneFor ago: once per deletion, not once per namespace pass (cleanedUp).
func (r *Reconciler) noteGone(name string) {
	now := r.now()
	r.gone.Range(func(k, v any) bool {
		if now.Sub(v.(time.Time)) > goneFor {
			r.gone.Delete(k)
		}
		return true
	})
	r.gone.Store(name, now)
}

// cleanedUp says whether a whole pass found the named SecretSync gone within goneFor. It reads
// one entry: a deletion queues one such pass per namespace.
func (r *Reconciler) cleanedUp(name string) bool {
	v, ok := r.gone.Load(name)
	return ok && r.now().Sub(v.(time.Time)) <= goneFor
}

// cleanupNamespace is cleanup for the copies in the namespace of req (every namespace for a
// whole pass), a pass of a SecretSync that is gone. The SecretSync is gone, and with it its
// source.kind: it looks at the copies of every kind.
func (r *Reconciler) cleanupNamespace(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	again := false
	for _, kind := range kinds {
		retry, err := r.cleanupKind(ctx, req.Name, kind, client.InNamespace(req.Namespace))
		if err != nil {
			return ctrl.Result{}, err
		}
		again = again || retry
	}
	return r.nextPass(req, result{requeue: again}, 0)
}

// cleanupKind is cleanup for the copies of one kind (in a namespace, with scope); retry says to
// look again shortly.
func (r *Reconciler) cleanupKind(ctx context.Context, name string, kind *objectKind, scope ...client.ListOption) (retry bool, err error) {
	copies := kind.list()
	opts := append([]client.ListOption{client.MatchingLabels{keys.LabelSecretSync: name}, client.UnsafeDisableDeepCopy}, scope...)
	if err := r.Client.List(ctx, copies, opts...); err != nil {
		return false, err
	}
	obs := observation{lookup: func(types.NamespacedName) *corev1.Secret { return nil }, owned: kind.items(copies)}
	if len(obs.owned) == 0 {
		return false, nil
	}
	// The spec is gone: each copy goes as its own annotation says. Its source is unknown, so a
	// copy without a valid proof is left as it is (see owner).
	plan := propagation.ComputeFor(r.owner(ctx, name, nil), nil, obs.lookup, obs.owned, propagation.PolicyAsRecorded)
	// ServiceAccounts before copies (see Reconcile): once the copies are gone, a retry could no
	// longer tell which imagePullSecrets entries were this SecretSync's.
	var sas result
	if kind == secretKind {
		// No bound per namespace: the copies go only after every entry for them has.
		r.syncPullSecrets(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: name}}, obs, plan, &sas, 0)
		if sas.requeue {
			return true, nil
		}
	}
	res := r.apply(ctx, name, kind, plan)
	if err := errors.Join(res.writeErr, sas.writeErr); err != nil {
		return false, err
	}
	return res.requeue || len(res.failures) > 0, nil
}

// owner is the Owner of the named SecretSync's copies: a copy is its own when it carries a valid
// proof (or, under the admission policy, our label and a proof annotation: see provenBy), and an
// unproven one that is not wanted is expendable when it holds what the template of its name (its
// data and type) holds.
func (r *Reconciler) owner(ctx context.Context, name string, templates map[string]*corev1.Secret) propagation.Owner {
	o := propagation.SecretSyncOwner(name)
	o.Proven = provenBy(r.Proofs, keys.LabelSecretSync, r.LabelProof.InForce(ctx))
	o.Expendable = func(s *corev1.Secret) bool {
		t := templates[s.Name]
		return t != nil && propagation.SameContent(s, t)
	}
	return o
}

// provenBy is the proof check of the copies labelled label: a valid proof under proofs' key ring;
// or, when the ownership-keys admission policy is in force (byLabel), our label (the plan checks
// its value) and a proof annotation of any value, which only the manager can have set.
func provenBy(proofs *propagation.Prover, label string, byLabel bool) func(*corev1.Secret) bool {
	return func(s *corev1.Secret) bool {
		if proofs.Proven(s, label) {
			return true
		}
		return byLabel && s.Labels[label] != "" && s.Annotations[keys.AnnotationOwnership] != ""
	}
}

// wholePass is the request of a SecretSync's whole pass.
func wholePass(name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// synced is the number of copies in step after the reconcile: already in step, found in step
// past the cache, or written now.
func (res result) synced() int {
	return res.inStep + res.caughtUp + res.written[propagation.OpCreate] + res.written[propagation.OpUpdate] + res.written[propagation.OpReplace]
}
