package scheduledjob

// The world of the model-based test (model_test.go): an API server (controller-runtime's fake
// client), the faults it and the network inject, the manager process that runs the real
// Reconciler (its cache possibly behind, its death after any write), and the Jobs' own life
// (finishing, pruned by a TTL). Everything the Reconciler does goes through the interceptors
// here, so the ledger (model_check_test.go) sees every Job create the API server accepted.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// newModelReconciler builds the Reconciler of one manager process: fresh in-memory state (a
// process that died is replaced by a new one), its client, API reader, Event recorder, clock and
// metrics. It sets exported fields only; if the Reconciler gains in-memory state that a test must
// set, this is the one place to adapt. jobs.Gone (the memory of Jobs deleted by their TTL) is
// left nil: the model's TTL prunes only Jobs whose claim a written status records (modelWorld.ttl).
func newModelReconciler(c client.Client, api client.Reader, rec *modelRecorder, clk *clocktesting.FakeClock, m *Metrics) *Reconciler {
	return &Reconciler{Client: c, APIReader: api, Recorder: rec, Clock: clk, Metrics: m}
}

// modelScheme knows the built-in kinds and ours.
func modelScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

var (
	modelSchemeOnce = modelScheme()
	// modelMapper is shared by every fake client: building one per client (the default) costs
	// more than a pass.
	modelMapper = func() meta.RESTMapper {
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(v1alpha1.GroupVersion.WithKind("ScheduledJob"), meta.RESTScopeNamespace)
		m.Add(batchv1.SchemeGroupVersion.WithKind("Job"), meta.RESTScopeNamespace)
		return m
	}()
)

// byControllerUID is the Job index the manager registers (jobs.IndexByControllerUID).
func byControllerUID(obj client.Object) []string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// newFakeAPI is an API server holding objs. Its object tracker keeps no managed fields: the
// default one builds a REST mapper on every write, which costs more than a pass.
func newFakeAPI(objs ...client.Object) client.WithWatch {
	tracker := clienttesting.NewObjectTracker(modelSchemeOnce, serializer.NewCodecFactory(modelSchemeOnce).UniversalDecoder())
	return fake.NewClientBuilder().WithScheme(modelSchemeOnce).WithRESTMapper(modelMapper).WithObjectTracker(tracker).
		WithStatusSubresource(&v1alpha1.ScheduledJob{}, &batchv1.Job{}).
		WithIndex(&batchv1.Job{}, jobs.ControllerUIDIndex, byControllerUID).
		WithObjects(objs...).Build()
}

// errModelKilled is what every call of a process that died returns.
var errModelKilled = errors.New("model: the process was killed")

// passFaults are the faults of one pass (one Reconcile call), drawn before it.
type passFaults struct {
	// stale: the Reconciler's Client reads the ScheduledJob and the Jobs from older snapshots
	// of the same instant (its informers behind); APIReader stays current.
	stale bool
	// createTimeoutBefore / After: the next Job create fails with a timeout before / after the
	// API server stored the Job.
	createTimeoutBefore, createTimeoutAfter bool
	// statusLostBefore / After: the status write fails with a timeout before / after it was
	// applied.
	statusLostBefore, statusLostAfter bool
	// conflict: a user's edit lands just before the status write, which then conflicts.
	conflict bool
	// dieAfter: the process dies right after its n-th write of this pass (0: it does not).
	dieAfter int
}

func (f passFaults) String() string {
	s := ""
	add := func(on bool, name string) {
		if on {
			s += " " + name
		}
	}
	add(f.stale, "stale-cache")
	add(f.createTimeoutBefore, "create-timeout-before")
	add(f.createTimeoutAfter, "create-timeout-after")
	add(f.statusLostBefore, "status-lost-before")
	add(f.statusLostAfter, "status-lost-after")
	add(f.conflict, "conflicting-edit")
	if f.dieAfter > 0 {
		s += fmt.Sprintf(" die-after-write-%d", f.dieAfter)
	}
	return s
}

// modelSnapshot is the world as an informer may still show it.
type modelSnapshot struct {
	sj   *v1alpha1.ScheduledJob
	jobs []batchv1.Job
}

// modelProcess is one manager process: its Reconciler and what its caches have shown it.
type modelProcess struct {
	id     int
	rec    *Reconciler
	dead   bool
	writes int // this pass
	// sjSeen, jobsSeen: the newest snapshots (indexes into modelWorld.snaps) its caches
	// showed: a cache never goes back.
	sjSeen, jobsSeen int
	// jobsBehind: its first pass reads the Jobs as the snapshot jobsSeen has them (a new
	// leader's Job cache not yet showing its predecessor's last creates: lagBehind).
	jobsBehind bool
}

