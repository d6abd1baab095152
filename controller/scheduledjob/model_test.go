package scheduledjob

// A model-based test of the slot protocol (issue 43): seeded random walks over the real
// Reconciler.Reconcile against controller-runtime's fake client, with a fake clock, one
// Prometheus registry per process and faults injected at the API (model_world_test.go), and the
// invariants checked after every step and at the end of each walk (model_check_test.go).
//
//	go test -race -run TestModel ./controller/scheduledjob/                               # the fixed seeds
//	SCHEDULEDJOB_MODEL_WALKS=2000 go test -run TestModel -timeout 60m ./controller/scheduledjob/ # make model
//	SCHEDULEDJOB_MODEL_SEED=17 go test -v -run TestModel ./controller/scheduledjob/           # replay one walk, with its trace
//	SCHEDULEDJOB_MODEL_FAULT_ODDS=6 SCHEDULEDJOB_MODEL_WALKS=200 go test -run TestModel ...   # faults 1 in 6 passes (25)

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// modelStart is every walk's first instant: June has no DST change in the time zones used.
var modelStart = time.Date(2026, 6, 10, 9, 0, 7, 0, time.UTC)

const (
	// modelWalks and modelSteps: the fixed seed set of `go test` (8,885 passes: 1 min 57 s with
	// -race on the shared 2 cores at load 7, 10 s without; docs/development.md).
	modelWalks = 10
	modelSteps = 80
)

var (
	modelSchedules = []string{"*/1 * * * *", "*/5 * * * *", "*/15 * * * *", "0 * * * *", "30 9 * * *"}
	modelZones     = []string{"", "UTC", "Asia/Kolkata", "America/New_York"}
	modelPolicies  = []v1alpha1.ConcurrencyPolicy{v1alpha1.AllowConcurrent, v1alpha1.ForbidConcurrent, v1alpha1.ReplaceConcurrent}
)

// TestModel runs the walks: the fixed seeds, SCHEDULEDJOB_MODEL_WALKS of them, or the one
// SCHEDULEDJOB_MODEL_SEED names (with its whole trace).
func TestModel(t *testing.T) {
	seeds := make([]uint64, 0, modelWalks)
	steps := modelSteps
	if v := os.Getenv("SCHEDULEDJOB_MODEL_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("SCHEDULEDJOB_MODEL_STEPS=%q: %v", v, err)
		}
		steps = n
	}
	replay := false
	if v := os.Getenv("SCHEDULEDJOB_MODEL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SCHEDULEDJOB_MODEL_SEED=%q: %v", v, err)
		}
		seeds, replay = append(seeds, n), true
	} else {
		walks := modelWalks
		if v := os.Getenv("SCHEDULEDJOB_MODEL_WALKS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("SCHEDULEDJOB_MODEL_WALKS=%q: %v", v, err)
			}
			walks = n
		}
		for i := range walks {
			seeds = append(seeds, uint64(i+1))
		}
	}
	type class struct {
		walks int
		seed  uint64
		first violation
		trace []string
	}
	classes := map[string]*class{}
	start := time.Now()
	totalSteps, totalPasses := 0, 0
	for _, seed := range seeds {
		w := runWalk(seed, steps)
		totalSteps += w.led.step
		totalPasses += w.passes
		if replay {
			for _, line := range w.trace {
				t.Log(line)
			}
		}
		perWalk := map[string]bool{}
		for _, v := range w.led.violations {
			if replay {
				t.Errorf("step %d: %s: %s", v.step, v.class, v.msg)
			}
			if perWalk[v.class] {
				continue
			}
			perWalk[v.class] = true
			c := classes[v.class]
			if c == nil {
				c = &class{seed: seed, first: v, trace: w.traceUpTo(v.step)}
				classes[v.class] = c
			}
			c.walks++
		}
	}
	t.Logf("%d walks, %d steps, %d passes in %v", len(seeds), totalSteps, totalPasses, time.Since(start).Round(time.Millisecond))
	if replay {
		return
	}
	names := make([]string, 0, len(classes))
	for name := range classes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := classes[name]
		t.Errorf("%s in %d of %d walks; first: seed %d, step %d: %s\n  replay: SCHEDULEDJOB_MODEL_SEED=%d go test -v -run TestModel ./controller/scheduledjob/\n  the trace up to it (last lines):\n    %s",
			name, c.walks, len(seeds), c.seed, c.first.step, c.first.msg, c.seed, strings.Join(c.trace, "\n    "))
	}
}

