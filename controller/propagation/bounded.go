package propagation

import (
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// The manager's caches select Secrets and ConfigMaps on our label keys, and any tenant can put
// those keys on any object of its namespace, with up to 1 MiB of data and 256 KiB of labels and
// annotations. So a cache keeps of such an object only what the manager reads, each piece bounded
// whatever the tenant wrote (Bounded): what a cached copy costs is decided here, not by tenants.

const (
	// maxCachedValue bounds a kept annotation value (or a type): a longer one is kept as its digest
	// (digestedValue), which still compares with a wanted value (valueMatches).
	maxCachedValue = 1024
	// maxForeignKeys bounds how many unknown keys of ours (labels, and annotations) are kept, by
	// name only: a repair removes these, and the next event shows the next ones.
	maxForeignKeys = 8
	// boundedMark marks an object Bounded already returned (client-go may pass an object through a
	// cache transform twice). The ':' makes it an invalid key, so no object from the API carries it.
	boundedMark = keys.Prefix + "cached:bounded"
	// digestedPrefix starts a value kept as its digest; a NUL byte starts no value we write.
	digestedPrefix = "\x00sha256:"
)

// knownAnnotations are the annotations of ours a cached copy or offer keeps with their values.
var knownAnnotations = []string{
	keys.AnnotationSource, keys.AnnotationDeletionPolicy, keys.AnnotationMetadataKeys, keys.AnnotationOwnership,
	keys.AnnotationOfferNamespaces, keys.AnnotationOrphaned,
}

// cacheOnly are the annotations only a cache writes: coming from the API they are a tenant's.
var cacheOnly = []string{keys.AnnotationDataDigest, keys.AnnotationMetadataDigest, boundedMark, fieldManagersMark}

// Bounded returns what a cache keeps of s, a copy (a Secret or a ConfigMap's envelope) or a
// candidate for one: identity, resourceVersion, deletion, type and immutability; our own labels
// and the annotations of ours the manager reads (knownAnnotations), a value longer than
// maxCachedValue as its digest; the names of up to maxForeignKeys other keys of ours (so that a
// repair can remove them); the names of up to maxForeignManagers other field managers holding a
// field the manager writes (ForeignFieldManagers, so that the writer can say so); the digest of the data (keys.AnnotationDataDigest, with which keys of
// an envelope are binary) and of the labels and annotations its SecretSync set
// (keys.AnnotationMetadataDigest). Nothing else: not the data, not the labels and annotations a
// tenant added, not owner references or managed fields. InStep, NeedsReplace and Merged answer
// for the bounded form as for the object.
//
// It is idempotent, as client-go asks of a cache transform. s is not modified.
func Bounded(s *corev1.Secret) *corev1.Secret {
	if _, done := s.Annotations[boundedMark]; done {
		return s
	}
	out := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			DeletionTimestamp: s.DeletionTimestamp,
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
		},
		Type:      corev1.SecretType(boundedValue(string(s.Type))),
		Immutable: s.Immutable,
	}
	keepOurs(out.Labels, s.Labels, func(k string) bool {
		return k == keys.LabelSecretSync || k == keys.LabelCopyRequest || k == keys.LabelOffer || k == keys.LabelManagedBy
	})
	keepOurs(out.Annotations, s.Annotations, func(k string) bool { return slices.Contains(knownAnnotations, k) })
	out.Annotations[keys.AnnotationDataDigest] = contentDigest(s)
	cl, ca := metadataKeys(s)
	out.Annotations[keys.AnnotationMetadataDigest] = metadataDigest(s, cl, ca)
	if m := ForeignFieldManagers(s.ManagedFields); len(m) > 0 {
		out.Annotations[fieldManagersMark] = strings.Join(m, ",")
	}
	out.Annotations[boundedMark] = ""
	return out
}

// BoundedConfigMap is Bounded for a ConfigMap, as a ConfigMap: no data or binaryData, the digest
// of its envelope's in their place.
func BoundedConfigMap(cm *corev1.ConfigMap) *corev1.ConfigMap {
	if _, done := cm.Annotations[boundedMark]; done {
		return cm
	}
	b := Bounded(FromConfigMap(cm))
	delete(b.Annotations, keys.AnnotationBinaryKeys) // in the digest; FromConfigMap never trusts it
	return &corev1.ConfigMap{ObjectMeta: b.ObjectMeta, Immutable: b.Immutable}
}

