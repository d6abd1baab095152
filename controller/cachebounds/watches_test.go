package cachebounds

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
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
// again), an ordinary watch ends after the event and the reflector resumes from it (the list's
// own watch too, once past its end: a light list, then a flood); small events renew nothing; a
// swap that cannot open its watch keeps the heavy one, which then ends after its next event. The
// informer's store sees every event once, in order.
func TestHeavyWatchesAreRenewed(t *testing.T) {
	opts, err := options(Inventory{Name: "heavy", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"swap", "swap refused", "light list"} {
		t.Run(mode, func(t *testing.T) {
			failSwap := mode == "swap refused"
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
			if mode == "light list" {
				list.send(t, watch.Event{Type: watch.Added, Object: cm("2")}, 100)
			} else {
				list.send(t, watch.Event{Type: watch.Added, Object: cm("2")}, 1<<20)
			}
			list.send(t, endOfList("2"), 200)
			rvIs("2")
			cur := list
			switch mode {
			case "light list":
				none()
				// The flood comes after the list, on the list's own watch: it ends there.
				list.send(t, watch.Event{Type: watch.Modified, Object: cm("3")}, 1<<20)
				rvIs("3")
				cur = next()
				if cur.o.ResourceVersion != "3" || cur.o.SendInitialEvents != nil {
					t.Fatalf("after a heavy event on the list's watch the reflector opened %+v, want a watch from 3", cur.o)
				}
				if !list.w.IsStopped() {
					t.Error("the list's watch was not stopped after its heavy event")
				}
			case "swap refused":
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
			default:
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
			// The list (swapped, kept and ended after its next event, or ended after its heavy
			// event) and the heavy watch.
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

// feeder is a watch that sends its events one by one, each counted on its request's meter as
// size bytes just before it is sent, then waits to be stopped; it closes its channel once
// stopped, as a StreamWatcher does. An event marked inFlight is sent even if the watch is stopped
// meanwhile: it was decoded already.
type feeder struct {
	ch       chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

type fed struct {
	ev       watch.Event
	size     int64
	inFlight bool
}

func newFeeder(m *meter, events ...fed) *feeder {
	f := &feeder{ch: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(f.ch)
		for _, e := range events {
			m.n.Add(e.size)
			if e.inFlight {
				f.ch <- e.ev
				continue
			}
			select {
			case f.ch <- e.ev:
			case <-f.done:
				return
			}
		}
		<-f.done
	}()
	return f
}

func (f *feeder) ResultChan() <-chan watch.Event { return f.ch }
func (f *feeder) Stop()                          { f.stopOnce.Do(func() { close(f.done) }) }

func filterGoroutines() int {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return strings.Count(b.String(), "watch.(*filteredWatch).loop")
}

// A watch renewed with an event in flight leaves nothing behind. controller-runtime wraps each
// metadata-only watch in apimachinery's watch.Filter, whose goroutine, once it has taken the
// next event, blocks on handing it over for ever if nobody reads: with the stopped watch, its
// decoder and its buffers (about 1 MiB per renewal in the hostile bench's flood: 104 such
// goroutines, 30 MB). Here the streaming list brings a heavy object and is swapped at its end
// bookmark while its filter holds the next event; the watch from the bookmark brings that event
// again; once the informer stops, no filter goroutine is left.
func TestRenewedWatchesLeaveNoGoroutine(t *testing.T) {
	opts, err := options(Inventory{Name: "inflight", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := filterGoroutines()
	var calls atomic.Int64
	second := make(chan metav1.ListOptions, 1)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			m := meterFrom(ctx)
			switch calls.Add(1) {
			case 1:
				return watch.Filter(newFeeder(m,
					fed{ev: watch.Event{Type: watch.Added, Object: cm("2")}, size: 1 << 20},
					fed{ev: endOfList("2"), size: 100},
					fed{ev: watch.Event{Type: watch.Modified, Object: cm("3")}, size: 100, inFlight: true},
				), func(e watch.Event) (watch.Event, bool) { return e, true }), nil
			case 2:
				second <- o
				return watch.Filter(newFeeder(m, fed{ev: watch.Event{Type: watch.Modified, Object: cm("3")}, size: 100}),
					func(e watch.Event) (watch.Event, bool) { return e, true }), nil
			}
			return watch.Filter(newFeeder(m), func(e watch.Event) (watch.Event, bool) { return e, true }), nil
		},
	}
	inf := opts.NewInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() { defer close(stopped); inf.RunWithContext(ctx) }()
	select {
	case o := <-second:
		if o.ResourceVersion != "2" || o.SendInitialEvents != nil {
			t.Errorf("the heavy list was swapped for %+v, want a watch from its end, 2", o)
		}
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the heavy list was not swapped")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, ok, _ := inf.GetStore().GetByKey("n/a")
		if ok && o.(*corev1.ConfigMap).ResourceVersion == "3" {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the event in flight at the renewal never reached the store: %v", o)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-stopped
	for deadline := time.Now().Add(5 * time.Second); filterGoroutines() > before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watch.Filter goroutines are left after the informer stopped (%d before it started): a stopped watch with an event in flight is held for ever", filterGoroutines(), before)
		}
	}
}