// walk is one random walk.
type walk struct {
	*modelWorld
	trace  []string
	stepAt []int // index of the first trace line of each step
	wakeAt time.Time
	passes int
	stop   bool
	tokens int
	// settling: the end of the walk, without faults.
	settling bool
	// off: the kinds of step this walk never takes (swarm testing: a walk without, say, Job
	// finishes or time steps reaches the combinations its other steps make far more often).
	off map[int]bool
	// lateOdds: 1 in how many passes that wrote leave their follow-up pass to the next step
	// (0: never), as a busy queue does: the step's change and the follow-up are one pass.
	lateOdds int
}

// stepKinds are the upper bounds of step's draws (r < bound), one per kind of step.
var stepKinds = []int{18, 30, 33, 39, 43, 45, 47, 50, 52, 55, 58, 60, 61, 65, 68, 83, 90, 94, 96, 98, 100}

// kindOf is the kind of step a draw r in [0, 100) takes.
func kindOf(r int) int {
	for i, bound := range stepKinds {
		if r < bound {
			return i
		}
	}
	return len(stepKinds) - 1
}

// swarm draws the kinds of step a walk leaves out: none in half the walks, else each kind but
// the short time step with odds 1 in 3.
func (w *walk) swarm() {
	w.off = map[int]bool{}
	if w.rng.IntN(2) == 0 {
		return
	}
	for k := 1; k < len(stepKinds); k++ {
		if w.rng.IntN(3) == 0 {
			w.off[k] = true
		}
	}
}

// draw is a step's draw of a kind the walk takes.
func (w *walk) draw() int {
	for {
		if r := w.rng.IntN(100); !w.off[kindOf(r)] {
			return r
		}
	}
}

// runWalk runs one seeded walk of steps steps and the final check.
func runWalk(seed uint64, steps int) *walk {
	rng := rand.New(rand.NewPCG(seed, 0x5c4ed))
	clk := clocktesting.NewFakeClock(modelStart)
	w := &walk{modelWorld: &modelWorld{ctx: context.Background(), rng: rng, clock: clk}}
	w.rec = &modelRecorder{w: w.modelWorld}
	w.logf = w.log
	w.led = newLedger(modelStart)
	w.uid = types.UID(fmt.Sprintf("sj-uid-%d", seed))
	sj := &v1alpha1.ScheduledJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "report", UID: w.uid, Generation: 1, CreationTimestamp: metav1.NewTime(modelStart)},
		Spec: v1alpha1.ScheduledJobSpec{
			Schedule:          pick(rng, modelSchedules),
			ConcurrencyPolicy: pick(rng, modelPolicies),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}},
			SuccessfulJobsHistoryLimit: ptr.To(int32(rng.IntN(4))),
			FailedJobsHistoryLimit:     ptr.To(int32(rng.IntN(2))),
		},
	}
	if tz := pick(rng, modelZones); tz != "" {
		sj.Spec.TimeZone = &tz
	}
	if rng.IntN(4) == 0 {
		sj.Spec.RunHistoryLimit = ptr.To(int32(1 + rng.IntN(5)))
	}
	w.key = client.ObjectKeyFromObject(sj)
	w.api = newFakeAPI(sj)
	w.led.specWrite(w.modelWorld, "created")
	w.snapshot()
	w.newProcess()
	w.swarm()
	if rng.IntN(2) == 0 {
		w.lateOdds = 2 + rng.IntN(4)
	}
	w.log("seed %d: %s, schedule %q, timeZone %q, %s, history %d/%d, runHistoryLimit %v; steps left out %v, late follow-ups 1 in %d", seed, w.key, sj.Spec.Schedule,
		ptr.Deref(sj.Spec.TimeZone, ""), sj.Spec.ConcurrencyPolicy, *sj.Spec.SuccessfulJobsHistoryLimit, *sj.Spec.FailedJobsHistoryLimit, ptr.Deref(sj.Spec.RunHistoryLimit, 10),
		w.offString(), w.lateOdds)
	w.runPasses()
	for i := 1; i <= steps && !w.stop; i++ {
		w.led.step = i
		w.stepAt = append(w.stepAt, len(w.trace))
		w.step()
	}
	if !w.stop {
		// The end: faults stop (a quota stays: its refusals are outcomes), the caches catch up,
		// and the controller gets the passes it asks for at this instant.
		w.led.step++
		w.stepAt = append(w.stepAt, len(w.trace))
		w.deleteFails = false
		w.log("step %d %s: settle (no faults)", w.led.step, w.at())
		w.settling = true
		w.runPasses()
		w.led.final(w.modelWorld)
	}
	return w
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (w *walk) at() string { return "+" + w.clock.Now().Sub(modelStart).Round(time.Second).String() }

