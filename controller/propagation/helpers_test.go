package propagation

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Fixed values shared by the tests of this package.
const (
	// srcNS is the source namespace of every test SecretSync.
	srcNS = "infra"
	// syncName is the SecretSync the tests plan for.
	syncName = "registry"
	// credsName is the name of the usual source Secret and of its copies.
	credsName = "registry-creds"
)

var (
	createdAt  = metav1.NewTime(time.Date(2026, time.March, 1, 9, 0, 0, 0, time.UTC))
	deletingAt = metav1.NewTime(time.Date(2026, time.March, 2, 10, 30, 0, 0, time.UTC))
)

// secretOption changes a test Secret.
type secretOption func(*corev1.Secret)

// secret is an Opaque Secret with no data, changed by opts in order.
func secret(namespace, name string, opts ...secretOption) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ourCopy is, written out by hand, the copy of srcNS/name that syncName puts in namespace:
// our two labels and the source annotation, Opaque, no data; then opts.
func ourCopy(namespace, name string, opts ...secretOption) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        name,
			Labels:      map[string]string{keys.LabelSecretSync: syncName, keys.LabelManagedBy: keys.ManagedByValue},
			Annotations: map[string]string{keys.AnnotationSource: srcNS + "/" + name},
		},
		Type: corev1.SecretTypeOpaque,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// withData sets Data from key, value pairs of strings.
func withData(kv ...string) secretOption {
	return func(s *corev1.Secret) {
		s.Data = map[string][]byte{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
	}
}

// withBytes sets one Data entry to exactly v (nil included).
func withBytes(key string, v []byte) secretOption {
	return func(s *corev1.Secret) {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[key] = v
	}
}

func withType(t corev1.SecretType) secretOption {
	return func(s *corev1.Secret) { s.Type = t }
}

func withImmutable(b bool) secretOption {
	return func(s *corev1.Secret) { s.Immutable = &b }
}

func withLabel(k, v string) secretOption {
	return func(s *corev1.Secret) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
}

func withoutLabel(k string) secretOption {
	return func(s *corev1.Secret) { delete(s.Labels, k) }
}

func withAnnotation(k, v string) secretOption {
	return func(s *corev1.Secret) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

func withoutAnnotation(k string) secretOption {
	return func(s *corev1.Secret) { delete(s.Annotations, k) }
}

// withServerFields sets what the API server fills in on a stored object.
func withServerFields(uid, resourceVersion string) secretOption {
	return func(s *corev1.Secret) {
		s.UID = types.UID(uid)
		s.ResourceVersion = resourceVersion
		s.CreationTimestamp = createdAt
		s.Generation = 3
		s.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager:    "kubectl",
			Operation:  metav1.ManagedFieldsOperationApply,
			APIVersion: "v1",
			Time:       &createdAt,
		}}
	}
}

// withOwner adds an ownerReference, as a controller of the source would.
func withOwner(kind, name, uid string) secretOption {
	return func(s *corev1.Secret) {
		yes := true
		s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{
			APIVersion: "example.io/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes,
		})
	}
}

// beingDeleted marks the Secret as deleted while a finalizer holds it.
func beingDeleted() secretOption {
	return func(s *corev1.Secret) {
		t := deletingAt
		s.DeletionTimestamp = &t
		s.Finalizers = append(s.Finalizers, "example.io/hold")
	}
}

// set is a set of names.
func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// assertSemantic fails when got and want differ as the API would see them (nil and empty maps and
// slices are equal).
func assertSemantic(t *testing.T, what string, got, want any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s differs (-want +got):\n%s", what, diff.Diff(want, got))
	}
}

// assertExact fails when got and want differ in any way reflect can see, nil versus empty
// included.
func assertExact(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s differs (-want +got):\n%s\nwant: %#v\ngot:  %#v", what, diff.Diff(want, got), want, got)
	}
}
