package secretsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// readyCondition decides the Ready condition from what the reconcile saw and did. Reasons are
// ordered by what the user must fix first.
func readyCondition(obs observation, res result, generation int64) metav1.Condition {
	c := metav1.Condition{Type: copyplan.ConditionReady, ObservedGeneration: generation, Status: metav1.ConditionFalse}
	synced := res.synced()
	switch {
	case obs.blocked != nil:
		c.Reason, c.Message = obs.blocked.reason, obs.blocked.message
	case obs.unconfirmed != nil:
		c.Reason, c.Message = obs.unconfirmed.reason, obs.unconfirmed.message
	case len(obs.unmanaged) > 0:
		c.Reason, c.Message = copyplan.ReasonNamespaceNotManaged, unmanagedMessage(obs.unmanaged)
	case obs.sourceMissing && len(obs.withheld) > 0:
		c.Reason, c.Message = copyplan.ReasonSourceWithheld, withheldMessage(obs.withheld)
	case obs.sourceMissing:
		c.Reason, c.Message = copyplan.ReasonSourceNotFound, "the source Secret does not exist; copies are removed per deletionPolicy and return when it does"
	case len(res.failures) > 0:
		c.Reason, c.Message = failedCondition(res.failures)
	case len(res.conflicts) > 0:
		c.Reason, c.Message = copyplan.ReasonConflict, fmt.Sprintf("%d targets are held by Secrets this SecretSync may not manage; see status.failures", len(res.conflicts))
	case len(obs.withheld) > 0:
		c.Reason, c.Message = copyplan.ReasonSourceWithheld, withheldMessage(obs.withheld)
	case len(obs.missingKeys) > 0:
		var parts []string
		for src, keys := range obs.missingKeys {
			parts = append(parts, fmt.Sprintf("%s has no %s", src, strings.Join(keys, ", ")))
		}
		sort.Strings(parts)
		c.Reason, c.Message = copyplan.ReasonKeysNotFound, fmt.Sprintf("spec.keys names keys a source does not have (the other keys are copied): %s", strings.Join(parts, "; "))
	case len(res.notDockerConfig) > 0:
		c.Reason, c.Message = copyplan.ReasonNotDockerConfigJSON, fmt.Sprintf("imagePullSecretFor needs copies of type kubernetes.io/dockerconfigjson; not: %s", strings.Join(slices.Sorted(slices.Values(res.notDockerConfig)), ", "))
	case res.requeue:
		c.Reason, c.Message = copyplan.ReasonProgressing, fmt.Sprintf("synced %d/%d copies", synced, res.desired)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, copyplan.ReasonSynced, fmt.Sprintf("synced %d/%d copies", synced, res.desired)
	}
	return c
}

// maxWithheldNamed bounds the sources a SourceWithheld message names.
const maxWithheldNamed = 5

// withheldMessage tells the admin which sources the spec picks are never copied, and why.
func withheldMessage(withheld map[string]string) string {
	return fmt.Sprintf("%d sources the spec picks are never copied, whatever the SecretSync says: %s; the other sources are copied, and copies of these are removed per deletionPolicy. Narrow spec.source (a name, a selector or spec.source.type) to leave them out",
		len(withheld), propagation.WithheldMessage(withheld, maxWithheldNamed))
}

// failedCondition is the reason and message of a Ready condition with failures: Held when every
// failure is a copy held Terminating, WriteFailed otherwise; the message names the first copy
// (in status.failures' order), so a user sees which one without reading the list.
func failedCondition(failures []v1alpha1.TargetFailure) (reason, message string) {
	fs := boundedFailures(failures, nil)
	reason, what := copyplan.ReasonHeld, "are being deleted and held by a finalizer"
	if slices.ContainsFunc(fs, func(f v1alpha1.TargetFailure) bool { return f.Reason != copyplan.ReasonHeld }) {
		reason, what = copyplan.ReasonWriteFailed, "could not be written"
	}
	first := fs[0]
	return reason, fmt.Sprintf("%d copies %s (%s/%s: %s); see status.failures", len(failures), what, first.Namespace, first.Name, first.Reason)
}

