package cachebounds_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// tenantObjectBytes is the data of each tenant ConfigMap weighed below: 1 MiB, about 1.4 MiB as a
// JSON watch event (etcd takes 1.5 MiB a request by default, so the largest a tenant can make).
const tenantObjectBytes = 1 << 20

// perInformer is the constant a tenant may add to one informer, whatever the count or size of its
// objects: one watch's decode buffers, each up to twice the largest event it read (grown by
// doubling), the streaming decoder's and the JSON framer's.
const perInformer = 4 * (tenantObjectBytes * 4 / 3)

// A tenant's objects cost a cache built here a constant, not their count or total size: per
// informer, one watch's decode buffers. Weighed on a real API server, as the live heap after a
// collection: an informer over an empty namespace; after a tenant created a few ~1 MiB ConfigMaps
// on its watch; after it created many more; and a new cache that lists them all at its start, the
// first one stopped. An informer that kept the objects (a transform that keeps them whole) grows
// by their size and fails here.
func TestACachesMemoryDoesNotGrowWithATenantsObjects(t *testing.T) {
	const few, many = 4, 40
	cfg := testenv.StartAPIServer(t)
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}); err != nil {
		t.Fatal(err)
	}
	start := func() (cache.Cache, context.CancelFunc) {
		c, err := cachebounds.New(cfg, cachebounds.Inventory{Name: "weighed", Kinds: []cachebounds.Kind{
			{Object: &corev1.ConfigMap{}, Transform: cachebounds.Identity, Bound: "identity"},
		}}, cache.Options{DefaultNamespaces: map[string]cache.Config{"tenant": {}}})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Start(cctx) }()
		if _, err := c.GetInformer(cctx, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
		return c, func() { cancel(); <-done }
	}
	create := func(from, to int) {
		for i := from; i < to; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("big-%03d", i)},
				BinaryData: map[string][]byte{"blob": make([]byte, tenantObjectBytes)}}
			if err := k8s.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	holds := func(c cache.Cache, n int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var list corev1.ConfigMapList
			if err := c.List(ctx, &list, client.InNamespace("tenant")); err == nil && len(list.Items) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache does not hold the %d ConfigMaps after 2 minutes", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	type reading struct{ live, rss float64 }
	weigh := func(what string) reading {
		t.Helper()
		runtime.GC()
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		r := reading{live: float64(s[0].Value.Uint64()), rss: rss(t)}
		t.Logf("%s: live heap %.1f MiB, RSS %.1f MiB", what, r.live/(1<<20), r.rss/(1<<20))
		return r
	}
	within := func(what string, from, to reading, bound float64) {
		t.Helper()
		if grew := to.live - from.live; grew > bound {
			t.Errorf("%s: the live heap grew by %.1f MiB, want at most %.1f MiB", what, grew/(1<<20), bound/(1<<20))
		}
	}

	c, stop := start()
	holds(c, 0)
	empty := weigh("an informer over the tenant's empty namespace")
	create(0, few)
	holds(c, few)
	withFew := weigh(fmt.Sprintf("after %d ConfigMaps of %d KiB on its watch", few, tenantObjectBytes>>10))
	within("the first objects", empty, withFew, perInformer+few*cachebounds.MaxObjectBytes)
	create(few, many)
	holds(c, many)
	withMany := weigh(fmt.Sprintf("after %d of them", many))
	within("the count of the objects", withFew, withMany, (many-few)*cachebounds.MaxObjectBytes+(1<<20))
	stop()
	c, stop = start()
	holds(c, many)
	relisted := weigh(fmt.Sprintf("a new cache that listed the %d at its start, the first stopped", many))
	within("a new cache listing them", empty, relisted, perInformer+many*cachebounds.MaxObjectBytes)
	stop()
	for _, i := range cachebounds.Built() {
		if i.Cache == "weighed" {
			t.Errorf("a stopped cache is still listed by Built, with its store: %+v", i)
		}
	}
}

// rss is the process's resident set (VmRSS), in bytes; 0 where /proc does not say.
func rss(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb * 1024
		}
	}
	t.Log("no VmRSS in /proc/self/status")
	return 0
}
