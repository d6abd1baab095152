package secretsync

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
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
		s, err := reads.Read(bg, "", configMapKind, types.NamespacedName{Namespace: "src", Name: name}, rv)
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

// Issue 45: the memo was shared with no budget per payer, so a tenant offering itself 1 MiB
// ConfigMaps through CopyRequests pushed the admins' sources out. A tenant's reads now forget
// only tenants' reads, within an eighth of the bound each and half of it together.
func TestATenantsReadsCannotPushOutTheAdminsSources(t *testing.T) {
	bg := context.Background()
	const kib = 1 << 10
	var objs []client.Object
	for i := range 40 {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "src", Name: fmt.Sprintf("s%d", i)},
			Data: map[string]string{"k": strings.Repeat("x", 60*kib)}})
	}
	world := fake.NewClientBuilder().WithScheme(testenv.Scheme(t)).WithObjects(objs...).Build()
	gets := &countingReader{Reader: world}
	reads := NewSourceReads(gets, 1024*kib)
	read := func(payer, name string) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := world.Get(bg, types.NamespacedName{Namespace: "src", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		if _, err := reads.Read(bg, payer, configMapKind, types.NamespacedName{Namespace: "src", Name: name}, cm.ResourceVersion); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 { // the admins' sources: about 370 KiB
		read("", fmt.Sprintf("s%d", i))
	}
	for round := range 3 {
		for i := 6; i < 40; i++ { // two tenants, each asking for everything it can
			read([]string{"team-a", "team-b"}[i%2], fmt.Sprintf("s%d", i))
		}
		all, most := reads.TenantBytes()
		if all > 512*kib || most > 128*kib {
			t.Errorf("round %d: tenants hold %d bytes (most %d), want at most %d (one at most %d)", round, all, most, 512*kib, 128*kib)
		}
	}
	for i := range 6 {
		name := fmt.Sprintf("s%d", i)
		read("", name)
		if n := gets.count(&corev1.ConfigMap{}, client.ObjectKey{Namespace: "src", Name: name}); n != 1 {
			t.Errorf("admins' source %s was read %d times: the tenants' reads pushed it out", name, n)
		}
	}
	if reads.Bytes() > 1024*kib {
		t.Errorf("%d bytes remembered, over the bound", reads.Bytes())
	}
}

// A source whose labels the cache dropped is read whole only when its labels can decide.
func TestLabelsDecideOnlyWhenNameAndTypeLeaveItOpen(t *testing.T) {
	sel := func(s string) labels.Selector { l, _ := labels.Parse(s); return l }
	src := func(name string, typ corev1.SecretType) v1alpha1.SecretSyncSource {
		return v1alpha1.SecretSyncSource{Namespace: "src", Name: name, Type: typ}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Type: corev1.SecretTypeOpaque}
	for _, tc := range []struct {
		name string
		src  v1alpha1.SecretSyncSource
		sel  labels.Selector
		want bool
	}{
		{"a selector and no type: the labels decide", src("", ""), sel("a=b"), true},
		{"a selector and the same type: the labels decide", src("", corev1.SecretTypeOpaque), sel("a=b"), true},
		{"another type rules it out", src("", corev1.SecretTypeDockerConfigJson), sel("a=b"), false},
		{"an empty selector matches whatever the labels", src("", ""), labels.Everything(), false},
		{"no selector (a named source)", src("big", ""), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelsDecide(s, tc.src, tc.sel); got != tc.want {
				t.Errorf("labelsDecide = %v, want %v", got, tc.want)
			}
		})
	}
}

// TenantBytes is what tenants' reads hold, and what the one holding most holds.
func (m *SourceReads) TenantBytes() (all, most int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.byTenant {
		most = max(most, n)
	}
	return m.tenantBytes, most
}

// Bytes is what is remembered, as MaxBytes bounds it.
func (m *SourceReads) Bytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}
