package fairqueue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Items are "namespace/name"; the lane is the namespace.
func nsOf(s string) string { ns, _, _ := strings.Cut(s, "/"); return ns }

var start = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func newTestQueue(t *testing.T, o Options[string]) (*Queue[string], *clocktesting.FakeClock) {
	t.Helper()
	c := clocktesting.NewFakeClock(start)
	if o.Clock == nil {
		o.Clock = c
	}
	q := New("test", nsOf, o)
	t.Cleanup(q.ShutDown)
	return q, c
}

// drain gets every ready item (each marked Done), in the order handed out.
func drain(t *testing.T, q *Queue[string]) []string {
	t.Helper()
	var out []string
	for q.Len() > 0 {
		k, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down while draining")
		}
		out = append(out, k)
		q.Done(k)
	}
	return out
}

func keys(ns string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/o%d", ns, i)
	}
	return out
}

func TestOneTenantsBacklogDoesNotStarveAnother(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	for _, k := range keys("a", 5000) {
		q.Add(k)
	}
	q.Add("b/only")
	for i := range 2 {
		k, _ := q.Get()
		q.Done(k)
		if k == "b/only" {
			t.Logf("b's item handed out at Get %d of 5001", i+1)
			return
		}
	}
	t.Fatal("b's single item was not among the first 2 Gets after a's 5000")
}

