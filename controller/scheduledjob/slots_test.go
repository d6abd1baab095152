package scheduledjob

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// errKilled is what every call of a "dead" process returns.
var errKilled = errors.New("the process was killed")

// process is one manager process as far as the API server can tell: its writes go through until
// it has made writesBeforeDeath of them (-1: it never dies); after that every call fails, as
// if the process had been killed with SIGKILL right after its last write.
type process struct {
	mu                sync.Mutex
	writes            int
	writesBeforeDeath int
	// created records every Job a successful create made, by name (shared across processes).
	created map[string][]types.UID
}

func (p *process) dead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writesBeforeDeath >= 0 && p.writes >= p.writesBeforeDeath
}

// write lets a write through unless the process has died, and counts it.
func (p *process) write(do func() error) error {
	p.mu.Lock()
	if p.writesBeforeDeath >= 0 && p.writes >= p.writesBeforeDeath {
		p.mu.Unlock()
		return errKilled
	}
	p.writes++
	p.mu.Unlock()
	return do()
}

func (p *process) client(c client.Client) client.Client {
	read := func(do func() error) error {
		if p.dead() {
			return errKilled
		}
		return do()
	}
	return testenv.Intercept(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return read(func() error { return c.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return read(func() error { return c.List(ctx, list, opts...) })
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return p.write(func() error {
				err := c.Create(ctx, obj, opts...)
				if j, ok := obj.(*batchv1.Job); ok && err == nil {
					p.mu.Lock()
					p.created[j.Name] = append(p.created[j.Name], j.UID)
					p.mu.Unlock()
				}
				return err
			})
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return p.write(func() error { return c.Delete(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return p.write(func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return p.write(func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return p.write(func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return p.write(func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
	})
}

// settle waits until the cache shows the ScheduledJob and exactly the Jobs the API server has
// for it (deletions included), so the next pass reads the world as a restarted process would.
func (f *fixture) settle(t *testing.T, sj *v1alpha1.ScheduledJob) {
	t.Helper()
	testenv.WaitCacheCurrent(t, f.env, sj)
	want := map[string]string{}
	for _, j := range f.jobsOf(t, sj) {
		want[j.Name] = j.ResourceVersion
	}
	testenv.Eventually(t, "the cache shows the ScheduledJob's Jobs", func() bool {
		var list batchv1.JobList
		if err := f.env.Client.List(f.env.Ctx, &list, client.InNamespace(sj.Namespace), client.MatchingFields{jobs.ControllerUIDIndex: string(sj.UID)}); err != nil {
			return false
		}
		got := map[string]string{}
		for _, j := range list.Items {
			if j.DeletionTimestamp == nil {
				got[j.Name] = j.ResourceVersion
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
}

// finishActive plays a fast Job controller: every unfinished Job of sj completes now.
func (f *fixture) finishActive(t *testing.T, sj *v1alpha1.ScheduledJob) {
	t.Helper()
	for _, j := range f.jobsOf(t, sj) {
		if done, _, _ := jobstate.Finished(&j); !done {
			now := f.clock.Now()
			if err := testenv.Finish(f.env.Ctx, f.env.Client, &j, true, now, now); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pass runs one reconcile as process p, after the cache caught up.
func (f *fixture) pass(t *testing.T, sj *v1alpha1.ScheduledJob, p *process) error {
	t.Helper()
	f.settle(t, sj)
	orig := f.rec.Client
	f.rec.Client = p.client(orig)
	defer func() { f.rec.Client = orig }()
	_, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)})
	if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
		t.Fatal(err)
	}
	return err
}

// The slot protocol's promise: a slot runs at most once, whatever write the process dies after
// and whatever a restarted process then finds. Every-minute ScheduledJobs with history limits 0
// (a finished Job is pruned as soon as that is safe) and Jobs that finish at once are the worst
// case: with the slot recorded and the Job pruned by the same pass, a process killed between
// the prune and the status write left no trace of the slot, and its successor ran it again
// (5 of 600 slots ran twice under `kill -9` on a real cluster).
func TestASlotRunsAtMostOnceWhateverWriteTheProcessDiesAfter(t *testing.T) {
	f := newFixture(t, false)
	for _, policy := range []v1alpha1.ConcurrencyPolicy{v1alpha1.AllowConcurrent, v1alpha1.ForbidConcurrent, v1alpha1.ReplaceConcurrent} {
		for death := 0; death <= 8; death++ {
			t.Run(fmt.Sprintf("%s, killed after write %d", policy, death), func(t *testing.T) {
				created := map[string][]types.UID{}
				sj := everyMinute(f.env.Namespace(t, fmt.Sprintf("sj-kill-%s-%d", strings.ToLower(string(policy)), death)), "k")
				sj.Spec.ConcurrencyPolicy = policy
				sj.Spec.SuccessfulJobsHistoryLimit, sj.Spec.FailedJobsHistoryLimit = ptr.To[int32](0), ptr.To[int32](0)
				f.create(t, sj)
				healthy := func() *process { return &process{writesBeforeDeath: -1, created: created} }
				if err := f.pass(t, sj, healthy()); err != nil {
					t.Fatal(err)
				}
				f.nextMinute()
				// The first process works on the slot, its Job finishing at once, until it dies.
				dying := &process{writesBeforeDeath: death, created: created}
				for i := 0; i < 8 && !dying.dead(); i++ {
					_ = f.pass(t, sj, dying)
					f.finishActive(t, sj)
				}
				// Its successor (a restart or the standby) carries on to a fixed point.
				next := healthy()
				for range 6 {
					if err := f.pass(t, sj, next); err != nil {
						t.Fatal(err)
					}
					f.finishActive(t, sj)
				}
				slot := jobname.Slot(sj, f.clock.Now().Truncate(time.Minute))
				for name, uids := range created {
					if len(uids) > 1 {
						t.Errorf("slot Job %s was created %d times (UIDs %v)", name, len(uids), uids)
					}
				}
				if len(created[slot]) != 1 {
					t.Errorf("the slot's Job %s was created %d times, want once (created: %v)", slot, len(created[slot]), created)
				}
				if st := sj.Status; st.LastScheduleTime == nil || jobname.Slot(sj, st.LastScheduleTime.Time) != slot {
					t.Errorf("lastScheduleTime = %v, want the slot of %s", st.LastScheduleTime, slot)
				}
				if left := f.jobsOf(t, sj); len(left) != 0 {
					t.Errorf("%d Jobs left with history limits 0: %v", len(left), left[0].Name)
				}
				if len(sj.Status.Active) != 0 {
					t.Errorf("active = %v after every Job finished", sj.Status.Active)
				}
			})
		}
	}
}

// A Job template the API server refuses is said once (Ready False, one Warning), its slot is
// skipped, not retried in a loop; the next slot tries once more; a fixed template runs again.
func TestARejectedJobTemplateIsReportedOnceAndRetriedAtTheNextSlot(t *testing.T) {
	f := newFixture(t, false)
	sj := everyMinute(f.env.Namespace(t, "sj-rejected"), "rejected")
	sj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Name = "Not_A_DNS_Label"
	f.create(t, sj)
	p := &process{writesBeforeDeath: -1, created: map[string][]types.UID{}}
	creates := 0
	passAt := func() ctrl.Result {
		t.Helper()
		f.settle(t, sj)
		orig := f.rec.Client
		f.rec.Client = testenv.CountJobCreates(p.client(orig), &creates)
		defer func() { f.rec.Client = orig }()
		res, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)})
		if err != nil {
			t.Fatalf("a rejected template returned %v: it would be retried with backoff, not waited out", err)
		}
		if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
			t.Fatal(err)
		}
		return res
	}
	passAt()
	slot := f.nextMinute()
	res := passAt()
	ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != slotplan.ReasonJobRejected || !strings.Contains(ready.Message, "Not_A_DNS_Label") {
		t.Fatalf("Ready = %+v, want False/%s naming the bad field", ready, slotplan.ReasonJobRejected)
	}
	if sj.Status.LastSkippedTime == nil || !sj.Status.LastSkippedTime.Time.Equal(slot) {
		t.Errorf("lastSkippedTime = %v, want the slot %v", sj.Status.LastSkippedTime, slot)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Errorf("requeueAfter = %v, want the next slot", res.RequeueAfter)
	}
	warnings := func() int {
		n := 0
		for _, e := range f.drainEvents() {
			if strings.Contains(e, slotplan.ReasonJobRejected) {
				n++
			}
		}
		return n
	}
	if n := warnings(); n != 1 {
		t.Errorf("%d %s Events, want 1", n, slotplan.ReasonJobRejected)
	}
	// More passes in the same minute (a watch event, a resync): no new create, no new Warning.
	passAt()
	passAt()
	if creates != 1 || warnings() != 0 {
		t.Errorf("after more passes in the slot's minute: %d creates, want 1, and no new Warning", creates)
	}
	// The next slot tries once more.
	f.nextMinute()
	passAt()
	if creates != 2 {
		t.Errorf("%d creates after the next slot, want 2", creates)
	}
	// A fixed template: the refused slot, still within its (unset) deadline, runs now, and
	// the pass its Job starts records it and says Ready again.
	sj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Name = "fixed"
	if err := f.env.Client.Update(f.env.Ctx, sj); err != nil {
		t.Fatal(err)
	}
	passAt()
	passAt()
	if ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready after the fix = %+v, want True", ready)
	}
	if n := len(f.jobsOf(t, sj)); n != 1 || creates != 3 {
		t.Errorf("%d Jobs and %d creates after the fix, want 1 and 3", n, creates)
	}
}

// A new leader's informers are separate streams: its Job cache may already miss a slot's Job,
// pruned after the slot was recorded, while its ScheduledJob cache still shows the status from
// before the record. Its first pass must not take that for a slot never run.
func TestANewLeaderWithAStaleScheduledJobDoesNotRunAPrunedSlotAgain(t *testing.T) {
	f := newFixture(t, false)
	sj := everyMinute(f.env.Namespace(t, "sj-new-leader"), "leader")
	sj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
	f.create(t, sj)
	old := &process{writesBeforeDeath: -1, created: map[string][]types.UID{}}
	if err := f.pass(t, sj, old); err != nil {
		t.Fatal(err)
	}
	f.nextMinute()
	if err := f.pass(t, sj, old); err != nil { // creates the slot's Job
		t.Fatal(err)
	}
	stale := sj.DeepCopy() // the status before the record
	for range 4 {          // record, see it finish, prune
		f.finishActive(t, sj)
		if err := f.pass(t, sj, old); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.jobsOf(t, sj)); n != 0 || sj.Status.LastScheduleTime == nil {
		t.Fatalf("setup: %d Jobs left, lastScheduleTime %v; want the slot recorded and pruned", n, sj.Status.LastScheduleTime)
	}
	f.settle(t, sj)
	// The new leader: a fresh reconciler whose ScheduledJob cache lags.
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	next := &Reconciler{APIReader: f.env.Manager.GetAPIReader(), Recorder: f.evs, Clock: f.clock, Metrics: m}
	next.Client = testenv.Intercept(old.client(f.env.Client), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*v1alpha1.ScheduledJob); ok && key == client.ObjectKeyFromObject(stale) {
				stale.DeepCopyInto(got)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	res, err := next.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(old.created[jobname.Slot(sj, sj.Status.LastScheduleTime.Time)]); n != 1 {
		t.Errorf("the slot's Job was created %d times, want once", n)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("requeueAfter = %v, want a short wait for the cache", res.RequeueAfter)
	}
}

// Under Forbid the Job the previous pass created is not in status.active yet (its record is the
// next pass's): a pass whose Job cache does not show it yet (the informer lags, or a new leader)
// used to trust the cache and start a run-now Job next to it.
func TestForbidDoesNotTrustALaggingJobCacheForTheSlotJustCreated(t *testing.T) {
	f := newFixture(t, false)
	sj := everyMinute(f.env.Namespace(t, "sj-forbid-lag"), "lag")
	sj.Spec.ConcurrencyPolicy = v1alpha1.ForbidConcurrent
	f.create(t, sj)
	f.reconcile(t, sj)
	slot := f.nextMinute()
	f.reconcile(t, sj) // creates the slot's Job, leaves the record to the next pass
	if n := len(f.jobsOf(t, sj)); n != 1 {
		t.Fatalf("setup: %d Jobs after the slot, want 1", n)
	}
	sj.Annotations = map[string]string{keys.AnnotationRunNow: "now-please"}
	if err := f.env.Client.Update(f.env.Ctx, sj); err != nil {
		t.Fatal(err)
	}
	testenv.WaitCacheCurrent(t, f.env, sj)
	// The next pass's Job cache does not show the slot's Job yet.
	orig := f.rec.Client
	f.rec.Client = testenv.Intercept(orig, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if jl, ok := list.(*batchv1.JobList); ok {
				jl.Items = nil
			}
			return nil
		},
	})
	defer func() { f.rec.Client = orig }()
	if _, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)}); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
		t.Fatal(err)
	}
	if js := f.jobsOf(t, sj); len(js) != 1 {
		t.Errorf("%d Jobs run together under Forbid, want the slot's alone", len(js))
	}
	// That pass adopted the slot's Job (AlreadyExists) and left the token for the pass after it,
	// which decides it on what exists.
	f.rec.Client = orig
	f.reconcile(t, sj)
	if js := f.jobsOf(t, sj); len(js) != 1 {
		t.Errorf("%d Jobs run together under Forbid, want the slot's alone", len(js))
	}
	if sj.Status.LastScheduleTime == nil || !sj.Status.LastScheduleTime.Time.Equal(slot) || sj.Status.LastRunNowToken != "now-please" {
		t.Errorf("lastScheduleTime %v, lastRunNowToken %q; want the slot recorded and the token spent", sj.Status.LastScheduleTime, sj.Status.LastRunNowToken)
	}
	if evs := strings.Join(f.drainEvents(), "\n"); !strings.Contains(evs, slotplan.ReasonRunNowSkipped) {
		t.Errorf("events %s, want %s", evs, slotplan.ReasonRunNowSkipped)
	}
}