// keepOurs copies into dst the entries of src that known names, with their values bounded, and
// the names of the first maxForeignKeys (sorted) other keys of ours, with empty values.
func keepOurs(dst, src map[string]string, known func(string) bool) {
	var foreign []string
	for k, v := range src {
		switch {
		case known(k):
			dst[k] = boundedValue(v)
		case ours(k) && !slices.Contains(cacheOnly, k):
			foreign = append(foreign, k)
		}
	}
	slices.Sort(foreign)
	for _, k := range foreign[:min(len(foreign), maxForeignKeys)] {
		dst[k] = ""
	}
}

// ours reports whether key is one of our keys: our prefix, or the managed-by label.
func ours(key string) bool {
	return strings.HasPrefix(key, keys.Prefix) || key == keys.LabelManagedBy
}

// boundedValue is v, or its digest when v is longer than maxCachedValue.
func boundedValue(v string) string {
	if len(v) <= maxCachedValue {
		return v
	}
	return digestedValue(v)
}

func digestedValue(v string) string {
	sum := sha256.Sum256([]byte(v))
	return digestedPrefix + base64.RawStdEncoding.EncodeToString(sum[:])
}

// valueMatches reports whether cur, a value as the live object or a cache holds it, is want.
func valueMatches(cur, want string) bool {
	return cur == want || strings.HasPrefix(cur, digestedPrefix) && cur == digestedValue(want)
}

// bounded reports whether s is a cache's bounded form (Bounded).
func bounded(s *corev1.Secret) bool {
	_, ok := s.Annotations[boundedMark]
	return ok
}

// contentDigest digests what a copy's content is: its data and, for an envelope, which of its
// keys are binary.
func contentDigest(s *corev1.Secret) string {
	d := DataDigest(s.Data)
	if b, ok := s.Annotations[keys.AnnotationBinaryKeys]; ok {
		d += "+" + digestedValue(b)[len(digestedPrefix):]
	}
	return d
}

// metadataDigest digests the values s has for the label keys ls and annotation keys as (a
// missing key differs from an empty value).
func metadataDigest(s *corev1.Secret, ls, as []string) string {
	h := sha256.New()
	var n [20]byte
	entry := func(kind string, m map[string]string, k string) {
		v, ok := m[k]
		h.Write([]byte(kind))
		h.Write(strconv.AppendInt(n[:0], int64(len(k)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(k))
		if !ok {
			h.Write([]byte{'-'})
			return
		}
		h.Write(strconv.AppendInt(n[:0], int64(len(v)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(v))
	}
	for _, k := range slices.Sorted(slices.Values(ls)) {
		entry("l", s.Labels, k)
	}
	for _, k := range slices.Sorted(slices.Values(as)) {
		entry("a", s.Annotations, k)
	}
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil))
}

// foreignOwnKeys returns our keys on cur (labels, annotations) that want does not carry: a
// tenant's, which a repair removes.
func foreignOwnKeys(cur, want *corev1.Secret) (labels, annotations []string) {
	for _, k := range slices.Sorted(maps.Keys(cur.Labels)) {
		if _, ok := want.Labels[k]; ours(k) && !ok {
			labels = append(labels, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cur.Annotations)) {
		if _, ok := want.Annotations[k]; ours(k) && !ok && !slices.Contains(cacheOnly, k) {
			annotations = append(annotations, k)
		}
	}
	return labels, annotations
}

// ContentDigest is the digest of cur's content (its data, and for a ConfigMap's envelope which
// keys are binary), live or a cache's bounded form, as keys.AnnotationOrphaned records it.
func ContentDigest(cur *corev1.Secret) string {
	if bounded(cur) {
		return cur.Annotations[keys.AnnotationDataDigest]
	}
	return contentDigest(cur)
}

// SameContent reports whether cur (live or a cache's bounded form) holds want's data and type:
// nothing in it would be lost if want were written over it.
func SameContent(cur, want *corev1.Secret) bool {
	return typeMatches(cur, want) && dataMatches(cur, want)
}
