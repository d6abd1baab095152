package propagation

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// A ConfigMap travels through the same pure code as a Secret, in a Secret-shaped envelope: the
// plan, the in-step test, key selection and metadata are one code path for both kinds. The
// envelope is never written to the API as a Secret; FromConfigMap and ToConfigMap convert at the
// API edge, and the round trip is lossless.

// TypeConfigMap is the type of an envelope holding a ConfigMap. A ConfigMap has no type, so two
// envelopes always agree on it and a ConfigMap copy is never replaced for a type change.
const TypeConfigMap corev1.SecretType = "ops.platform-operators.io/configmap"

// FromConfigMap returns the envelope of cm: its metadata, data and binaryData in Data, the
// binaryData keys recorded, its immutability. cm is not modified; the maps are shared, not copied
// (Desired copies the data it keeps).
func FromConfigMap(cm *corev1.ConfigMap) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: *cm.ObjectMeta.DeepCopy(), Type: TypeConfigMap, Immutable: cm.Immutable}
	if n := len(cm.Data) + len(cm.BinaryData); n > 0 {
		s.Data = make(map[string][]byte, n)
		for k, v := range cm.Data {
			s.Data[k] = []byte(v)
		}
		maps.Copy(s.Data, cm.BinaryData)
	}
	delete(s.Annotations, keys.AnnotationBinaryKeys) // never trust it from the API
	if len(cm.BinaryData) > 0 {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, keys.AnnotationBinaryKeys, strings.Join(slices.Sorted(maps.Keys(cm.BinaryData)), ","))
	}
	return s
}

// ToConfigMap returns the ConfigMap an envelope stands for: the keys listed in
// keys.AnnotationBinaryKeys in binaryData, the others in data, and the annotation dropped.
func ToConfigMap(s *corev1.Secret) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: *s.ObjectMeta.DeepCopy(), Immutable: s.Immutable}
	binary := binaryKeys(s)
	delete(cm.Annotations, keys.AnnotationBinaryKeys)
	if len(cm.Annotations) == 0 {
		cm.Annotations = nil // as the API returns it
	}
	for k, v := range s.Data {
		if binary[k] {
			if cm.BinaryData == nil {
				cm.BinaryData = map[string][]byte{}
			}
			cm.BinaryData[k] = v
			continue
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[k] = string(v)
	}
	return cm
}

// KindName is "ConfigMap" for an envelope and "Secret" otherwise: the kind an object stands for,
// for messages.
func KindName(s *corev1.Secret) string {
	if s.Type == TypeConfigMap {
		return "ConfigMap"
	}
	return "Secret"
}

// binaryKeys returns the keys an envelope's keys.AnnotationBinaryKeys lists.
func binaryKeys(s *corev1.Secret) map[string]bool {
	v := s.Annotations[keys.AnnotationBinaryKeys]
	if v == "" {
		return nil
	}
	out := map[string]bool{}
	for _, k := range strings.Split(v, ",") {
		out[k] = true
	}
	return out
}

// ApplyKeys selects and renames the data of want, the desired copy, per k (see SelectKeys) and
// carries an envelope's binary-key record through the renames. It returns the keys the source
// lacks.
func ApplyKeys(want *corev1.Secret, k Keys) []string {
	if k.IsZero() {
		return nil
	}
	binary := binaryKeys(want)
	if binary != nil {
		// The same selection over a map of flags tells, for every key of the copy, whether the
		// source key it came from was binary.
		flags := make(map[string][]byte, len(want.Data))
		for key := range want.Data {
			flags[key] = []byte{0}
			if binary[key] {
				flags[key] = []byte{1}
			}
		}
		selected, _ := SelectKeys(flags, k)
		var kept []string
		for key, f := range selected {
			if f[0] == 1 {
				kept = append(kept, key)
			}
		}
		if len(kept) == 0 {
			delete(want.Annotations, keys.AnnotationBinaryKeys)
		} else {
			slices.Sort(kept)
			want.Annotations[keys.AnnotationBinaryKeys] = strings.Join(kept, ",")
		}
	}
	data, missing := SelectKeys(want.Data, k)
	want.Data = data
	return missing
}
