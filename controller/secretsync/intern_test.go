package secretsync

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// decodable is a built-in API object: it marshals to and from protobuf, as the watch sends it.
type decodable interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func wireCopy(ns string, i int) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "harbor-pull", Namespace: ns, UID: types.UID(fmt.Sprintf("6f1c2a5e-0000-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i),
			CreationTimestamp: metav1.Now(),
			Labels:            map[string]string{keys.LabelSecretSync: "harbor", keys.LabelManagedBy: keys.ManagedByValue},
			Annotations:       map[string]string{keys.AnnotationSource: "platform/harbor-pull", keys.AnnotationDeletionPolicy: "Delete"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "platform-operators", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}},
		},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: make([]byte, 2048)},
	}
}

func namespaceNamed(name string, i int) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID(fmt.Sprintf("6f1c2a5e-1111-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(200000 + i),
			Labels: map[string]string{corev1.LabelMetadataName: name, "team": fmt.Sprintf("team-%d", i%20)},
		},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func serviceAccountIn(ns string, i int) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{
			Name: "default", Namespace: ns, UID: types.UID(fmt.Sprintf("6f1c2a5e-2222-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(300000 + i),
			Annotations: map[string]string{keys.AnnotationPullSecrets: "harbor-pull"},
		},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "harbor-pull"}},
	}
}

// cachedPair decodes two objects built by build, as a watch delivers them (from protobuf, every
// string its own allocation), and passes each through the cache transform.
func cachedPair[T decodable](t *testing.T, build func(i int) T, transform func(any) (any, error)) (T, T) {
	t.Helper()
	var got [2]T
	for i := range got {
		in := build(i)
		wire, err := in.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		obj := reflect.New(reflect.TypeOf(in).Elem()).Interface().(T)
		if err := obj.Unmarshal(wire); err != nil {
			t.Fatal(err)
		}
		out, err := transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = out.(T)
	}
	return got[0], got[1]
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// keyIn returns the key string m stores for k (not k itself).
func keyIn[V any](m map[string]V, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

// Two copies of one source, decoded separately, share every string the transform interns, and
// still compare as before; what differs between them (namespace, uid) stays their own.
func TestCachedCopiesShareTheirRepeatedStrings(t *testing.T) {
	a, b := cachedPair(t, func(i int) *corev1.Secret { return wireCopy(fmt.Sprintf("team-%d", i), i) }, boundCopy)
	if sameBytes(wireCopy("x", 0).Name, a.Name) {
		t.Fatal("the decoded name is the literal's: the test does not decode")
	}
	for _, tc := range []struct{ what, a, b string }{
		{"name", a.Name, b.Name},
		{"type", string(a.Type), string(b.Type)},
		{"label key", keyIn(a.Labels, keys.LabelSecretSync), keyIn(b.Labels, keys.LabelSecretSync)},
		{"label value", a.Labels[keys.LabelSecretSync], b.Labels[keys.LabelSecretSync]},
		{"annotation key", keyIn(a.Annotations, keys.AnnotationSource), keyIn(b.Annotations, keys.AnnotationSource)},
		{"annotation value", a.Annotations[keys.AnnotationSource], b.Annotations[keys.AnnotationSource]},
		{"data digest", a.Annotations[keys.AnnotationDataDigest], b.Annotations[keys.AnnotationDataDigest]},
	} {
		if tc.a == "" || tc.a != tc.b {
			t.Errorf("%s: %q and %q, want the same non-empty value", tc.what, tc.a, tc.b)
			continue
		}
		if !sameBytes(tc.a, tc.b) {
			t.Errorf("%s %q: two copies hold their own bytes, want one shared string", tc.what, tc.a)
		}
	}
	if a.Namespace == b.Namespace || a.UID == b.UID {
		t.Errorf("namespace %q/%q, uid %q/%q: want what differs kept", a.Namespace, b.Namespace, a.UID, b.UID)
	}
	// Our two annotations, the two digests and the bounded form's mark.
	if a.Data != nil || len(a.Labels) != 2 || len(a.Annotations) != 5 || a.ManagedFields != nil {
		t.Errorf("cached copy = %+v, want no data or managed fields, 2 labels, 5 annotations", a)
	}
}

// A namespace's kubernetes.io/metadata.name value is its name's string; the label keys and the
// other values are shared between namespaces.
func TestCachedNamespacesShareLabelKeysAndValues(t *testing.T) {
	a, b := cachedPair(t, func(i int) *corev1.Namespace { return namespaceNamed(fmt.Sprintf("tenant-%d", i), i*20) }, trimNamespace)
	if v := a.Labels[corev1.LabelMetadataName]; v != a.Name || !sameBytes(v, a.Name) {
		t.Errorf("metadata.name label %q does not share the name %q", v, a.Name)
	}
	if !sameBytes(keyIn(a.Labels, "team"), keyIn(b.Labels, "team")) || !sameBytes(a.Labels["team"], b.Labels["team"]) {
		t.Errorf("the team label (%q) is not shared between namespaces", a.Labels["team"])
	}
	if a.Status.Phase != corev1.NamespaceActive || a.Spec.Finalizers != nil || a.UID == "" {
		t.Errorf("trimmed namespace = %+v, want phase and uid kept, spec dropped", a)
	}
}

func TestCachedServiceAccountsShareNameAndPullSecrets(t *testing.T) {
	a, b := cachedPair(t, func(i int) *corev1.ServiceAccount { return serviceAccountIn(fmt.Sprintf("team-%d", i), i) }, trimServiceAccount)
	if !sameBytes(a.Name, b.Name) || !sameBytes(a.ImagePullSecrets[0].Name, b.ImagePullSecrets[0].Name) ||
		!sameBytes(a.Annotations[keys.AnnotationPullSecrets], b.Annotations[keys.AnnotationPullSecrets]) {
		t.Errorf("name, pull secret or annotation not shared: %+v / %+v", a, b)
	}
}

// BenchmarkCachedBytes reports what the manager's cache holds per object of each kind it keeps
// one of per namespace, decoded as a watch delivers them and passed through the cache's
// transform: heap retained after a garbage collection, per object, over 10,000 objects.
func BenchmarkCachedBytes(b *testing.B) {
	const n = 10000
	for _, k := range []struct {
		name      string
		build     func(i int) decodable
		fresh     func() decodable
		transform func(any) (any, error)
	}{
		{"copy", func(i int) decodable { return wireCopy(fmt.Sprintf("tenant-%05d", i), i) }, func() decodable { return &corev1.Secret{} }, boundCopy},
		{"namespace", func(i int) decodable { return namespaceNamed(fmt.Sprintf("tenant-%05d", i), i) }, func() decodable { return &corev1.Namespace{} }, trimNamespace},
		{"serviceaccount", func(i int) decodable { return serviceAccountIn(fmt.Sprintf("tenant-%05d", i), i) }, func() decodable { return &corev1.ServiceAccount{} }, trimServiceAccount},
	} {
		wire := make([][]byte, n)
		for i := range wire {
			w, err := k.build(i).Marshal()
			if err != nil {
				b.Fatal(err)
			}
			wire[i] = w
		}
		b.Run(k.name, func(b *testing.B) {
			var perObject float64
			for b.Loop() {
				kept := make([]any, n)
				before := heapAfterGC()
				for i, w := range wire {
					obj := k.fresh()
					if err := obj.Unmarshal(w); err != nil {
						b.Fatal(err)
					}
					out, err := k.transform(obj)
					if err != nil {
						b.Fatal(err)
					}
					kept[i] = out
				}
				perObject = float64(heapAfterGC()-before) / n
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(perObject, "B/object")
		})
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
