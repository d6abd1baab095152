package cachebounds

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// heavyWatch stands for a watch whose decoder grew its buffer to a large object's size.
type heavyWatch struct {
	ch       chan watch.Event
	payload  *[1 << 20]byte
	done     chan struct{}
	stopOnce sync.Once
}

func (h *heavyWatch) ResultChan() <-chan watch.Event { return h.ch }
func (h *heavyWatch) Stop()                          { h.stopOnce.Do(func() { close(h.done) }) }

// An informer of a cache built here does not keep a watch once it is stopped and replaced: the
// first one, the streaming list that brought the initial objects, held the largest object's
// buffer for the informer's life (client-go keeps it for a deferred Stop; releaseStoppedWatches).
// The first watch here sends its initial events and ends as the API server ends a watch at its
// timeout; the informer opens a second; then the first's 1 MiB must be collectable.
func TestStoppedWatchesAreReleased(t *testing.T) {
	opts, err := options(Inventory{Name: "watches", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu              sync.Mutex
		calls           int
		first           weak.Pointer[[1 << 20]byte]
		firstWasListing bool
		// secondWasListing: the reflector restarted from a list, not the path this test guards.
		secondWasListing bool
	)
	second := make(chan struct{})
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			h := &heavyWatch{ch: make(chan watch.Event), payload: new([1 << 20]byte), done: make(chan struct{})}
			mu.Lock()
			calls++
			n := calls
			if n == 1 {
				first = weak.Make(h.payload)
				firstWasListing = o.SendInitialEvents != nil && *o.SendInitialEvents
			}
			mu.Unlock()
			ch, done := h.ch, h.done // the goroutines below must not hold h
			if n > 1 {
				if n == 2 {
					secondWasListing = o.SendInitialEvents != nil && *o.SendInitialEvents
					close(second)
				}
				go func() { <-done; close(ch) }()
				return h, nil
			}
			go func() {
				defer close(ch) // the API server ends the watch
				for _, e := range []watch.Event{
					{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "2"}}},
					{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2",
						Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
					// An event after the list: a watch that ends with none is an error that
					// restarts the whole ListAndWatch, which would drop the first watch anyway.
					{Type: watch.Modified, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "3"}}},
				} {
					select {
					case ch <- e:
					case <-done:
						return
					}
				}
			}()
			return h, nil
		},
	}
	inf := opts.NewInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.RunWithContext(ctx)
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer opened no second watch after the first ended")
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) || len(inf.GetStore().List()) != 1 {
		t.Fatalf("the informer did not sync the first watch's object: %d objects", len(inf.GetStore().List()))
	}
	mu.Lock()
	listing, relisted := firstWasListing, secondWasListing
	mu.Unlock()
	if !listing || relisted {
		t.Fatalf("the first watch was a streaming list: %v (WatchListClient off?), the second one too: %v (the reflector restarted): this test would not exercise what it guards", listing, relisted)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		mu.Lock()
		gone := first.Value() == nil
		mu.Unlock()
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the first watch (the streaming list) is still reachable 10 s after it was stopped and replaced: its buffers stay for the informer's life")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scriptedWatches is a ListerWatcher whose watches the test drives: each watch opened is sent
// on opened, with the options it was opened with and the meter of its request.
type scriptedWatch struct {
	o    metav1.ListOptions
	m    *meter
	w    *watch.FakeWatcher
	fail bool
}

// send delivers ev as an event of size bytes on the wire.
func (s scriptedWatch) send(t *testing.T, ev watch.Event, size int64) {
	t.Helper()
	if s.m == nil {
		t.Fatal("the watch's request carries no meter")
	}
	s.m.n.Add(size)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }() // a FakeWatcher stopped meanwhile panics on send
		s.w.Action(ev.Type, ev.Object)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the %s event was not read", ev.Type)
	}
}

func cm(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: rv}}
}

func endOfList(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv,
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}}
}