func (w *walk) log(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf(format, args...))
}

// traceUpTo is the end of the trace up to step (at most 40 lines).
func (w *walk) traceUpTo(step int) []string {
	end := len(w.trace)
	if step < len(w.stepAt) {
		end = w.stepAt[step] // the start of the step after it
	}
	return w.trace[max(0, end-40):end]
}

// step draws and applies one step, then lets the controller run the passes it would.
func (w *walk) step() {
	rng := w.rng
	n := w.led.step
	sj := w.sj()
	say := func(format string, args ...any) { w.log("step %d %s: "+format, append([]any{n, w.at()}, args...)...) }
	switch r := w.draw(); {
	case r < 18:
		d := time.Duration(1+rng.IntN(59)) * time.Second
		say("time +%v", d)
		w.advance(d, true)
		return
	case r < 30:
		d := time.Duration(60+rng.IntN(540)) * time.Second
		timely := rng.IntN(5) > 0
		say("time +%v (controller timely: %v)", d, timely)
		w.advance(d, timely)
		return
	case r < 33:
		d := time.Duration(600+rng.IntN(3000)) * time.Second
		timely := rng.IntN(3) > 0
		say("time +%v (controller timely: %v)", d, timely)
		w.advance(d, timely)
		return
	case r < 39:
		w.tokens++
		token := fmt.Sprintf("t%d", w.tokens)
		say("run-now %q", token)
		w.edit(func(sj *v1alpha1.ScheduledJob) { setAnnotation(sj, keys.AnnotationRunNow, token) })
	case r < 43:
		v := w.backfillValue(sj, false)
		say("backfill %q", v)
		w.edit(func(sj *v1alpha1.ScheduledJob) { setAnnotation(sj, keys.AnnotationBackfill, v) })
	case r < 45:
		v := w.backfillValue(sj, true)
		say("backfill widened to %q", v)
		w.edit(func(sj *v1alpha1.ScheduledJob) { setAnnotation(sj, keys.AnnotationBackfill, v) })
	case r < 47:
		say("backfill annotation removed")
		w.edit(func(sj *v1alpha1.ScheduledJob) { delete(sj.Annotations, keys.AnnotationBackfill) })
	case r < 50:
		s := pick(rng, modelSchedules)
		say("schedule %q", s)
		w.edit(func(sj *v1alpha1.ScheduledJob) { sj.Spec.Schedule = s })
	case r < 52:
		tz := pick(rng, modelZones)
		say("timeZone %q", tz)
		w.edit(func(sj *v1alpha1.ScheduledJob) {
			sj.Spec.TimeZone = nil
			if tz != "" {
				sj.Spec.TimeZone = &tz
			}
		})
	case r < 55:
		p := pick(rng, modelPolicies)
		say("concurrencyPolicy %s", p)
		w.edit(func(sj *v1alpha1.ScheduledJob) { sj.Spec.ConcurrencyPolicy = p })
	case r < 58:
		s := !ptr.Deref(sj.Spec.Suspend, false)
		say("suspend %v", s)
		w.edit(func(sj *v1alpha1.ScheduledJob) { sj.Spec.Suspend = &s })
	case r < 60:
		var ss *v1alpha1.StopStrategy
		switch rng.IntN(3) {
		case 0:
			ss = &v1alpha1.StopStrategy{AfterFailures: ptr.To(int32(1 + rng.IntN(3)))}
		case 1:
			ss = &v1alpha1.StopStrategy{AfterSuccesses: ptr.To(int32(2 + rng.IntN(3)))}
		}
		say("stopStrategy %s", stopString(ss))
		w.edit(func(sj *v1alpha1.ScheduledJob) { sj.Spec.StopStrategy = ss })
	case r < 61:
		var d *int64
		if rng.IntN(2) == 0 {
			d = ptr.To(int64(30 + rng.IntN(600)))
		}
		say("startingDeadlineSeconds %v", ptrString(d))
		w.edit(func(sj *v1alpha1.ScheduledJob) { sj.Spec.StartingDeadlineSeconds = d })
	case r < 65:
		w.quota = !w.quota
		if !w.quota && w.rng.IntN(2) == 0 {
			// The quota raised after a refusal, and the refused run asked for at once (a run-now)
			// rather than left to the slot's retry: a Job that is not a slot's then runs while
			// Ready says JobRejected (under Forbid, the slots after it are skipped).
			w.tokens++
			token := fmt.Sprintf("t%d", w.tokens)
			say("quota refuses Job creates: false; run-now %q", token)
			w.edit(func(sj *v1alpha1.ScheduledJob) { setAnnotation(sj, keys.AnnotationRunNow, token) })
			break
		}
		say("quota refuses Job creates: %v", w.quota)
	case r < 68:
		w.deleteFails = !w.deleteFails
		say("Job deletes refused: %v", w.deleteFails)
	case r < 83:
		js := modelUnfinished(w.jobs(), "")
		if len(js) == 0 {
			say("no Job to finish")
			break
		}
		name := pick(rng, js)
		ok := rng.IntN(3) > 0
		say("Job %s finishes (succeeded: %v)", name, ok)
		var j batchv1.Job
		if err := w.api.Get(w.ctx, client.ObjectKey{Namespace: w.key.Namespace, Name: name}, &j); err != nil {
			panic(err)
		}
		w.finish(&j, ok)
	case r < 90:
		var pruned []string
		for _, j := range w.jobs() {
			if rng.IntN(2) == 0 && w.ttl(&j) {
				pruned = append(pruned, j.Name)
			}
		}
		say("TTL deleted %v", pruned)
	case r < 94:
		say("the manager process %d dies (a new one starts)", w.proc.id)
		w.newProcess()
	case r < 96:
		say("a restore writes a status the schema admits: %s", w.restorePart())
	case r < 98:
		// An edit of the Job template alone (a new image): what a user does about a refused
		// Job, and the edit after which a refused slot is tried again.
		w.edits++
		image := fmt.Sprintf("busybox:1.%d", w.edits)
		say("jobTemplate image %s", image)
		w.edit(func(sj *v1alpha1.ScheduledJob) { sj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = image })
	default:
		say("nothing happens")
	}
	w.snapshot()
	w.runPasses()
}

