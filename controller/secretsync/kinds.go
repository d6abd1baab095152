package secretsync

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// objectKind is one kind of object the controllers copy. The pure code (propagation) sees
// every object as a Secret: a Secret as itself, a ConfigMap in its envelope
// (propagation.FromConfigMap). These functions convert at the API edge, and nowhere else.
type objectKind struct {
	name   v1alpha1.CopyKind
	object func() client.Object
	list   func() client.ObjectList
	items  func(client.ObjectList) []*corev1.Secret
	wrap   func(client.Object) *corev1.Secret
	unwrap func(*corev1.Secret) client.Object
}

var secretKind = &objectKind{
	name:   v1alpha1.CopyKindSecret,
	object: func() client.Object { return &corev1.Secret{} },
	list:   func() client.ObjectList { return &corev1.SecretList{} },
	items: func(l client.ObjectList) []*corev1.Secret {
		return pointers(l.(*corev1.SecretList).Items, func(s *corev1.Secret) *corev1.Secret { return s })
	},
	wrap:   func(o client.Object) *corev1.Secret { return o.(*corev1.Secret) },
	unwrap: func(s *corev1.Secret) client.Object { return s },
}

var configMapKind = &objectKind{
	name:   v1alpha1.CopyKindConfigMap,
	object: func() client.Object { return &corev1.ConfigMap{} },
	list:   func() client.ObjectList { return &corev1.ConfigMapList{} },
	items: func(l client.ObjectList) []*corev1.Secret {
		return pointers(l.(*corev1.ConfigMapList).Items, propagation.FromConfigMap)
	},
	wrap:   func(o client.Object) *corev1.Secret { return propagation.FromConfigMap(o.(*corev1.ConfigMap)) },
	unwrap: func(s *corev1.Secret) client.Object { return propagation.ToConfigMap(s) },
}

// pointers is a list's items as wrap gives them, without copying them.
func pointers[T, U any](in []T, wrap func(*T) *U) []*U {
	out := make([]*U, len(in))
	for i := range in {
		out[i] = wrap(&in[i])
	}
	return out
}

// kinds are every kind, for work that must look at both (a SecretSync that is gone).
var kinds = []*objectKind{secretKind, configMapKind}

// kindOf returns the objectKind of k ("" is Secret, as the API defaults it).
func kindOf(k v1alpha1.CopyKind) *objectKind {
	if k == v1alpha1.CopyKindConfigMap {
		return configMapKind
	}
	return secretKind
}