// A watch that delivered an event larger than HeavyEventBytes is renewed: the streaming list of
// the initial objects is swapped for a watch from its end bookmark (the informer does not list
// again), an ordinary watch ends after the event and the reflector resumes from it; small
// events renew nothing; a swap that cannot open its watch keeps the heavy one, which then ends
// after its next event. The informer's store sees every event once, in order.
func TestHeavyWatchesAreRenewed(t *testing.T) {
	opts, err := options(Inventory{Name: "heavy", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, failSwap := range []bool{false, true} {
		t.Run(map[bool]string{false: "swap", true: "swap refused"}[failSwap], func(t *testing.T) {
			opened := make(chan scriptedWatch, 10)
			var calls atomic.Int64
			lw := &toolscache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
					return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					if calls.Add(1) == 2 && failSwap {
						opened <- scriptedWatch{o: o, fail: true}
						return nil, errors.New("refused")
					}
					s := scriptedWatch{o: o, m: meterFrom(ctx), w: watch.NewFake()}
					opened <- s
					return s.w, nil
				},
			}
			next := func() scriptedWatch {
				t.Helper()
				select {
				case s := <-opened:
					return s
				case <-time.After(10 * time.Second):
					t.Fatal("no watch was opened")
				}
				return scriptedWatch{}
			}
			none := func() {
				t.Helper()
				select {
				case s := <-opened:
					t.Fatalf("a watch was opened (options %+v) where none should be", s.o)
				case <-time.After(300 * time.Millisecond):
				}
			}
			var recorded *atomic.Int64
			inf := opts.NewInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
			for _, i := range Built() {
				if i.Cache == "heavy" && i.Store == inf.GetStore() {
					recorded = i.Renewed
				}
			}
			if recorded == nil {
				t.Fatal("the informer's record has no renewal count")
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go inf.RunWithContext(ctx)
			rvIs := func(want string) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for {
					o, ok, _ := inf.GetStore().GetByKey("n/a")
					if ok && o.(*corev1.ConfigMap).ResourceVersion == want {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("the store holds %v, want resourceVersion %s", o, want)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}

			list := next()
			if list.o.SendInitialEvents == nil || !*list.o.SendInitialEvents {
				t.Fatalf("the first watch is no streaming list (%+v): WatchListClient off? this test would not exercise the swap", list.o)
			}
			list.send(t, watch.Event{Type: watch.Added, Object: cm("2")}, 1<<20)
			list.send(t, endOfList("2"), 200)
			rvIs("2")
			cur := list
			if failSwap {
				if s := next(); !s.fail || s.o.ResourceVersion != "2" {
					t.Fatalf("the swap opened %+v, want a watch from the list's end", s.o)
				}
				none()
				// Kept: the next event still arrives through it, and it ends after that one.
				list.send(t, watch.Event{Type: watch.Modified, Object: cm("3")}, 100)
				rvIs("3")
				cur = next()
				if cur.o.ResourceVersion != "3" || cur.o.SendInitialEvents != nil {
					t.Fatalf("after the kept heavy watch ended the reflector opened %+v, want a watch from 3", cur.o)
				}
			} else {
				cur = next()
				if cur.o.ResourceVersion != "2" || cur.o.SendInitialEvents != nil || cur.o.ResourceVersionMatch != "" {
					t.Fatalf("the streaming list was swapped for %+v, want a plain watch from the list's end, 2", cur.o)
				}
				if !list.w.IsStopped() {
					t.Error("the streaming list was not stopped when swapped")
				}
				cur.send(t, watch.Event{Type: watch.Modified, Object: cm("3")}, 100)
				rvIs("3")
			}
			none() // small events renew nothing
			cur.send(t, watch.Event{Type: watch.Modified, Object: cm("4")}, HeavyEventBytes+1)
			rvIs("4")
			after := next()
			if after.o.ResourceVersion != "4" || after.o.SendInitialEvents != nil {
				t.Fatalf("after a heavy event the reflector opened %+v, want a watch from its resourceVersion, 4", after.o)
			}
			if !cur.w.IsStopped() {
				t.Error("the watch that delivered the heavy event was not stopped")
			}
			after.send(t, watch.Event{Type: watch.Deleted, Object: cm("5")}, 100)
			deadline := time.Now().Add(10 * time.Second)
			for len(inf.GetStore().List()) != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the delete after the renewal did not reach the store")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// The list (swapped, or kept and ended after its next event) and the heavy watch.
			if got := recorded.Load(); got != 2 {
				t.Errorf("renewals = %d, want 2", got)
			}
		})
	}
}

// The cache's HTTP client counts the bytes of a response whose request carries a meter, and
// only those.
func TestMeteringTransportCountsWatchBodies(t *testing.T) {
	body := strings.Repeat("x", 12345)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
	defer srv.Close()
	c := metered(srv.Client())
	m := &meter{}
	for _, ctx := range []context.Context{withMeter(t.Context(), m), t.Context()} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if got := m.take(); got != int64(len(body)) {
		t.Errorf("counted %d bytes, want %d (one metered response)", got, len(body))
	}
}