func TestLanesTakeTurnsInTheOrderTheyArrived(t *testing.T) {
	tests := []struct {
		name string
		add  []string
		want []string
	}{
		{
			name: "one lane is first in, first out",
			add:  []string{"a/1", "a/2", "a/3"},
			want: []string{"a/1", "a/2", "a/3"},
		},
		{
			name: "three lanes alternate, each lane first in, first out",
			add:  []string{"a/1", "a/2", "a/3", "b/1", "c/1", "c/2"},
			want: []string{"a/1", "b/1", "c/1", "a/2", "c/2", "a/3"},
		},
		{
			name: "cluster-scoped items share a lane of their own",
			add:  []string{"/whole-1", "/whole-2", "/whole-3", "a/1", "b/1", "a/2"},
			want: []string{"/whole-1", "a/1", "b/1", "/whole-2", "a/2", "/whole-3"},
		},
		{
			name: "an item queued twice is handed out once, at its first place",
			add:  []string{"a/1", "b/1", "a/1", "a/2", "b/1"},
			want: []string{"a/1", "b/1", "a/2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t, Options[string]{})
			for _, k := range tt.add {
				q.Add(k)
			}
			if got := drain(t, q); !equal(got, tt.want) {
				t.Errorf("handed out %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAnEmptiedLaneRejoinsAtTheEndOfTheRound(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	for _, k := range []string{"a/1", "a/2", "b/1", "c/1", "c/2"} {
		q.Add(k)
	}
	var got []string
	get := func() {
		k, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	get() // a/1
	get() // b/1: b's lane is empty now
	q.Add("b/2")
	got = append(got, drain(t, q)...)
	// b comes back after the lanes already waiting (c, then a).
	if want := []string{"a/1", "b/1", "c/1", "a/2", "b/2", "c/2"}; !equal(got, want) {
		t.Errorf("handed out %v, want %v", got, want)
	}
}

func TestHigherPrioritiesGoFirstAndLanesShareEachPriority(t *testing.T) {
	tests := []struct {
		name string
		add  []struct {
			key  string
			prio int
		}
		want []string
	}{
		{
			name: "a higher priority queued last is handed out first",
			add: []struct {
				key  string
				prio int
			}{{"a/1", 0}, {"a/2", 0}, {"b/1", -100}, {"c/1", 10}},
			want: []string{"c/1", "a/1", "a/2", "b/1"},
		},
		{
			name: "within one priority the lanes alternate",
			add: []struct {
				key  string
				prio int
			}{{"a/1", 5}, {"a/2", 5}, {"a/3", 5}, {"b/1", 5}, {"a/4", 0}, {"b/2", 0}},
			want: []string{"a/1", "b/1", "a/2", "a/3", "a/4", "b/2"},
		},
		{
			name: "queued again at a higher priority the item moves up, to the end of its lane there",
			add: []struct {
				key  string
				prio int
			}{{"a/1", 0}, {"a/2", 5}, {"b/1", 0}, {"a/1", 5}},
			want: []string{"a/2", "a/1", "b/1"},
		},
		{
			name: "queued again at a lower priority the item keeps its place",
			add: []struct {
				key  string
				prio int
			}{{"a/1", 5}, {"b/1", 5}, {"a/1", 0}},
			want: []string{"a/1", "b/1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t, Options[string]{})
			for _, a := range tt.add {
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(a.prio)}, a.key)
			}
			if got := drain(t, q); !equal(got, tt.want) {
				t.Errorf("handed out %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGetWithPriorityReturnsThePriorityTheItemWasQueuedAt(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, "a/1")
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(7)}, "a/1")
	k, prio, _ := q.GetWithPriority()
	if k != "a/1" || prio != 7 {
		t.Errorf("got %s at %d, want a/1 at 7", k, prio)
	}
}

func TestAKeyIsNotHandedOutAgainBeforeDone(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	q.Add("a/1")
	k, _ := q.Get()
	q.Add("a/1") // an event while a/1 is processed
	q.Add("b/1")
	if n := q.Len(); n != 1 {
		t.Fatalf("Len = %d while a/1 is processed, want 1 (b/1 only)", n)
	}
	if k2, _ := q.Get(); k2 != "b/1" {
		t.Fatalf("handed out %s while a/1 is processed, want b/1", k2)
	}
	q.Done("b/1")
	q.Done(k)
	if got := drain(t, q); !equal(got, []string{"a/1"}) {
		t.Errorf("after Done handed out %v, want [a/1] once", got)
	}
}

func TestAddAfterWaitsAndTheEarlierReadyTimeWins(t *testing.T) {
	q, c := newTestQueue(t, Options[string]{})
	q.AddAfter("a/1", 10*time.Second)
	q.AddAfter("a/1", 3*time.Second) // earlier: wins
	q.AddAfter("a/1", time.Minute)   // later: ignored
	q.AddAfter("b/1", 5*time.Second)
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d before any ready time, want 0", n)
	}
	step(t, q, c, 3*time.Second, 1)
	if got := drain(t, q); !equal(got, []string{"a/1"}) {
		t.Fatalf("after 3 s handed out %v, want [a/1]", got)
	}
	step(t, q, c, 2*time.Second, 1)
	if got := drain(t, q); !equal(got, []string{"b/1"}) {
		t.Fatalf("after 5 s handed out %v, want [b/1]", got)
	}
	// A waiting item added without a delay is ready at once.
	q.AddAfter("c/1", time.Hour)
	q.Add("c/1")
	if got := drain(t, q); !equal(got, []string{"c/1"}) {
		t.Fatalf("handed out %v, want [c/1] at once", got)
	}
}

func TestWaitingItemsThatBecomeReadyJoinTheirLanes(t *testing.T) {
	q, c := newTestQueue(t, Options[string]{})
	for _, k := range keys("a", 100) {
		q.AddAfter(k, time.Second)
	}
	q.AddAfter("b/1", time.Second)
	step(t, q, c, time.Second, 101)
	got := drain(t, q)
	if got[0] != "a/o0" || got[1] != "b/1" {
		t.Errorf("first two handed out %v, want [a/o0 b/1]", got[:2])
	}
}

func TestAnItemDueWhileProcessedIsHandedOutAfterDone(t *testing.T) {
	q, c := newTestQueue(t, Options[string]{})
	q.Add("a/1")
	k, _ := q.Get()
	q.AddAfter("a/1", time.Second) // a Reconcile's RequeueAfter comes before its Done
	step(t, q, c, time.Second, 0)
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d while a/1 is processed, want 0", n)
	}
	q.Done(k)
	if got := drain(t, q); !equal(got, []string{"a/1"}) {
		t.Errorf("after Done handed out %v, want [a/1]", got)
	}
}

// fixedLimiter waits d for every item and counts requeues.
type fixedLimiter struct {
	d      time.Duration
	mu     sync.Mutex
	counts map[string]int
}

func (f *fixedLimiter) When(item string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[item]++
	return f.d
}
func (f *fixedLimiter) Forget(item string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.counts, item)
}
func (f *fixedLimiter) NumRequeues(item string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[item]
}

func TestRateLimitedRequeuesWaitForTheLimiter(t *testing.T) {
	rl := &fixedLimiter{d: 2 * time.Second, counts: map[string]int{}}
	q, c := newTestQueue(t, Options[string]{RateLimiter: rl})
	q.AddRateLimited("a/1")
	q.AddRateLimited("a/1")
	if n, r := q.Len(), q.NumRequeues("a/1"); n != 0 || r != 2 {
		t.Fatalf("Len %d, NumRequeues %d; want 0 and 2", n, r)
	}
	// With both a delay and the limiter, the shorter wait wins.
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour, RateLimited: true}, "b/1")
	step(t, q, c, 2*time.Second, 2)
	if got := drain(t, q); !equal(got, []string{"a/1", "b/1"}) {
		t.Fatalf("after 2 s handed out %v, want [a/1 b/1]", got)
	}
	q.Forget("a/1")
	if r := q.NumRequeues("a/1"); r != 0 {
		t.Errorf("NumRequeues after Forget = %d, want 0", r)
	}
}

func TestShutDownWakesEveryWaitingWorkerAndIgnoresAdds(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	var wg sync.WaitGroup
	var down atomic.Int32
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, shutdown := q.Get(); shutdown {
				down.Add(1)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // let the workers block in Get
	q.ShutDown()
	wg.Wait()
	if down.Load() != 3 {
		t.Errorf("%d of 3 blocked workers saw the shutdown", down.Load())
	}
	q.Add("a/1")
	if q.Len() != 0 || !q.ShuttingDown() {
		t.Errorf("after ShutDown: Len %d, ShuttingDown %v; want 0, true", q.Len(), q.ShuttingDown())
	}
	if _, shutdown := q.Get(); !shutdown {
		t.Error("Get after ShutDown did not report the shutdown")
	}
}

func TestShutDownWithDrainWaitsForTheItemsHandedOut(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	q.Add("a/1")
	k, _ := q.Get()
	drained := make(chan struct{})
	go func() { q.ShutDownWithDrain(); close(drained) }()
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned while a/1 was processed")
	case <-time.After(50 * time.Millisecond):
	}
	q.Done(k)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("ShutDownWithDrain did not return after Done")
	}
}

