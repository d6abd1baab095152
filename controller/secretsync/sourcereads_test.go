package secretsync

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

func TestSourceReadsReadOncePerResourceVersionWithinTheirBytes(t *testing.T) {
	bg := context.Background()
	big := func(name string, kib int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "src", Name: name},
			Data: map[string]string{"k": strings.Repeat("x", kib<<10)}}
	}
	world := fake.NewClientBuilder().WithScheme(testenv.Scheme(t)).
		WithObjects(big("a", 100), big("b", 100), big("c", 100), big("huge", 400)).Build()
	gets := &countingReader{Reader: world}
	reads := NewSourceReads(gets, 250<<10)
	rvOf := func(name string) string {
		cm := &corev1.ConfigMap{}
		if err := world.Get(bg, types.NamespacedName{Namespace: "src", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.ResourceVersion
	}
	read := func(name, rv string) *corev1.Secret {
		t.Helper()
		s, err := reads.Read(bg, configMapKind, types.NamespacedName{Namespace: "src", Name: name}, rv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	count := func(name string) int {
		return gets.count(&corev1.ConfigMap{}, client.ObjectKey{Namespace: "src", Name: name})
	}

	t.Log("thirty workers woken by one event read the source once")
	rv := rvOf("a")
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() { defer wg.Done(); read("a", rv) }()
	}
	wg.Wait()
	if n := count("a"); n != 1 {
		t.Errorf("%d GETs for one resourceVersion, want 1", n)
	}
	if got := read("a", rv); len(got.Data["k"]) != 100<<10 || got.ManagedFields != nil {
		t.Errorf("the read is not the source whole, without managed fields")
	}

	t.Log("a new resourceVersion is read again, once")
	cm := big("a", 100)
	if err := world.Get(bg, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{"touched": "1"}
	if err := world.Update(bg, cm); err != nil {
		t.Fatal(err)
	}
	read("a", cm.ResourceVersion)
	read("a", cm.ResourceVersion)
	if n := count("a"); n != 2 {
		t.Errorf("%d GETs for two resourceVersions, want 2", n)
	}

	t.Log("past the bound, the least recently used read is forgotten; a source over it is never remembered")
	read("b", rvOf("b"))
	read("c", rvOf("c")) // 300 KiB with a's: a goes
	if reads.Bytes() > 250<<10 {
		t.Errorf("%d bytes remembered, bound %d", reads.Bytes(), 250<<10)
	}
	read("c", rvOf("c"))
	read("b", rvOf("b"))
	if count("b") != 1 || count("c") != 1 {
		t.Errorf("b read %d times, c %d times, want once each", count("b"), count("c"))
	}
	read("a", cm.ResourceVersion)
	if n := count("a"); n != 3 {
		t.Errorf("a read %d times, want 3 (forgotten, read again)", n)
	}
	read("huge", rvOf("huge"))
	read("huge", rvOf("huge"))
	if n := count("huge"); n != 2 {
		t.Errorf("a source over the bound read %d times for two passes, want 2 (not remembered)", n)
	}

	t.Log("a source that is gone is nil, and not remembered")
	if s := read("gone", "1"); s != nil {
		t.Errorf("a missing source read as %v", s)
	}
}
