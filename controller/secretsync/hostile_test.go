package secretsync

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// hostileMeta is what a tenant can put on an object of its own namespace besides data: every
// key we select on (a copy's labels, the offer), 200 KiB of annotations, 100 labels, and our
// own annotations with large values.
func hostileMeta(ns string, i int) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: fmt.Sprintf("big-%d", i), Namespace: ns, UID: types.UID(fmt.Sprintf("6f1c2a5e-3333-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(400000 + i),
		Labels: map[string]string{
			keys.LabelSecretSync: "harbor", keys.LabelCopyRequest: "pull", keys.LabelOffer: "x", keys.LabelManagedBy: keys.ManagedByValue,
		},
		Annotations: map[string]string{
			keys.AnnotationOfferNamespaces: strings.Repeat("team-*,", 4<<10),
			keys.AnnotationSource:          strings.Repeat("s", 8<<10),
			keys.AnnotationMetadataKeys:    "labels=" + strings.Repeat("l,", 4<<10),
		},
	}
	for j := range 100 {
		m.Labels[fmt.Sprintf("tenant.example/l%03d", j)] = strings.Repeat("v", 63)
		m.Labels[fmt.Sprintf("%sl%03d", keys.Prefix, j)] = "v"
	}
	for j := range 200 {
		m.Annotations[fmt.Sprintf("tenant.example/a%03d", j)] = strings.Repeat("a", 1024)
	}
	return m
}

// hostileConfigMap is a tenant's ConfigMap: 1 MiB of data (half of it binary) and hostileMeta.
func hostileConfigMap(i int) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: hostileMeta("tenant", i), Data: map[string]string{}, BinaryData: map[string][]byte{}}
	for j := range 256 {
		cm.Data[fmt.Sprintf("k%03d", j)] = strings.Repeat("d", 2<<10)
		cm.BinaryData[fmt.Sprintf("b%03d", j)] = make([]byte, 2<<10)
	}
	return cm
}

// hostileSecret is a tenant's Secret: 1 MiB of data and hostileMeta.
func hostileSecret(i int) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: hostileMeta("tenant", i), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"blob": make([]byte, 1<<20)}}
}

// hostileOffer is hostileMeta as the offers cache receives it: metadata only.
func hostileOffer(i int) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: hostileMeta("tenant", i)}
}

// maxHostileBytes bounds what any cache may keep of one hostile object: a few KiB, against the
// 1.2 MiB the object holds.
const maxHostileBytes = 8 << 10

// cachedBytesPerObject decodes n objects as a watch delivers them, passes each through
// transform, keeps the results, and returns the heap they hold per object.
func cachedBytesPerObject(tb testing.TB, n int, build func(int) decodable, fresh func() decodable, transform func(any) (any, error)) float64 {
	tb.Helper()
	wire := make([][]byte, n)
	for i := range wire {
		w, err := build(i).Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		wire[i] = w
	}
	kept := make([]any, n)
	before := heapAfterGC()
	for i, w := range wire {
		obj := fresh()
		if err := obj.Unmarshal(w); err != nil {
			tb.Fatal(err)
		}
		out, err := transform(obj)
		if err != nil {
			tb.Fatal(err)
		}
		kept[i] = out
	}
	per := (float64(heapAfterGC()) - float64(before)) / float64(n)
	// The wire bytes stay alive past the measure: their collection would hide what is kept.
	runtime.KeepAlive(wire)
	runtime.KeepAlive(kept)
	return per
}

// hostileCaches are the caches a tenant's object enters by carrying one of our keys, with their
// transforms: the SecretSync's copies (Secrets, ConfigMaps), the CopyRequest's copies (the same
// transform), and the offers (metadata only); and those it enters whatever it carries: a source
// namespace's (boundSource) and the ServiceAccounts.
var hostileCaches = []struct {
	name      string
	build     func(i int) decodable
	fresh     func() decodable
	transform func(any) (any, error)
}{
	{"copy-secret", func(i int) decodable { return hostileSecret(i) }, func() decodable { return &corev1.Secret{} }, boundCopy},
	{"copy-configmap", func(i int) decodable { return hostileConfigMap(i) }, func() decodable { return &corev1.ConfigMap{} }, boundCopy},
	{"offer", func(i int) decodable { return hostileOffer(i) }, func() decodable { return &metav1.PartialObjectMetadata{} }, boundOffer},
	{"source-secret", func(i int) decodable { return hostileSecret(i) }, func() decodable { return &corev1.Secret{} }, boundSource},
	{"source-configmap", func(i int) decodable { return hostileConfigMap(i) }, func() decodable { return &corev1.ConfigMap{} }, boundSource},
	{"serviceaccount", func(i int) decodable { return hostileServiceAccount(i) }, func() decodable { return &corev1.ServiceAccount{} }, trimServiceAccount},
}

// hostileServiceAccount is a tenant's ServiceAccount: hostileMeta and 6,000 imagePullSecrets
// entries (what edit may create).
func hostileServiceAccount(i int) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: hostileMeta("tenant", i), ImagePullSecrets: make([]corev1.LocalObjectReference, 6000)}
	for j := range sa.ImagePullSecrets {
		sa.ImagePullSecrets[j].Name = fmt.Sprintf("tenant-pull-secret-%05d", j)
	}
	return sa
}

// A tenant's object carrying our keys, 1 MiB of data and 200 KiB of annotations costs each
// cache a few KiB, not its size: what the manager holds is decided by the add-on.
func TestAHostileObjectCostsEachCacheABoundedFewBytes(t *testing.T) {
	for _, c := range hostileCaches {
		t.Run(c.name, func(t *testing.T) {
			if per := cachedBytesPerObject(t, 50, c.build, c.fresh, c.transform); per > maxHostileBytes {
				t.Errorf("the cache keeps %.0f bytes per hostile object, want at most %d", per, maxHostileBytes)
			}
		})
	}
}

// BenchmarkHostileCachedBytes is BenchmarkCachedBytes for hostile objects (hostileMeta, 1 MiB
// of data): the heap each cache keeps per object, after the transform.
func BenchmarkHostileCachedBytes(b *testing.B) {
	for _, c := range hostileCaches {
		b.Run(c.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = cachedBytesPerObject(b, 200, c.build, c.fresh, c.transform)
			}
			b.ReportMetric(per, "B/object")
		})
	}
}