// modelWorld is one walk's world.
type modelWorld struct {
	ctx    context.Context
	rng    *rand.Rand
	clock  *clocktesting.FakeClock
	api    client.WithWatch
	key    client.ObjectKey
	uid    types.UID
	uids   int
	proc   *modelProcess
	procs  int
	faults passFaults
	// view is the stale client of this pass (nil: current).
	view client.Client
	// snaps are the states seen at the current instant, oldest first (a cache lags by
	// milliseconds: never across a time step).
	snaps []modelSnapshot
	// quota: Job creates are refused with 403 Forbidden (a ResourceQuota); deleteFails: Job
	// deletes are refused (a webhook).
	quota, deleteFails bool
	rec                *modelRecorder
	led                *ledger
	edits              int
	// logf adds a line to the walk's trace.
	logf func(format string, args ...any)
	// readPolicy and readBackfill are the concurrencyPolicy and status.backfill of the
	// ScheduledJob the current pass read.
	readPolicy   v1alpha1.ConcurrencyPolicy
	readBackfill *v1alpha1.BackfillStatus
}

// modelRecorder keeps the Events the Reconciler sends.
type modelRecorder struct{ w *modelWorld }

func (r *modelRecorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...interface{}) {
	msg := fmt.Sprintf(note, args...)
	r.w.logf("      event %s %s: %.200s", eventtype, reason, msg)
	r.w.led.event(r.w, eventtype, reason, msg)
}

// newProcess starts a manager process with fresh memory; its caches start current.
func (w *modelWorld) newProcess() {
	w.procs++
	p := &modelProcess{id: w.procs, sjSeen: len(w.snaps) - 1, jobsSeen: len(w.snaps) - 1}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	p.rec = newModelReconciler(interceptor.NewClient(w.api, w.clientFuncs(p)), interceptor.NewClient(w.api, w.readerFuncs(p)), w.rec, w.clock, m)
	w.proc = p
}

// snapshot records the world as it is now, for caches that lag.
func (w *modelWorld) snapshot() {
	w.snapshotOf(w.sj(), w.jobs())
}

// snapshotOf records the world as sj and js, just read from the API server.
func (w *modelWorld) snapshotOf(sj *v1alpha1.ScheduledJob, js []batchv1.Job) {
	w.snaps = append(w.snaps, modelSnapshot{sj: sj, jobs: js})
	if len(w.snaps) > 8 {
		w.snaps = w.snaps[len(w.snaps)-8:]
		for _, p := range []*modelProcess{w.proc} {
			p.sjSeen, p.jobsSeen = max(p.sjSeen-1, 0), max(p.jobsSeen-1, 0)
		}
	}
}

// timePassed drops the snapshots of earlier instants: caches are current after a time step.
func (w *modelWorld) timePassed() {
	w.snaps = w.snaps[:0]
	w.snapshot()
	w.proc.sjSeen, w.proc.jobsSeen = 0, 0
}

// lagBehind starts the current process's Job cache behind, after a pause: it shows the Jobs of
// before (the world before the pass in which the predecessor died), the ScheduledJob as it is
// now. The Job cache lags by the time a watch event takes: milliseconds, seconds at a busy slot
// or on a new leader (docs/scheduling.md), so a successor that starts after the Lease may not
// show the Job its predecessor created just before it died. Its first pass reads that; the cache
// catches up after it.
func (w *modelWorld) lagBehind(before modelSnapshot) {
	cur := w.snaps[len(w.snaps)-1]
	w.snaps = []modelSnapshot{{sj: cur.sj, jobs: before.jobs}, cur}
	w.proc.sjSeen, w.proc.jobsSeen, w.proc.jobsBehind = 1, 0, true
}

// staleView builds the client a lagging cache serves: the ScheduledJob and the Jobs each from
// a snapshot no older than what this process's caches showed before.
func (w *modelWorld) staleView() client.Client {
	last := len(w.snaps) - 1
	p := w.proc
	p.sjSeen += w.rng.IntN(last - p.sjSeen + 1)
	if p.jobsBehind {
		p.jobsBehind = false
	} else {
		p.jobsSeen += w.rng.IntN(last - p.jobsSeen + 1)
	}
	objs := []client.Object{w.snaps[p.sjSeen].sj.DeepCopy()}
	for _, j := range w.snaps[p.jobsSeen].jobs {
		objs = append(objs, j.DeepCopy())
	}
	return newFakeAPI(objs...)
}

