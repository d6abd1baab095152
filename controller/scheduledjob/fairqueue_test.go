package scheduledjob

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/fairqueue"
)

// The controller's queue (fairqueue, wired in SetupWithManager) with the slot passes' priority:
// passes due at a slot go before watch events and the initial list, and among them each
// namespace's first before any namespace's second, as namespaces take turns within a priority
// (with controller-runtime's priority queue, FIFO within a priority, b's pass came after a's
// 1,000 and c's event after a's 100).
func TestSlotPassesGoFirstAndTenantsTakeTurnsInTheFairQueue(t *testing.T) {
	q := fairqueue.New("", fairqueue.ByNamespace, fairqueue.Options[reconcile.Request]{})
	defer q.ShutDown()
	req := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	// Queued before the slot: the initial list of a third tenant's object; watch events of
	// tenant a's 100 other objects, then one of tenant c's.
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, req("c", "listed"))
	for i := range 100 {
		q.Add(req("a", fmt.Sprintf("event-%03d", i)))
	}
	q.Add(req("c", "event"))
	// Tenant a's 1,000 ScheduledJobs fall due at the slot, then tenant b's single one.
	for i := range 1000 {
		name := fmt.Sprintf("sj-%04d", i)
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(slotPriority)}, req("a", name))
	}
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(slotPriority)}, req("b", "only"))

	var got []reconcile.Request
	for q.Len() > 0 {
		r, _ := q.Get()
		got = append(got, r)
		q.Done(r)
	}
	if len(got) != 1103 {
		t.Fatalf("handed out %d requests, want 1103", len(got))
	}
	if got[0] != req("a", "sj-0000") || got[1] != req("b", "only") {
		t.Errorf("first two %v, want a's first slot pass, then b's", got[:2])
	}
	// After the 1,001 slot passes, the watch events: a's first, then c's single one, not after
	// a's 100.
	if got[1001] != req("a", "event-000") || got[1002] != req("c", "event") {
		t.Errorf("after the slot passes %v, want a's first watch event, then c's", got[1001:1003])
	}
	if got[1102] != req("c", "listed") {
		t.Errorf("last %v, want the initial list's", got[1102])
	}
}
