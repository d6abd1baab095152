package secretsync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// A copy that exists is written by server-side apply under propagation.FieldManager, with
// exactly the fields the manager owns: data (and binaryData), type, immutability, our labels and
// annotations (the ownership proof among them), the labels and annotations the SecretSync sets,
// and a CopyRequest copy's owner reference. Whatever else the copy carries (a tenant's label) is
// another field manager's and is left alone; a key the manager applied before and does not apply
// now is removed by the API server. A copy is created by a create (SSA has no "create only"
// precondition, kubernetes/kubernetes#116156: an apply would take over an object someone else
// made under the name), and replaced by a delete and a create.
//
// Force: an update of a proven copy is applied with force. The copy must stay exactly in step
// with its source, and it is provably the manager's, so a field another manager took (a tenant's
// kubectl edit of its data) is taken back; the cache saw who held it (managedFields,
// propagation.ForeignFieldManagers) and an Event on the copy names them (FieldsTakenBack). An
// adoption (a copy without a valid proof that holds the source's data) is applied without force:
// a field another manager holds makes it a Conflict, never a takeover.

// applyConfiguration is the apply configuration of want (a desired copy, a Secret or a ConfigMap's
// envelope) at resourceVersion rv: exactly the fields the manager owns.
func applyConfiguration(kind *objectKind, want *corev1.Secret, rv string) any {
	refs := make([]*metav1ac.OwnerReferenceApplyConfiguration, 0, len(want.OwnerReferences))
	for _, r := range want.OwnerReferences {
		ref := metav1ac.OwnerReference().WithAPIVersion(r.APIVersion).WithKind(r.Kind).WithName(r.Name).WithUID(r.UID)
		if r.Controller != nil {
			ref.WithController(*r.Controller)
		}
		if r.BlockOwnerDeletion != nil {
			ref.WithBlockOwnerDeletion(*r.BlockOwnerDeletion)
		}
		refs = append(refs, ref)
	}
	if kind == configMapKind {
		cm := propagation.ToConfigMap(want) // drops the envelope's record of binary keys
		c := corev1ac.ConfigMap(want.Name, want.Namespace).WithResourceVersion(rv).
			WithLabels(cm.Labels).WithAnnotations(cm.Annotations).WithOwnerReferences(refs...).
			WithData(cm.Data).WithBinaryData(cm.BinaryData)
		if cm.Immutable != nil {
			c.WithImmutable(*cm.Immutable)
		}
		return c
	}
	c := corev1ac.Secret(want.Name, want.Namespace).WithResourceVersion(rv).
		WithLabels(want.Labels).WithAnnotations(want.Annotations).WithOwnerReferences(refs...).
		WithType(want.Type).WithData(want.Data)
	if want.Immutable != nil {
		c.WithImmutable(*want.Immutable)
	}
	return c
}

// apply sends want's apply configuration on the copy at version rv (the version whose proof was
// checked: a copy changed or replaced since is a Conflict, as an update's would be) and returns
// the copy as the API server stored it. It goes through Patch with the apply patch type, not
// client.Apply, because the answer is needed whole: Apply decodes it into the apply
// configuration, which has no managedFields, and the upgrade of an older copy (upgrade) reads
// them.
func (w writer) apply(ctx context.Context, kind *objectKind, want *corev1.Secret, rv string, force bool) (client.Object, error) {
	raw, err := json.Marshal(applyConfiguration(kind, want, rv))
	if err != nil {
		return nil, err
	}
	obj := kind.object()
	obj.SetNamespace(want.Namespace)
	obj.SetName(want.Name)
	opts := []client.PatchOption{client.FieldOwner(propagation.FieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return obj, w.client.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, raw), opts...)
}

// update brings the copy a.Current to a.Desired by one apply. When the copy the API server
// returns still has a key that should be gone, another field manager holds that key: our own
// earlier writes (a copy created by a create, written before the manager applied, under
// propagation.LegacyFieldManager, or marked orphaned: Update entries), or another manager's (a
// tenant added a data key, or a key of ours). One merge patch on the version read then removes
// those keys and moves the fields of our Update entries to the apply's field manager (client-go's
// csaupgrade), so that the next apply removes by itself what it no longer sets; another
// manager's key is said in an Event (FieldsTakenBack). This costs a request only then.
func (w writer) update(ctx context.Context, kind *objectKind, a propagation.Action) error {
	force := !a.Adopt
	live, err := w.apply(ctx, kind, a.Desired, a.Current.ResourceVersion, force)
	if err != nil {
		if a.Adopt && apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict) {
			return &unmanagedError{kind.name, a.Key}
		}
		return err
	}
	told := false
	if m := propagation.CachedForeignFieldManagers(a.Current); force && len(m) > 0 {
		w.tell(live, m)
		told = true
	}
	data, labels, annotations := propagation.Leftovers(kind.wrap(live), a.Current, a.Desired)
	if len(data)+len(labels)+len(annotations) == 0 {
		if propagation.InStep(kind.wrap(live), a.Desired) {
			return nil
		}
		// Not a key left over: nothing another write can fix. Retried with backoff.
		return fmt.Errorf("the copy is not in step after its apply")
	}
	managers := propagation.ForeignFieldManagers(live.GetManagedFields())
	pruned := live.DeepCopyObject().(client.Object)
	// Our own earlier writes (a create, a patch of an older version) are Update entries: their
	// fields move to the apply's manager, so that the next apply removes what it no longer sets.
	if err := csaupgrade.UpgradeManagedFields(pruned, sets.New(propagation.LegacyFieldManager, propagation.FieldManager), propagation.FieldManager); err != nil {
		return fmt.Errorf("upgrading the field managers of the copy: %w", err)
	}
	pruned.SetLabels(without(pruned.GetLabels(), labels))
	pruned.SetAnnotations(without(pruned.GetAnnotations(), annotations))
	switch o := pruned.(type) {
	case *corev1.Secret:
		o.Data = without(o.Data, data)
	case *corev1.ConfigMap:
		o.Data, o.BinaryData = without(o.Data, data), without(o.BinaryData, data)
	}
	if err := w.client.Patch(ctx, pruned, client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{}), client.FieldOwner(propagation.FieldManager)); err != nil {
		return err
	}
	if len(managers) > 0 && !told {
		w.tell(pruned, managers)
	}
	return nil
}

// tell records the Event of a copy obj written back over managers' fields of it that the
// manager writes.
func (w writer) tell(obj client.Object, managers []string) {
	if w.recorder == nil {
		return
	}
	w.recorder.Eventf(obj, nil, corev1.EventTypeWarning, copyplan.ReasonFieldsTakenBack, "Apply",
		"field manager(s) %s had set fields of this copy that %s writes (its data, type, or keys of ours); they were set back to the source's: change the source, not the copy",
		strings.Join(managers, ", "), propagation.FieldManager)
}

// without is m without the keys ks (nil when nothing is left, as the API returns it).
func without[V any](m map[string]V, ks []string) map[string]V {
	if len(ks) == 0 {
		return m
	}
	out := maps.Clone(m)
	for _, k := range ks {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
