package propagation

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Desired is the copy of src that namespace should hold for the named SecretSync: same name,
// type, data and immutability; our label and source annotation; none of the source's server
// fields (uid, resourceVersion, ...), labels, annotations or owner references. src may be a
// ConfigMap's envelope (FromConfigMap): its record of binary keys travels.
//
// The copy's data map is its own, but its values are src's bytes, shared: every copy of a
// source holds the same values, and a pass over 10,000 namespaces (or 300 of a 1 MiB source)
// would otherwise allocate 10,000 (300) clones of them. Nothing may write into a value's bytes:
// sources come read-only from a cache, and the writer sends a deep copy of a desired copy.
func Desired(src *corev1.Secret, namespace, secretSync string) *corev1.Secret {
	cp := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      src.Name,
			Namespace: namespace,
			Labels:    map[string]string{keys.LabelSecretSync: secretSync, keys.LabelManagedBy: keys.ManagedByValue},
			Annotations: map[string]string{
				keys.AnnotationSource: src.Namespace + "/" + src.Name,
			},
		},
		Type: src.Type,
	}
	if b, ok := src.Annotations[keys.AnnotationBinaryKeys]; ok { // a ConfigMap's envelope
		cp.Annotations[keys.AnnotationBinaryKeys] = b
	}
	if src.Data != nil {
		cp.Data = maps.Clone(src.Data)
	}
	if src.Immutable != nil {
		v := *src.Immutable
		cp.Immutable = &v
	}
	return cp
}

// InStep reports whether the live copy cur already is what want describes, looking only at what
// we own: data, type, immutability, our label and annotations, and the labels and annotations
// the SecretSync sets (keys.AnnotationMetadataKeys). Nothing else matters, so metadata
// others add never causes a write.
func InStep(cur, want *corev1.Secret) bool {
	wl, wa := metadataKeys(want)
	return cur.Type == want.Type &&
		isTrue(cur.Immutable) == isTrue(want.Immutable) &&
		dataMatches(cur, want.Data) &&
		ownKeysMatch(cur.Labels, want.Labels, append(wl, ownLabels...)...) &&
		ownKeysMatch(cur.Annotations, want.Annotations, append(wa, ownAnnotations...)...)
}

// NeedsReplace reports whether cur can only become want by delete and create: the API refuses to
// change a Secret's type, and the data or immutability of an immutable Secret (its metadata
// stays writable, so a label or annotation fix is an update).
func NeedsReplace(cur, want *corev1.Secret) bool {
	return cur.Type != want.Type ||
		isTrue(cur.Immutable) && (!isTrue(want.Immutable) || !dataMatches(cur, want.Data))
}

// Merged is cur with what we own set from want and everything else kept: the object to Update.
func Merged(cur, want *corev1.Secret) *corev1.Secret {
	out := cur.DeepCopy()
	delete(out.Annotations, keys.AnnotationDataDigest) // a cache's record, never written
	out.Type = want.Type
	out.Data = want.Data
	out.StringData = nil
	out.Immutable = want.Immutable
	// The metadata keys recorded on cur and on want: those no longer wanted are removed.
	cl, ca := metadataKeys(cur)
	wl, wa := metadataKeys(want)
	out.Labels = setKeys(out.Labels, want.Labels, append(append(cl, wl...), ownLabels...)...)
	out.Annotations = setKeys(out.Annotations, want.Annotations, append(append(ca, wa...), ownAnnotations...)...)
	return out
}

// Released is cur with our label and annotation removed: the Secret is no longer managed and
// stays as it is (DeletionPolicy Orphan).
func Released(cur *corev1.Secret) *corev1.Secret {
	out := cur.DeepCopy()
	delete(out.Labels, keys.LabelSecretSync)
	if out.Labels[keys.LabelManagedBy] == keys.ManagedByValue {
		delete(out.Labels, keys.LabelManagedBy)
	}
	delete(out.Annotations, keys.AnnotationSource)
	delete(out.Annotations, keys.AnnotationDeletionPolicy)
	delete(out.Annotations, keys.AnnotationMetadataKeys) // the labels and annotations it lists stay, as the Secret does
	return out
}

// ownLabels are the label keys we set on copies.
var ownLabels = []string{keys.LabelSecretSync, keys.LabelCopyRequest, keys.LabelManagedBy}

// ownAnnotations are the annotation keys we set on every copy (an envelope's binary-key record
// stands for where a ConfigMap copy holds each key: data or binaryData).
var ownAnnotations = []string{keys.AnnotationSource, keys.AnnotationDeletionPolicy, keys.AnnotationMetadataKeys, keys.AnnotationBinaryKeys}

func isTrue(b *bool) bool { return b != nil && *b }

// DataDigest is a digest of data: equal for equal data (nil and empty alike), different for
// any change of a key or a value.
func DataDigest(data map[string][]byte) string {
	h := sha256.New()
	var n [20]byte
	for _, k := range slices.Sorted(maps.Keys(data)) {
		// Lengths first, so that no two different maps give the same byte stream.
		h.Write(strconv.AppendInt(n[:0], int64(len(k)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(k))
		h.Write(strconv.AppendInt(n[:0], int64(len(data[k])), 10))
		h.Write([]byte{':'})
		h.Write(data[k])
	}
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil))
}

// DropData replaces s's data by its digest (keys.AnnotationDataDigest), for a cache that keeps
// copies only to compare them: InStep and NeedsReplace compare the digest, and Merged writes
// the wanted data whole.
//
// It is idempotent, as client-go asks of a cache transform (an object may pass through it
// twice): a Secret without data that already carries the digest keeps it.
func DropData(s *corev1.Secret) {
	if _, done := s.Annotations[keys.AnnotationDataDigest]; done && s.Data == nil && s.StringData == nil {
		return
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[keys.AnnotationDataDigest] = DataDigest(s.Data)
	s.Data, s.StringData = nil, nil
}

// dataMatches reports whether cur holds data: by its digest when a cache dropped its data.
func dataMatches(cur *corev1.Secret, data map[string][]byte) bool {
	if d, ok := cur.Annotations[keys.AnnotationDataDigest]; ok {
		return d == DataDigest(data)
	}
	return sameData(cur.Data, data)
}

// sameData compares data byte for byte; nil and empty are the same (the API drops empty maps).
func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !bytes.Equal(va, vb) {
			return false
		}
	}
	return true
}

func ownKeysMatch(cur, want map[string]string, keys ...string) bool {
	for _, k := range keys {
		if cur[k] != want[k] {
			return false
		}
	}
	return true
}

func setKeys(dst, src map[string]string, keys ...string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		} else {
			delete(dst, k)
		}
	}
	return dst
}
