package jobs

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// ControllerUIDIndex is the field index of Jobs by the UID of their controller (owner
// reference with controller=true), so a parent finds its Jobs without listing the namespace.
const ControllerUIDIndex = ".metadata.ownerReferences.controller.uid"

// IndexByControllerUID registers ControllerUIDIndex for Jobs with the manager's field indexer.
func IndexByControllerUID(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &batchv1.Job{}, ControllerUIDIndex, func(obj client.Object) []string {
		if ref := metav1.GetControllerOf(obj); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	})
}

// CacheKind limits the manager's Job cache to the Jobs it created, so clusters with many other
// Jobs cost no memory, each trimmed (Trim): a Job carrying our label, which a tenant can create
// where the chart's admission policies are off, costs a bounded few hundred bytes.
func CacheKind() cachebounds.Kind {
	req, err := labels.NewRequirement(keys.LabelCreatedBy, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid requirement
	}
	return cachebounds.Kind{
		Object: &batchv1.Job{}, Label: labels.NewSelector().Add(*req), Transform: Trim,
		Bound: "Jobs labelled " + keys.LabelCreatedBy + " only; Trim: identity, controller reference, our label and Kueue's queue-name label, two annotations cut to 1 KiB, spec.suspend, spec.managedBy cut to 1 KiB, status",
	}
}

// maxKeptValue bounds each label and annotation value Trim keeps: ours are short (a kind, an
// RFC 3339 time, a run-now token). A longer value is cut; for a run-now token over 1 KiB (which
// docs/scheduling.md asks users not to use) that only makes its finished Job prunable early.
const maxKeptValue = 1024

// Trim is the Job cache's transform: it keeps what the At and ScheduledJob controllers read of a
// Job and drops the rest. Nothing updates a Job from the cache (Jobs are created whole and
// deleted by UID), so the dropped fields are never written back.
func Trim(obj any) (any, error) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	out := &batchv1.Job{
		TypeMeta: j.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: j.Name, Namespace: j.Namespace, UID: j.UID, ResourceVersion: j.ResourceVersion,
			Generation: j.Generation, CreationTimestamp: j.CreationTimestamp, DeletionTimestamp: j.DeletionTimestamp,
			Labels:      keep(j.Labels, keys.LabelCreatedBy, jobstate.QueueNameLabel),
			Annotations: keep(j.Annotations, jobstate.ScheduledTimeAnnotation, keys.AnnotationRunNowToken),
		},
		// spec.suspend: a suspended Job (held by a queue such as Kueue) has no pod by design and
		// is never reported as one whose pods are not created (jobstate.PodsNotCreated).
		// spec.managedBy: a Job another controller manages (Kueue's MultiKueue) gets no pod from
		// the built-in Job controller either, and waits (jobstate.Judge) rather than is stuck.
		Spec:   batchv1.JobSpec{Suspend: j.Spec.Suspend, ManagedBy: cut(j.Spec.ManagedBy)},
		Status: j.Status,
	}
	if ref := metav1.GetControllerOf(j); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return out, nil
}

// cut returns a copy of s cut to maxKeptValue bytes (the API server allows 63 for managedBy).
func cut(s *string) *string {
	if s == nil {
		return nil
	}
	v := (*s)[:min(len(*s), maxKeptValue)]
	return &v
}

// keep returns the entries of m under the given keys, each value cut to maxKeptValue bytes.
func keep(m map[string]string, names ...string) map[string]string {
	var out map[string]string
	for _, k := range names {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(names))
			}
			out[k] = *cut(&v)
		}
	}
	return out
}
