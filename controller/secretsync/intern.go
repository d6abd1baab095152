package secretsync

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache keeps one object per copy, per namespace and per ServiceAccount: at 10,000
// namespaces, 30,000 objects whose strings the watch decoder allocated one by one. Most of those
// strings are the same in every object of a kind: the label and annotation keys, and for the
// copies of one source also the name, the type, the SecretSync's name, the source reference and
// the data digest. The cache transforms replace them by one shared copy each (unique.Make), which
// takes about a quarter off a cached copy (BenchmarkCachedBytes). The strings that differ from
// object to object (namespace, uid, resourceVersion) are left as they are: interning them would
// only add a table entry each.
//
// unique's table holds its entries weakly, so a string nothing uses any more leaves it; a string
// interned again after a garbage collection may get a second copy, which costs only what
// interning would have saved.

// intern returns the shared copy of s.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMap replaces every key and value of m by its shared copy, in place. Assigning to a key
// already in a map stores the new key string too (the runtime updates string keys on
// assignment), so no entry is added and the map is not rebuilt.
func internMap(m map[string]string) {
	for k, v := range m {
		m[intern(k)] = intern(v)
	}
}

// internCopyMeta interns what the copies of one source share: their name, and all their labels
// and annotations (ours, the ones a SecretSync sets, the data digest).
func internCopyMeta(m *metav1.ObjectMeta) {
	m.Name = intern(m.Name)
	internMap(m.Labels)
	internMap(m.Annotations)
}