// Many producers and workers at once (run with -race): every key handed out, none to two
// workers at the same time.
func TestConcurrentWorkersNeverShareAKey(t *testing.T) {
	q := New("", nsOf, Options[string]{})
	defer q.ShutDown()
	const producers, perProducer, workers = 4, 500, 8
	var mu sync.Mutex
	busy := map[string]bool{}
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if busy[k] {
					t.Errorf("worker %d got %s while another worker had it", w, k)
				}
				busy[k], seen[k] = true, true
				mu.Unlock()
				time.Sleep(time.Microsecond)
				mu.Lock()
				busy[k] = false
				mu.Unlock()
				q.Done(k)
			}
		}()
	}
	var pw sync.WaitGroup
	for p := range producers {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := range perProducer {
				// Keys repeat across producers, so the same key is often queued while processed.
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(i % 3)}, fmt.Sprintf("ns%d/o%d", p%2, i%100))
			}
		}()
	}
	pw.Wait()
	n := 0
	if wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		n = len(seen)
		mu.Unlock()
		return n == 200 && q.Len() == 0, nil
	}) != nil {
		t.Fatalf("only %d of 200 keys handed out", n)
	}
	q.ShutDown()
	wg.Wait()
}

func TestNewQueueLanesAreNamespaces(t *testing.T) {
	q := NewQueue("fairqueue-test", nil)
	defer q.ShutDown()
	if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
		t.Fatal("NewQueue's queue is not a priorityqueue.PriorityQueue: Result.Priority and the handlers' priorities would be lost")
	}
	req := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	for i := range 50 {
		q.Add(req("big", fmt.Sprint(i)))
	}
	q.Add(req("small", "one"))
	q.Add(req("", "cluster-scoped"))
	var got []reconcile.Request
	for range 3 {
		r, _ := q.Get()
		got = append(got, r)
		q.Done(r)
	}
	want := []reconcile.Request{req("big", "0"), req("small", "one"), req("", "cluster-scoped")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first three %v, want %v", got, want)
	}
}

// step advances the clock by d once the queue's timer is set, then waits until ready items are
// ready.
func step(t *testing.T, q *Queue[string], c *clocktesting.FakeClock, d time.Duration, ready int) {
	t.Helper()
	waitFor(t, func() bool { return c.HasWaiters() })
	c.Step(d)
	waitFor(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		n := q.ready
		for _, it := range q.items {
			if it.state == stateParked {
				n++
			}
		}
		return n >= ready && (q.waiting.Len() == 0 || q.waiting[0].readyAt.After(c.Now()))
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}) != nil {
		t.Fatal("timed out")
	}
}

func equal(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

var _ workqueue.TypedRateLimiter[string] = &fixedLimiter{}