// restorePart writes, as a backup restore or a user with the status subresource may, a status
// the CRD's schema admits that the steps cannot read as it is (every status field is optional):
// a running backfill without its range, or an active entry without a name.
func (w *walk) restorePart() string {
	sj := w.sj()
	what := "an active entry without a name"
	if bf := sj.Status.Backfill; bf != nil && bf.Phase == v1alpha1.BackfillRunning && w.rng.IntN(2) == 0 {
		bf.From, bf.To, bf.StartTime = nil, nil, nil
		what = "the running backfill without from, to and startTime"
	} else {
		sj.Status.Active = append(sj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: sj.Namespace})
	}
	if err := w.api.Status().Update(w.ctx, sj); err != nil {
		panic(err)
	}
	return what
}

func (w *walk) offString() []int {
	out := make([]int, 0, len(w.off))
	for k := range w.off {
		out = append(out, stepKinds[k])
	}
	sort.Ints(out)
	return out
}

func setAnnotation(sj *v1alpha1.ScheduledJob, k, v string) {
	if sj.Annotations == nil {
		sj.Annotations = map[string]string{}
	}
	sj.Annotations[k] = v
}

func stopString(ss *v1alpha1.StopStrategy) string {
	switch {
	case ss == nil:
		return "none"
	case ss.AfterFailures != nil:
		return fmt.Sprintf("afterFailures %d", *ss.AfterFailures)
	default:
		return fmt.Sprintf("afterSuccesses %d", *ss.AfterSuccesses)
	}
}

