package secretsync

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// recordingQueue records what a handler queues, and when.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	now   []reconcile.Request
	after map[reconcile.Request]time.Duration
}

func (q *recordingQueue) Add(r reconcile.Request) { q.now = append(q.now, r) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	if q.after == nil {
		q.after = map[reconcile.Request]time.Duration{}
	}
	q.after[r] = d
}

// A namespace event queues, for every SecretSync, the target pass of that namespace at once and
// the SecretSync's pass (which writes the status) later, shared by the namespaces of a burst.
func TestANamespaceEventQueuesItsOwnPassNowAndTheWholePassLater(t *testing.T) {
	scheme := testenv.Scheme(t)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "harbor"}},
		&v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "ca"}},
	).Build()
	r := &Reconciler{Client: c}
	wholeH, targetH := r.namespacePasses()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	for _, tc := range []struct {
		name string
		send func(handler.EventHandler, *recordingQueue)
	}{
		{"created", func(h handler.EventHandler, q *recordingQueue) {
			h.Create(context.Background(), event.CreateEvent{Object: ns}, q)
		}},
		{"relabelled", func(h handler.EventHandler, q *recordingQueue) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: ns, ObjectNew: ns}, q)
		}},
		{"deleted", func(h handler.EventHandler, q *recordingQueue) {
			h.Delete(context.Background(), event.DeleteEvent{Object: ns}, q)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, tq := &recordingQueue{}, &recordingQueue{}
			tc.send(wholeH, q)
			tc.send(targetH, tq)
			slices.SortFunc(tq.now, compareRequests)
			if want := []reconcile.Request{targetRequest("team-a", "ca"), targetRequest("team-a", "harbor")}; !slices.Equal(tq.now, want) || len(tq.after) != 0 {
				t.Errorf("target passes queued at once %v and later %v, want %v at once", tq.now, tq.after, want)
			}
			for _, n := range []string{"ca", "harbor"} {
				if d, ok := q.after[wholePass(n)]; !ok || d != wholePassDelay {
					t.Errorf("pass of %s queued after %v (%t), want after %v", n, d, ok, wholePassDelay)
				}
			}
			if len(q.after) != 2 || len(q.now) != 0 {
				t.Errorf("SecretSync passes queued at once %v and later %v, want the two later", q.now, q.after)
			}
		})
	}
}

// At a start the informer lists every namespace: each SecretSync gets its pass at once, not a
// target pass per namespace (10,000 of them at 10,000 namespaces).
func TestTheInitialListOfNamespacesQueuesOnlyTheWholePasses(t *testing.T) {
	scheme := testenv.Scheme(t)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "harbor"}}).Build()
	r := &Reconciler{Client: c}
	q, tq := &recordingQueue{}, &recordingQueue{}
	for _, n := range []string{"team-a", "team-b"} {
		e := event.CreateEvent{Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, IsInInitialList: true}
		wholeH, targetH := r.namespacePasses()
		wholeH.Create(context.Background(), e, q)
		targetH.Create(context.Background(), e, tq)
	}
	if len(q.after) != 0 || len(q.now) == 0 || slices.ContainsFunc(q.now, func(r reconcile.Request) bool { return r != wholePass("harbor") }) || len(tq.now)+len(tq.after) != 0 {
		t.Errorf("queued at once %v and later %v, target passes %v, want only the pass of harbor at once", q.now, q.after, tq.now)
	}
}

func compareRequests(a, b reconcile.Request) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// A namespace's own pass sees one namespace: it must not write the status, which counts them
// all. While a namespace is added, status.targets never drops below what it was.
func TestANewNamespaceGetsItsCopyAndTheStatusKeepsCountingAll(t *testing.T) {
	const c = "ownpass"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("v1")})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, 2)

	var mu sync.Mutex
	var seen []int32
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			ss := &v1alpha1.SecretSync{}
			if err := k8s.Get(ctx, types.NamespacedName{Name: c}, ss); err == nil {
				mu.Lock()
				seen = append(seen, ss.Status.Targets)
				mu.Unlock()
			}
		}
	}()
	late := targetNamespace(t, c+"-late", c)
	copyIn(t, late, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, 3)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the status was never read")
	}
	for _, n := range seen {
		if n < 2 {
			t.Fatalf("status.targets went to %d while a namespace was added (seen %v): a one-namespace pass wrote the status", n, seen)
		}
	}
}

// The pure plan names the deletion policies by the API's values.
func TestThePlanKnowsTheAPIsDeletionPolicies(t *testing.T) {
	if propagation.PolicyDelete != string(v1alpha1.DeletionPolicyDelete) || propagation.PolicyOrphan != string(v1alpha1.DeletionPolicyOrphan) {
		t.Errorf("propagation's policies %q/%q, the API's %q/%q", propagation.PolicyDelete, propagation.PolicyOrphan, v1alpha1.DeletionPolicyDelete, v1alpha1.DeletionPolicyOrphan)
	}
}