// secretSyncStatus decides the status a pass gives, from what it saw and did; now is the time a
// write is recorded at. It is pure: ss is not changed.
func secretSyncStatus(ss *v1alpha1.SecretSync, obs observation, res result, now time.Time) *v1alpha1.SecretSyncStatus {
	synced := res.synced()
	st := ss.Status.DeepCopy()
	st.ObservedGeneration = ss.Generation
	st.Sources, st.Targets = int32(len(obs.sources)), int32(len(obs.targets))
	st.Desired, st.Synced = int32(res.desired), int32(synced)
	st.Conflicts, st.Failed = int32(len(res.conflicts)), int32(len(res.failures))
	st.SyncedRatio = fmt.Sprintf("%d/%d", synced, res.desired)
	st.Failures = boundedFailures(res.failures, res.conflicts)
	meta.SetStatusCondition(&st.Conditions, readyCondition(obs, res, ss.Generation))
	if res.writes() > 0 || res.targetWrote {
		t := metav1.NewTime(now)
		st.LastSyncTime = &t
	}
	return st
}

// writeStatus writes the status when it changed, then emits events for what changed, and says
// when to come back.
func (r *Reconciler) writeStatus(ctx context.Context, ss *v1alpha1.SecretSync, obs observation, res result) (ctrl.Result, error) {
	prev := ss.Status.DeepCopy()
	st := secretSyncStatus(ss, obs, res, r.now())

	r.Metrics.Desired.WithLabelValues(ss.Name).Set(float64(res.desired))
	r.Metrics.Synced.WithLabelValues(ss.Name).Set(float64(res.synced()))
	r.Metrics.Conflicts.WithLabelValues(ss.Name).Set(float64(len(res.conflicts)))
	r.Metrics.Failures.WithLabelValues(ss.Name) // the series exists at 0 from the first pass: increase() and alerts see the first failure

	// The cached SecretSync can be older than our own last status write (a reconcile woken at
	// once by the event that made the last one requeue): equal to prev then proves nothing, and
	// skipping the write would leave that last status (say Progressing) in the API for good, as
	// status changes do not wake the controller. So an equal status is skipped only when the
	// cached version is one this process wrote; otherwise it is written: from a stale object the
	// write conflicts and is retried once the cache has caught up, and on the current one it
	// changes nothing (once per SecretSync after a start or another writer's change).
	if !equality.Semantic.DeepEqual(prev, st) || !r.confirmed.Confirmed(ss) {
		// An update (not a merge patch) so zero counts are stored too and `kubectl get` shows
		// "0 conflicts" rather than a blank; a conflict with a concurrent write retries.
		ss.Status = *st
		switch answer, err := statuswrite.Update(ctx, r.Client, ss, true); {
		case err != nil, answer != statuswrite.Written:
			if res.targetWrote {
				r.targetWrites.Store(ss.Name, true) // for the retry's lastSyncTime
			}
			if err != nil {
				return ctrl.Result{}, err
			}
			return requeue(r.stale.next(wholePass(ss.Name), r.RetryBase, r.RetryCap)), nil
		}
		r.confirmed.Wrote(ss)
	}
	r.emitEvents(ss, prev, st, res)

	// A target held by a Secret we do not manage frees up without an event to us: that Secret
	// is not cached (the cache holds only our copies), and another SecretSync's copy going away
	// wakes only that SecretSync. Look again now and then, so the copy moves in once the way
	// is free, as the Conflict message promises. A recheck with nothing new writes nothing.
	var recheck time.Duration
	if len(res.conflicts) > 0 {
		recheck = orDefault(r.ConflictRecheck, DefaultConflictRecheck)
	}
	return r.nextPass(wholePass(ss.Name), res, recheck)
}

