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
// we own: data, type, immutability, our label and annotations, the labels and annotations
// the SecretSync sets (keys.AnnotationMetadataKeys), and no other key of ours (a tenant's, which
// a repair removes). Nothing else matters, so metadata others add never causes a write. cur may
// be a cache's bounded form (Bounded).
func InStep(cur, want *corev1.Secret) bool {
	wl, wa := metadataKeys(want)
	fl, fa := foreignOwnKeys(cur, want)
	annotations := ownAnnotations
	if bounded(cur) {
		annotations = ownAnnotations[:len(ownAnnotations)-1] // binary keys: in the content digest
	}
	return typeMatches(cur, want) &&
		isTrue(cur.Immutable) == isTrue(want.Immutable) &&
		dataMatches(cur, want) &&
		ownKeysMatch(cur.Labels, want.Labels, ownLabels...) &&
		ownKeysMatch(cur.Annotations, want.Annotations, annotations...) &&
		metadataMatches(cur, want, wl, wa) &&
		len(fl)+len(fa) == 0
}

// NeedsReplace reports whether cur can only become want by delete and create: the API refuses to
// change a Secret's type, and the data or immutability of an immutable Secret (its metadata
// stays writable, so a label or annotation fix is an update).
func NeedsReplace(cur, want *corev1.Secret) bool {
	return !typeMatches(cur, want) ||
		isTrue(cur.Immutable) && (!isTrue(want.Immutable) || !dataMatches(cur, want))
}

// Merged is cur with what we own set from want and everything else kept: the object an update
// makes of cur (see changedKeys). Our keys on cur that want does not carry are removed.
func Merged(cur, want *corev1.Secret) *corev1.Secret {
	out := cur.DeepCopy()
	for _, k := range cacheOnly { // a cache's records, never written
		delete(out.Annotations, k)
	}
	out.Type = want.Type
	out.Data = want.Data
	out.StringData = nil
	out.Immutable = want.Immutable
	ls, as := changedKeys(cur, want)
	out.Labels = setKeys(out.Labels, want.Labels, ls...)
	out.Annotations = setKeys(out.Annotations, want.Annotations, as...)
	return out
}

// changedKeys are the label and annotation keys an update of cur to want sets or removes: ours,
// and those the SecretSync set, recorded on cur or on want.
func changedKeys(cur, want *corev1.Secret) (labels, annotations []string) {
	cl, ca := metadataKeys(cur)
	wl, wa := metadataKeys(want)
	fl, fa := foreignOwnKeys(cur, want)
	return slices.Concat(cl, wl, ownLabels, fl), slices.Concat(ca, wa, ownAnnotations, fa)
}

// Released is cur with our label and annotation removed: the Secret is no longer managed and
// stays as it is (DeletionPolicy Orphan).
func Released(cur *corev1.Secret) *corev1.Secret {
	out := cur.DeepCopy()
	delete(out.Labels, keys.LabelSecretSync)
	if out.Labels[keys.LabelManagedBy] == keys.ManagedByValue {
		delete(out.Labels, keys.LabelManagedBy)
	}
	// The labels and annotations keys.AnnotationMetadataKeys lists stay, as the Secret does.
	for _, k := range []string{keys.AnnotationSource, keys.AnnotationDeletionPolicy, keys.AnnotationMetadataKeys, keys.AnnotationOwnership, keys.AnnotationOrphaned} {
		delete(out.Annotations, k)
	}
	return out
}

// ownLabels are the label keys we set on copies.
var ownLabels = []string{keys.LabelSecretSync, keys.LabelCopyRequest, keys.LabelManagedBy}

// ownAnnotations are the annotation keys we set on every copy (an envelope's binary-key record
// stands for where a ConfigMap copy holds each key: data or binaryData). The binary-key record
// stays last (see InStep).
var ownAnnotations = []string{keys.AnnotationSource, keys.AnnotationDeletionPolicy, keys.AnnotationMetadataKeys, keys.AnnotationOwnership, keys.AnnotationBinaryKeys}

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

// dataMatches reports whether cur holds want's content: by its digest when cur is a cache's
// bounded form (an envelope's binary-key record included).
func dataMatches(cur, want *corev1.Secret) bool {
	if d, ok := cur.Annotations[keys.AnnotationDataDigest]; ok && bounded(cur) {
		return d == contentDigest(want)
	}
	return sameData(cur.Data, want.Data)
}

// typeMatches reports whether cur has want's type (a cache keeps a long type as its digest).
func typeMatches(cur, want *corev1.Secret) bool {
	return valueMatches(string(cur.Type), string(want.Type))
}

// metadataMatches reports whether cur carries want's values of the labels ls and annotations as
// its SecretSync sets: by their digest when cur is a cache's bounded form.
func metadataMatches(cur, want *corev1.Secret, ls, as []string) bool {
	if d, ok := cur.Annotations[keys.AnnotationMetadataDigest]; ok && bounded(cur) {
		return d == metadataDigest(want, ls, as)
	}
	return ownKeysMatch(cur.Labels, want.Labels, ls...) && ownKeysMatch(cur.Annotations, want.Annotations, as...)
}

// sameData compares data byte for byte; nil and empty are the same (the API drops empty maps).
func sameData(a, b map[string][]byte) bool { return maps.EqualFunc(a, b, bytes.Equal) }

func ownKeysMatch(cur, want map[string]string, keys ...string) bool {
	for _, k := range keys {
		if !valueMatches(cur[k], want[k]) {
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

// Leftovers are the keys of cur, a live copy, that want does not have: data keys; labels and
// annotations of ours (foreignOwnKeys); and the labels and annotations the SecretSync set as
// before records them (its keys.AnnotationMetadataKeys; before is the copy the write was
// planned on) and want no longer records. After an apply of want they are keys another field
// manager holds, which the apply leaves in place.
func Leftovers(cur, before, want *corev1.Secret) (data, labels, annotations []string) {
	for _, k := range slices.Sorted(maps.Keys(cur.Data)) {
		if _, ok := want.Data[k]; !ok {
			data = append(data, k)
		}
	}
	left := func(out, before, want []string, live map[string]string) []string {
		for _, k := range before {
			if _, ok := live[k]; ok && !slices.Contains(want, k) && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out
	}
	labels, annotations = foreignOwnKeys(cur, want)
	bl, ba := metadataKeys(before)
	wl, wa := metadataKeys(want)
	return data, left(labels, bl, wl, cur.Labels), left(annotations, ba, wa, cur.Annotations)
}
