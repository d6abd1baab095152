package propagation

import (
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Metadata is what a copy carries besides our own keys: extra labels and annotations on every
// copy, and which of the source's travel.
type Metadata struct {
	// Labels and Annotations are set on every copy.
	// store: configuration; paid by the admin's spec (bounded by the CRD).
	Labels, Annotations map[string]string
	// SourceLabels and SourceAnnotations pick the source's keys that travel: a key, a prefix
	// ending in "*" ("app.kubernetes.io/*"), or "*" for all. Empty: none travel.
	SourceLabels, SourceAnnotations []string
}

// Reserved reports whether key is one the copies' metadata may never carry from a SecretSync:
// our own keys, the managed-by label, and kubectl's last-applied annotation.
func Reserved(key string) bool {
	return strings.HasPrefix(key, "ops.platform-operators.io/") || key == keys.LabelManagedBy ||
		key == "kubectl.kubernetes.io/last-applied-configuration"
}

// WithMetadata adds m to want, the desired copy of src: the source's keys m picks, then m's own
// labels and annotations over them, and the record of the keys set. Reserved keys are skipped.
func WithMetadata(want, src *corev1.Secret, m Metadata) {
	if len(m.Labels)+len(m.Annotations)+len(m.SourceLabels)+len(m.SourceAnnotations) == 0 {
		return // the common case costs nothing per copy
	}
	labels := pick(src.Labels, m.SourceLabels)
	annotations := pick(src.Annotations, m.SourceAnnotations)
	maps.Copy(labels, m.Labels)
	maps.Copy(annotations, m.Annotations)
	set := func(dst, src map[string]string) (set []string) {
		for k, v := range src {
			if !Reserved(k) {
				dst[k] = v
				set = append(set, k)
			}
		}
		sort.Strings(set)
		return set
	}
	if lk, ak := set(want.Labels, labels), set(want.Annotations, annotations); len(lk)+len(ak) > 0 {
		want.Annotations[keys.AnnotationMetadataKeys] = "labels=" + strings.Join(lk, ",") + ";annotations=" + strings.Join(ak, ",")
	}
}

// metadataKeys returns the label and annotation keys recorded on s.
func metadataKeys(s *corev1.Secret) (labels, annotations []string) {
	rec := s.Annotations[keys.AnnotationMetadataKeys]
	for _, part := range strings.Split(rec, ";") {
		name, keys, ok := strings.Cut(part, "=")
		if !ok || keys == "" {
			continue
		}
		switch name {
		case "labels":
			labels = strings.Split(keys, ",")
		case "annotations":
			annotations = strings.Split(keys, ",")
		}
	}
	return labels, annotations
}

// pick returns the entries of m whose key one of patterns selects.
func pick(m map[string]string, patterns []string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		for _, p := range patterns {
			if p == k || p == "*" || (strings.HasSuffix(p, "*") && strings.HasPrefix(k, strings.TrimSuffix(p, "*"))) {
				out[k] = v
				break
			}
		}
	}
	return out
}
