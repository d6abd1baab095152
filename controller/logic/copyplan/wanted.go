package copyplan

import (
	"cmp"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// Wanted is the copy of src (a source Secret, or a ConfigMap's envelope) that namespace should
// hold for ss: propagation.Desired under spec.target.name, with the metadata and keys the spec
// sets and the deletion policy recorded; missing lists the keys spec.keys names that src lacks. It
// carries no ownership proof: the manager signs it (propagation.Prover.Prove) with a key only it
// reads. The reconciler builds every wanted copy with it, and `kubectl platform why` the one it
// compares with a live copy.
func Wanted(ss *v1alpha1.SecretSync, src *corev1.Secret, namespace string) (want *corev1.Secret, missing []string) {
	tgt := ss.Spec.Target
	w := propagation.Desired(src, namespace, ss.Name)
	if tgt.Name != "" {
		w.Name = tgt.Name // a renamed copy (admission allows it only with source.name)
	}
	propagation.WithMetadata(w, src, propagation.Metadata{Labels: tgt.Labels, Annotations: tgt.Annotations, SourceLabels: tgt.SourceLabels, SourceAnnotations: tgt.SourceAnnotations})
	missing = propagation.ApplyKeys(w, Keys(ss.Spec.Keys))
	w.Annotations[keys.AnnotationDeletionPolicy] = propagation.DeletionPolicy(string(ss.Spec.DeletionPolicy))
	return w, missing
}

// Keys is spec.keys as propagation.ApplyKeys takes it.
func Keys(k *v1alpha1.SecretSyncKeys) propagation.Keys {
	if k == nil {
		return propagation.Keys{}
	}
	out := propagation.Keys{Include: k.Include, Exclude: k.Exclude}
	for _, r := range k.Rename {
		if out.Rename == nil {
			out.Rename = map[string]string{}
		}
		out.Rename[r.From] = r.To
	}
	return out
}

// CopyNames are the names Wanted gives the copies of sources, sorted and once each:
// spec.target.name, else spec.source.name, else each source's. With the sources unknown (nil),
// the name the spec fixes, if it fixes one.
func CopyNames(ss *v1alpha1.SecretSync, sources []*corev1.Secret) []string {
	if n := cmp.Or(ss.Spec.Target.Name, ss.Spec.Source.Name); n != "" {
		return []string{n}
	}
	var out []string
	for _, s := range sources {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
