package secretsync

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// WantedCopy is the copy of src (a source Secret, or a ConfigMap's envelope) that namespace
// should hold for ss: propagation.Desired under spec.target.name, with the metadata and keys the
// spec sets and the deletion policy recorded; missing lists the keys spec.keys names that src
// lacks. It carries no ownership proof: the manager signs it (propagation.Prover.Prove) with a
// key only it reads. Pure: the reconciler builds every wanted copy with it, and
// `kubectl platform why` the one it compares with a live copy.
func WantedCopy(ss *v1alpha1.SecretSync, src *corev1.Secret, namespace string) (want *corev1.Secret, missing []string) {
	tgt := ss.Spec.Target
	w := propagation.Desired(src, namespace, ss.Name)
	if tgt.Name != "" {
		w.Name = tgt.Name // a renamed copy (admission allows it only with source.name)
	}
	propagation.WithMetadata(w, src, propagation.Metadata{Labels: tgt.Labels, Annotations: tgt.Annotations, SourceLabels: tgt.SourceLabels, SourceAnnotations: tgt.SourceAnnotations})
	missing = propagation.ApplyKeys(w, keysOf(ss.Spec.Keys))
	w.Annotations[keys.AnnotationDeletionPolicy] = propagation.DeletionPolicy(string(ss.Spec.DeletionPolicy))
	return w, missing
}
