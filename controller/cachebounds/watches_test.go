package cachebounds

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
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
// buffer for the informer's life (client-go keeps it for a deferred Stop; boundWatches).
// The first watch here sends its initial events and ends as the API server ends a watch at its
// timeout; the informer opens a second; then the first's 1 MiB must be collectable.
func TestStoppedWatchesAreReleased(t *testing.T) {
	opts, err := options(Inventory{Name: "watches", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{}, &record{})
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

// Every watch of a cache built here, but the streaming list of the initial objects, asks the API
// server to end it within MaxWatchTimeout, so that the buffers a heavy event grew do not outlive
// it by more; a timeout already shorter is kept, and the list keeps the reflector's (ended before
// its end bookmark, it would start again).
func TestWatchesEndWithinTheCap(t *testing.T) {
	var got []metav1.ListOptions
	lw := boundWatches(&toolscache.ListWatch{WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
		got = append(got, o)
		return watch.NewFake(), nil
	}}).(toolscache.ListerWatcherWithContext)
	long, short := int64(400), int64(20)
	for _, c := range []struct {
		name string
		in   metav1.ListOptions
		want *int64
	}{
		{"a watch the reflector asks 5 to 10 minutes for is capped", metav1.ListOptions{ResourceVersion: "7", TimeoutSeconds: &long}, ptr.To(int64(60))},
		{"a watch with no timeout is capped", metav1.ListOptions{ResourceVersion: "7"}, ptr.To(int64(60))},
		{"a shorter timeout is kept", metav1.ListOptions{TimeoutSeconds: &short}, &short},
		{"the streaming list keeps its timeout", metav1.ListOptions{SendInitialEvents: ptr.To(true), TimeoutSeconds: &long}, &long},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := lw.WatchWithContext(t.Context(), c.in)
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
			o := got[len(got)-1]
			if o.TimeoutSeconds == nil || *o.TimeoutSeconds != *c.want || o.ResourceVersion != c.in.ResourceVersion {
				t.Errorf("the watch was opened with %+v, want timeoutSeconds %d and the rest as asked", o, *c.want)
			}
		})
	}
	if MaxWatchTimeout != time.Minute {
		t.Errorf("MaxWatchTimeout %s: the cases above assume a minute", MaxWatchTimeout)
	}
}

// feeder is a watch that sends its events one by one, then waits to be stopped; it closes its
// channel once stopped, as a StreamWatcher does. An event marked inFlight is sent once the watch
// is stopped: it was being decoded as the watch was stopped.
type feeder struct {
	ch       chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

type fed struct {
	ev       watch.Event
	inFlight bool
}

func newFeeder(events ...fed) *feeder {
	f := &feeder{ch: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(f.ch)
		for _, e := range events {
			if e.inFlight {
				<-f.done
				f.ch <- e.ev
				return
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

func cm(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: rv}}
}

// A watch stopped with an event in flight leaves nothing behind. controller-runtime wraps each
// metadata-only watch in apimachinery's watch.Filter, whose goroutine, once it has taken the
// next event, blocks on handing it over for ever if nobody reads: with the stopped watch, its
// decoder and its buffers. Here an informer's filtered watch decodes one more event as the
// informer stops (as a source namespace's cache does when its last SecretSync goes); once it has
// stopped, no filter goroutine is left.
func TestAStoppedWatchLeavesNoGoroutine(t *testing.T) {
	opts, err := options(Inventory{Name: "inflight", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{}, &record{})
	if err != nil {
		t.Fatal(err)
	}
	before := filterGoroutines()
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.Filter(newFeeder(
				fed{ev: watch.Event{Type: watch.Added, Object: cm("2")}},
				fed{ev: watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2",
					Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}}},
				fed{ev: watch.Event{Type: watch.Modified, Object: cm("3")}},
				fed{ev: watch.Event{Type: watch.Modified, Object: cm("4")}, inFlight: true},
			), func(e watch.Event) (watch.Event, bool) { return e, true }), nil
		},
	}
	inf := opts.NewInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() { defer close(stopped); inf.RunWithContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, ok, _ := inf.GetStore().GetByKey("n/a")
		if ok && o.(*corev1.ConfigMap).ResourceVersion == "3" {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the events before the stop never reached the store: %v", o)
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