// write counts a write of the current process that reached the API server; the process dies
// right after its dieAfter-th.
func (w *modelWorld) wrote(p *modelProcess) {
	p.writes++
	if w.faults.dieAfter > 0 && p.writes >= w.faults.dieAfter {
		p.dead = true
	}
}

var jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}

func timeoutErr() error {
	return apierrors.NewTimeoutError("the request timed out (model)", 1)
}

// clientFuncs are the Reconciler's client: reads from its cache (current, or behind), writes to
// the API server with the faults of the pass.
func (w *modelWorld) clientFuncs(p *modelProcess) interceptor.Funcs {
	src := func(c client.WithWatch) client.Reader {
		if w.view != nil {
			return w.view
		}
		return c
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if p.dead {
				return errModelKilled
			}
			err := src(c).Get(ctx, key, obj, opts...)
			if sj, ok := obj.(*v1alpha1.ScheduledJob); ok && err == nil {
				w.readPolicy, w.readBackfill = sj.Spec.ConcurrencyPolicy, sj.Status.Backfill.DeepCopy()
			}
			return err
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if p.dead {
				return errModelKilled
			}
			if err := src(c).List(ctx, list, opts...); err != nil {
				return err
			}
			if jl, ok := list.(*batchv1.JobList); ok {
				// The manager's Job cache keeps Jobs trimmed (jobs.CacheKind).
				for i := range jl.Items {
					t, _ := jobs.Trim(&jl.Items[i])
					jl.Items[i] = *t.(*batchv1.Job)
				}
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if p.dead {
				return errModelKilled
			}
			j, isJob := obj.(*batchv1.Job)
			if !isJob {
				return fmt.Errorf("model: unexpected create of %T", obj)
			}
			switch {
			case w.quota:
				w.logf("      create %s: 403 (quota)", j.Name)
				err := apierrors.NewForbidden(jobsResource, j.Name, errors.New("exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=3, limited: count/jobs.batch=3"))
				w.led.refused(w, j)
				return err
			case w.faults.createTimeoutBefore:
				w.faults.createTimeoutBefore = false
				w.logf("      create %s: timeout before it was stored", j.Name)
				return timeoutErr()
			}
			w.uids++
			obj.SetUID(types.UID(fmt.Sprintf("job-uid-%d", w.uids)))
			obj.SetCreationTimestamp(metav1.NewTime(w.clock.Now()))
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			w.start(c, j)
			w.led.created(w, j)
			w.wrote(p)
			if w.faults.createTimeoutAfter {
				w.faults.createTimeoutAfter = false
				w.logf("      create %s: stored, then a timeout", j.Name)
				return timeoutErr()
			}
			w.logf("      create %s", j.Name)
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if p.dead {
				return errModelKilled
			}
			if w.deleteFails {
				w.logf("      delete %s: refused (webhook)", obj.GetName())
				return apierrors.NewForbidden(jobsResource, obj.GetName(), errors.New(`admission webhook "deny-job-deletes.example.com" denied the request`))
			}
			o := client.DeleteOptions{}
			o.ApplyOptions(opts)
			if o.Preconditions != nil && o.Preconditions.UID != nil {
				var cur batchv1.Job
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &cur); err == nil && cur.UID != *o.Preconditions.UID {
					return apierrors.NewConflict(jobsResource, obj.GetName(), errors.New("UID precondition failed"))
				}
			}
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			w.logf("      delete %s", obj.GetName())
			w.wrote(p)
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return fmt.Errorf("model: unexpected update of %T", obj)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if p.dead {
				return errModelKilled
			}
			sj, ok := obj.(*v1alpha1.ScheduledJob)
			if !ok {
				return fmt.Errorf("model: unexpected patch of %T", obj)
			}
			var before v1alpha1.ScheduledJob
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &before); err != nil {
				return err
			}
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			w.bumpGeneration(&before, sj)
			w.logf("      spec patched: suspend %v", ptr.Deref(sj.Spec.Suspend, false))
			w.led.specWrite(w, "the controller patched the spec")
			w.wrote(p)
			return nil
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return fmt.Errorf("model: unexpected %s update of %T", sub, obj)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if p.dead {
				return errModelKilled
			}
			if w.faults.conflict {
				w.faults.conflict = false
				w.touch()
				w.logf("      (a concurrent edit of the ScheduledJob)")
			}
			if w.faults.statusLostBefore {
				w.faults.statusLostBefore = false
				w.logf("      status write: timeout before it was applied")
				return timeoutErr()
			}
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				w.logf("      status write: %v", err)
				return err
			}
			w.wrote(p)
			if w.faults.statusLostAfter {
				w.faults.statusLostAfter = false
				w.logf("      status write: applied, then a timeout")
				return timeoutErr()
			}
			w.logf("      status write")
			return nil
		},
	}
}