func ptrString(p *int64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatInt(*p, 10)
}

// backfillValue is a range of past minutes (from at most 3 hours back), or, half the time, a
// range status.notRun lists (the slots that got no Job: what a backfill is for); widened: the
// current request's range with an earlier from.
func (w *walk) backfillValue(sj *v1alpha1.ScheduledJob, widen bool) string {
	now := w.clock.Now().Truncate(time.Minute)
	if cur := sj.Annotations[keys.AnnotationBackfill]; widen && cur != "" {
		if a, b, ok := strings.Cut(cur, "/"); ok {
			if from, err := time.Parse(time.RFC3339, a); err == nil {
				return from.Add(-time.Duration(5+w.rng.IntN(120))*time.Minute).UTC().Format(time.RFC3339) + "/" + b
			}
		}
	}
	if nr := sj.Status.NotRun; len(nr) > 0 && w.rng.IntN(2) == 0 {
		r := pick(w.rng, nr)
		return r.First.UTC().Format(time.RFC3339) + "/" + r.Last.Add(time.Second).UTC().Format(time.RFC3339)
	}
	to := now.Add(-time.Duration(w.rng.IntN(60)) * time.Minute)
	from := to.Add(-time.Duration(1+w.rng.IntN(120)) * time.Minute)
	return from.UTC().Format(time.RFC3339) + "/" + to.UTC().Format(time.RFC3339)
}

// advance moves the clock by d. A timely controller gets the passes it asked for on the way
// (each requeue); otherwise it does nothing until the end (stopped, no leader, behind).
func (w *walk) advance(d time.Duration, timely bool) {
	target := w.clock.Now().Add(d)
	for i := 0; timely && i < 200 && !w.stop; i++ {
		if w.wakeAt.IsZero() || !w.wakeAt.Before(target) {
			break
		}
		if w.wakeAt.After(w.clock.Now()) {
			w.clock.SetTime(w.wakeAt)
		}
		w.timePassed()
		w.runPasses()
	}
	if w.clock.Now().Before(target) { // a death may have let time pass already (the Lease)
		w.clock.SetTime(target)
	}
	w.timePassed()
	w.runPasses()
}

// runPasses runs the passes the controller runs at this instant: one, then one more after each
// pass that wrote (its watch event), failed (the queue's backoff) or asked to be requeued within
// a second (a conflict, a backfill's acceptance), at most 8.
func (w *walk) runPasses() {
	for i := 0; i < 8 && !w.stop; i++ {
		res, err, wrote := w.pass()
		soon := res.RequeueAfter > 0 && res.RequeueAfter <= time.Second
		switch {
		case err != nil:
			w.wakeAt = w.clock.Now().Add(time.Second)
		case res.RequeueAfter > 0:
			w.wakeAt = w.clock.Now().Add(res.RequeueAfter)
		default:
			w.wakeAt = time.Time{}
		}
		if err == nil && !wrote && !soon {
			return
		}
		if err == nil && wrote && !soon && !w.settling && w.lateOdds > 0 && w.rng.IntN(w.lateOdds) == 0 {
			w.log("    the follow-up pass is late: the next step comes first")
			w.wakeAt = w.clock.Now()
			return
		}
		if soon {
			w.clock.SetTime(w.clock.Now().Add(res.RequeueAfter))
			w.timePassed()
		}
	}
}

// modelFaultOdds is 1 in how many passes each fault at the API hits (a process death: twice as
// often): 25, or SCHEDULEDJOB_MODEL_FAULT_ODDS, lower to find an interleaving that needs two
// faults in a row in fewer walks.
func modelFaultOdds() int {
	if n, err := strconv.Atoi(os.Getenv("SCHEDULEDJOB_MODEL_FAULT_ODDS")); err == nil && n >= 2 {
		return n
	}
	return 25
}

// drawFaults draws the faults of one pass.
func (w *walk) drawFaults() passFaults {
	if w.settling {
		return passFaults{}
	}
	rng := w.rng
	odds := modelFaultOdds()
	f := passFaults{
		stale:               len(w.snaps) > 1 && rng.IntN(4) == 0,
		createTimeoutBefore: rng.IntN(odds) == 0,
		createTimeoutAfter:  rng.IntN(odds) == 0,
		statusLostBefore:    rng.IntN(odds) == 0,
		statusLostAfter:     rng.IntN(odds) == 0,
		conflict:            rng.IntN(odds) == 0,
	}
	if rng.IntN(max(odds/2, 2)) == 0 {
		f.dieAfter = 1 + rng.IntN(3)
	}
	return f
}

