package jobs

import (
	"fmt"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func deletedJob(name string, ownerKind string, owner types.UID, done bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		Annotations:     map[string]string{jobstate.ScheduledTimeAnnotation: "2026-05-01T09:00:00Z", "big": "tenant data"},
		OwnerReferences: []metav1.OwnerReference{{Kind: ownerKind, Name: "o", UID: owner, Controller: ptr.To(true)}}}}
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	if done {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

func TestGoneRemembersFinishedJobsOfItsKind(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	g := NewGone("At", clk)
	g.Observe(deletedJob("done", "At", "a", true))
	g.Observe(toolscache.DeletedFinalStateUnknown{Key: "ns/tomb", Obj: deletedJob("tomb", "At", "a", true)})
	g.Observe(deletedJob("running", "At", "a", false))
	g.Observe(deletedJob("other-kind", "ScheduledJob", "a", true))
	g.Observe(deletedJob("other-owner", "At", "b", true))
	got := map[string]*batchv1.Job{}
	for _, j := range g.Of("a") {
		got[j.Name] = j
	}
	if len(got) != 2 || got["done"] == nil || got["tomb"] == nil {
		t.Fatalf("remembered %v, want done and tomb (finished, controlled by At a)", got)
	}
	j := got["done"]
	if finished, how, _ := jobstate.Finished(j); !finished || how != batchv1.JobComplete || j.Annotations[jobstate.ScheduledTimeAnnotation] == "" {
		t.Errorf("kept %+v, want its status and scheduled time", j)
	}
	if len(j.Spec.Template.Spec.Containers) != 0 || j.Annotations["big"] != "" {
		t.Errorf("kept the template or foreign annotations: %+v", j)
	}
	clk.Step(GoneRetention + time.Second)
	if n := len(g.Of("a")); n != 0 {
		t.Errorf("%d Jobs remembered after the retention, want 0", n)
	}
}

// The manager's own history prunes are not remembered: with 10,000 every-minute ScheduledJobs
// they filled the 10,000-entry memory in a minute, and the hour it promises became a minute.
func TestGoneKeepsOnlyJobsOthersDeleted(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	g := NewGone("ScheduledJob", clk)
	pruned := deletedJob("pruned", "ScheduledJob", "a", true)
	g.Deleting(pruned.UID)
	g.Observe(pruned)
	g.Observe(deletedJob("ttl", "ScheduledJob", "a", true))
	if got := g.Of("a"); len(got) != 1 || got[0].Name != "ttl" {
		t.Fatalf("remembered %v, want only the Job deleted by its TTL", got)
	}
	// A prune whose deletion the informer never saw is forgotten, and a later deletion of the
	// same Job by someone else (the delete failed) is remembered.
	late := deletedJob("late", "ScheduledJob", "a", true)
	g.Deleting(late.UID)
	clk.Step(oursRetention + time.Second)
	g.Observe(late)
	if n := len(g.Of("a")); n != 2 {
		t.Errorf("%d Jobs remembered, want ttl and late", n)
	}
}

// Gone is bounded and evicts the oldest first, without scanning: the entries are kept in time
// order and indexed by owner.
func TestGoneIsBoundedOldestFirst(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	g := NewGone("At", clk)
	g.limit = 3
	for i := range 5 {
		g.Observe(deletedJob(fmt.Sprint("j", i), "At", types.UID(fmt.Sprint("owner", i%2)), true))
		clk.Step(time.Second)
	}
	got := map[string]bool{}
	for _, owner := range []types.UID{"owner0", "owner1"} {
		for _, j := range g.Of(owner) {
			got[j.Name] = true
		}
	}
	if len(got) != 3 || !got["j2"] || !got["j3"] || !got["j4"] || g.count != 3 {
		t.Errorf("remembered %v (count %d), want the 3 newest: j2, j3, j4", got, g.count)
	}
	// Remembered again (a tombstone after the delete event): one entry, refreshed.
	g.Observe(deletedJob("j2", "At", "owner0", true))
	if g.count != 3 {
		t.Errorf("count %d after seeing j2 again, want 3", g.count)
	}
	clk.Step(GoneRetention + time.Second)
	if n := len(g.Of("owner0")) + len(g.Of("owner1")); n != 0 || g.count != 0 || len(g.byOwner) != 0 {
		t.Errorf("%d Jobs (count %d, %d owners) after the retention, want none", n, g.count, len(g.byOwner))
	}
}

// The memory of a busy manager stays flat: a million deletions of others' Jobs keep at most the
// cap, and the list the eviction pops from does not grow with them.
func TestGoneStaysBoundedUnderManyDeletions(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	g := NewGone("ScheduledJob", clk)
	g.limit = 1000
	for i := range 200000 {
		j := deletedJob(fmt.Sprint("j", i), "ScheduledJob", types.UID(fmt.Sprint("o", i%5000)), true)
		if i%2 == 0 {
			g.Deleting(j.UID) // half are the manager's own prunes
		}
		g.Observe(j)
	}
	// The memory of a list is its backing array (cap), popped entries included until an append
	// moves it: at most a few times the cap, not the deletions seen.
	if g.count != 1000 || len(g.ours) != 0 || cap(g.order) > 4*1000 || cap(g.oursOrder) > 1000 {
		t.Errorf("count %d, ours %d, lists' capacities %d and %d; want 1000, 0, at most 4 times the cap and at most the cap", g.count, len(g.ours), cap(g.order), cap(g.oursOrder))
	}
}