// readerFuncs are the Reconciler's API reader: current, but dead with its process.
func (w *modelWorld) readerFuncs(p *modelProcess) interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if p.dead {
				return errModelKilled
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if p.dead {
				return errModelKilled
			}
			return c.List(ctx, list, opts...)
		},
	}
}

// bumpGeneration plays the API server's metadata.generation: +1 when the spec changed (the fake
// client keeps whatever it is sent); obj is left as the API server returns it.
func (w *modelWorld) bumpGeneration(before, after *v1alpha1.ScheduledJob) {
	if reflect.DeepEqual(before.Spec, after.Spec) {
		return
	}
	var cur v1alpha1.ScheduledJob
	if err := w.api.Get(w.ctx, w.key, &cur); err != nil {
		panic(err)
	}
	cur.Generation = before.Generation + 1
	if err := w.api.Update(w.ctx, &cur); err != nil {
		panic(err)
	}
	after.Generation, after.ResourceVersion = cur.Generation, cur.ResourceVersion
}

// sj reads the ScheduledJob as the API server has it.
func (w *modelWorld) sj() *v1alpha1.ScheduledJob {
	var sj v1alpha1.ScheduledJob
	if err := w.api.Get(w.ctx, w.key, &sj); err != nil {
		panic(err)
	}
	return &sj
}

// jobs lists the ScheduledJob's Jobs as the API server has them, by name.
func (w *modelWorld) jobs() []batchv1.Job {
	var list batchv1.JobList
	if err := w.api.List(w.ctx, &list); err != nil {
		panic(err)
	}
	return list.Items
}

// edit changes the ScheduledJob as a user (kubectl, a GitOps tool) would.
func (w *modelWorld) edit(change func(sj *v1alpha1.ScheduledJob)) {
	sj := w.sj()
	before := sj.DeepCopy()
	change(sj)
	if !reflect.DeepEqual(before.Spec, sj.Spec) {
		sj.Generation++
	}
	if err := w.api.Update(w.ctx, sj); err != nil {
		panic(err)
	}
	w.led.specWrite(w, "a user edited the ScheduledJob")
}

// touch is a concurrent write of someone else (a label added by a tool) that moves the
// resourceVersion and nothing the controller reads.
func (w *modelWorld) touch() {
	w.edits++
	w.edit(func(sj *v1alpha1.ScheduledJob) {
		if sj.Labels == nil {
			sj.Labels = map[string]string{}
		}
		sj.Labels["model.test/touched"] = fmt.Sprint(w.edits)
	})
}

// start plays the Job controller, which starts a Job at once: status.startTime, by which the stop
// strategy counts a run (a run still running at a resume never counts). j, the create's answer,
// is left without it, as the API server answers.
func (w *modelWorld) start(c client.Client, j *batchv1.Job) {
	started := j.DeepCopy()
	started.Status.StartTime = ptr.To(started.CreationTimestamp)
	if err := c.Status().Update(w.ctx, started); err != nil {
		panic(err)
	}
}

// finish ends the Job as the Job controller would.
func (w *modelWorld) finish(j *batchv1.Job, succeeded bool) {
	now := w.clock.Now()
	s, e := metav1.NewTime(j.CreationTimestamp.Time), metav1.NewTime(now)
	j.Status.StartTime = &s
	cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: "True", Reason: reason, LastProbeTime: e, LastTransitionTime: e}
	}
	if succeeded {
		j.Status.CompletionTime, j.Status.Succeeded = &e, 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"), cond(batchv1.JobComplete, "CompletionsReached")}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"), cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	}
	if err := w.api.Status().Update(w.ctx, j); err != nil {
		panic(err)
	}
	w.led.finished(j.Name, succeeded)
}

// ttl deletes a finished Job as its ttlSecondsAfterFinished would. Reading chosen: only a Job
// whose claim the written status records (its slot at or before lastScheduleTime, its run-now
// token recorded, its backfill cursor past it): a Job deleted before that while no replica
// watched cannot be told from a slot never run (slots.go says so, as upstream), and jobs.Gone,
// which covers a watching replica, is not modelled.
func (w *modelWorld) ttl(j *batchv1.Job) bool {
	if done, _, _ := jobstate.Finished(j); !done || !w.led.claimRecorded(w, j) {
		return false
	}
	if err := w.api.Delete(w.ctx, j); err != nil && !apierrors.IsNotFound(err) {
		panic(err)
	}
	return true
}

// modelPassTimeout bounds one Reconcile (the fake client never blocks; a hang is a bug).
const modelPassTimeout = 10 * time.Second