// pass runs one Reconcile of the current process with the faults drawn for it.
func (w *walk) pass() (res ctrl.Result, err error, wrote bool) {
	w.passes++
	w.faults = w.drawFaults()
	faults := w.faults.String()
	p := w.proc
	if w.faults.stale || p.jobsBehind {
		w.view = w.staleView()
	} else {
		w.view = nil
		p.sjSeen, p.jobsSeen = len(w.snaps)-1, len(w.snaps)-1
	}
	activeBefore := modelUnfinished(w.snaps[len(w.snaps)-1].jobs, "")
	p.writes = 0
	nv := len(w.led.violations)
	func() {
		defer func() {
			if r := recover(); r != nil {
				w.led.violate("panic", "Reconcile panicked: %v", r)
				w.stop = true
			}
		}()
		ctx, cancel := context.WithTimeout(ctrl.LoggerInto(w.ctx, logr.Discard()), modelPassTimeout)
		defer cancel()
		res, err = p.rec.Reconcile(ctx, ctrl.Request{NamespacedName: w.key})
	}()
	w.view = nil
	w.faults = passFaults{}
	sj, js := w.sj(), w.jobs()
	w.led.afterPass(w.modelWorld, sj, js, activeBefore)
	w.snapshotOf(sj, js)
	wrote = p.writes > 0
	line := fmt.Sprintf("    pass (process %d%s) → requeue %v, err %v; status: last %s, skipped %s, active %d, runs %s, backfill %s",
		p.id, faults, res.RequeueAfter, err, tstr(sj.Status.LastScheduleTime), tstr(sj.Status.LastSkippedTime), len(sj.Status.Active), runsString(sj.Status.Runs), backfillString(sj.Status.Backfill))
	if s := sj.Status.Stop; s != nil {
		line += fmt.Sprintf(", stop %s of generation %d (spec %d)", s.Reason, s.Generation, sj.Generation)
	}
	w.log("%s; Jobs %s", line, jobsString(js))
	for _, v := range w.led.violations[nv:] {
		w.log("    !! %s: %s", v.class, v.msg)
	}
	if p.dead {
		w.log("    the process died after write %d; a new one starts", p.writes)
		before := w.snaps[len(w.snaps)-2] // the world before this pass
		w.newProcess()
		if !w.settling && w.rng.IntN(2) == 0 {
			// A successor takes over once the Lease expires: slots may come and go meanwhile
			// (chaos, leader-kill-record: the slots a dead pass passed over before its Job).
			d := time.Duration(15+w.rng.IntN(136)) * time.Second
			w.log("    no leader for %v (the Lease)", d)
			w.clock.SetTime(w.clock.Now().Add(d))
			w.timePassed()
			if w.rng.IntN(2) == 0 {
				// Its Job cache does not show the dead pass's creates yet (a new leader's).
				w.log("    the new leader's Job cache is behind: its first pass does not see the dead pass's Jobs")
				w.lagBehind(before)
			}
		}
	}
	return res, err, wrote
}

func tstr(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return "+" + t.Sub(modelStart).Round(time.Second).String()
}

func runsString(runs []v1alpha1.ScheduledJobRun) string {
	var out []string
	for _, r := range runs {
		s := tstr(&r.ScheduledTime) + ":" + string(r.Result)
		if r.Reason != "" {
			s += "/" + r.Reason
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, " ") + "]"
}

func backfillString(bf *v1alpha1.BackfillStatus) string {
	if bf == nil {
		return "-"
	}
	next := "-"
	if bf.NextSlot != nil {
		next = tstr(bf.NextSlot)
	}
	return fmt.Sprintf("%s %d/%d next %s", bf.Phase, bf.Done, bf.Slots, next)
}

func jobsString(js []batchv1.Job) string {
	var out []string
	for i := range js {
		s := js[i].Name
		if done, how, _ := jobstate.Finished(&js[i]); done {
			s += ":" + string(how)
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, " ") + "]"
}