// writeReadFailure records that a pass could not read the world: Ready turns False with reason
// ReadFailed (a Warning Event when the reason is new), the counts of the last pass stay, and
// readErr is returned so the pass is retried with backoff.
func (r *Reconciler) writeReadFailure(ctx context.Context, ss *v1alpha1.SecretSync, readErr error) (ctrl.Result, error) {
	prev := ss.Status.DeepCopy()
	st := ss.Status.DeepCopy()
	msg := boundedMessage(readErr)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: copyplan.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: ss.Generation,
		Reason: copyplan.ReasonReadFailed, Message: fmt.Sprintf("the pass could not read what it needs, so nothing was written; retried with backoff: %s", msg),
	})
	ss.Status = *st
	switch answer, err := statuswrite.Update(ctx, r.Client, ss, !equality.Semantic.DeepEqual(prev, st)); {
	case err != nil:
		return ctrl.Result{}, errors.Join(readErr, err)
	case answer == statuswrite.Written:
		r.confirmed.Wrote(ss)
		r.emitEvents(ss, prev, st, result{})
	}
	return ctrl.Result{}, readErr
}

// emitEvents reports what changed since the last status: writes done, new conflicts, a new
// blocking reason. A resync with nothing new emits nothing (an Event is an API write too).
func (r *Reconciler) emitEvents(ss *v1alpha1.SecretSync, prev, cur *v1alpha1.SecretSyncStatus, res result) {
	r.emitWrites(ss, res, "(synced "+cur.SyncedRatio+")")
	seen := map[string]bool{}
	for _, f := range prev.Failures {
		seen[f.Namespace+"/"+f.Name+"/"+f.Reason] = true
	}
	for _, f := range cur.Failures {
		if !seen[f.Namespace+"/"+f.Name+"/"+f.Reason] {
			r.Recorder.Eventf(ss, nil, corev1.EventTypeWarning, f.Reason, "Sync", "%s/%s: %s", f.Namespace, f.Name, f.Message)
		}
	}
	before := meta.FindStatusCondition(prev.Conditions, copyplan.ConditionReady)
	after := meta.FindStatusCondition(cur.Conditions, copyplan.ConditionReady)
	if after != nil && after.Status == metav1.ConditionFalse && after.Reason != copyplan.ReasonConflict && after.Reason != copyplan.ReasonWriteFailed && after.Reason != copyplan.ReasonHeld && after.Reason != copyplan.ReasonProgressing &&
		(before == nil || before.Reason != after.Reason) {
		r.Recorder.Eventf(ss, nil, corev1.EventTypeWarning, after.Reason, "Sync", "%s", after.Message)
	}
}

// emitWrites reports the copies a pass wrote in a CopiesWritten Event (none when it wrote
// nothing), with where (a target pass's namespace) or how far (the synced ratio) it got.
func (r *Reconciler) emitWrites(ss *v1alpha1.SecretSync, res result, where string) {
	if len(res.written) == 0 {
		return
	}
	var parts []string
	for _, op := range []propagation.Op{propagation.OpCreate, propagation.OpUpdate, propagation.OpReplace, propagation.OpDelete, propagation.OpRelease, propagation.OpOrphan} {
		if c := res.written[op]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, c))
		}
	}
	r.Recorder.Eventf(ss, nil, corev1.EventTypeNormal, copyplan.ReasonCopiesWritten, "Sync", "Copies written: %s %s", strings.Join(parts, ", "), where)
}

// boundedFailures lists failures first, then conflicts, at most MaxReportedFailures, sorted
// within each kind so the status does not change order between reconciles.
func boundedFailures(failures, conflicts []v1alpha1.TargetFailure) []v1alpha1.TargetFailure {
	byTarget := func(a, b v1alpha1.TargetFailure) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}
	slices.SortFunc(failures, byTarget)
	slices.SortFunc(conflicts, byTarget)
	out := append(append([]v1alpha1.TargetFailure{}, failures...), conflicts...)
	if len(out) > v1alpha1.MaxReportedFailures {
		out = out[:v1alpha1.MaxReportedFailures]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// writes counts the copies this pass created, updated, recreated or deleted.
func (res result) writes() int {
	n := 0
	for _, c := range res.written {
		n += c
	}
	return n
}

func (r *Reconciler) now() time.Time { return now(r.Clock) }

// now is c's time, the real clock's when c is nil.
func now(c clock.PassiveClock) time.Time {
	if c == nil {
		return time.Now()
	}
	return c.Now()
}

// orDefault is d when it is set (positive), def otherwise.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
