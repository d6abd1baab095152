package scheduledjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

type fixture struct {
	env   *testenv.Env
	clock *clocktesting.FakeClock
	rec   *Reconciler
	evs   *events.FakeRecorder
}

// newFixture starts envtest; with wired, the reconciler also runs in the manager.
func newFixture(t *testing.T, wired bool) *fixture {
	f := &fixture{clock: clocktesting.NewFakeClock(time.Now()), evs: events.NewFakeRecorder(1000)}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f.env = testenv.Start(t, func(mgr ctrl.Manager) error {
		f.rec = &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: f.evs, Clock: f.clock, Metrics: m}
		if wired {
			return f.rec.SetupWithManager(mgr)
		}
		return nil
	})
	return f
}

func (f *fixture) reconcile(t *testing.T, sj *v1alpha1.ScheduledJob) ctrl.Result {
	t.Helper()
	testenv.WaitCacheCurrent(t, f.env, sj)
	res, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
		t.Fatal(err)
	}
	return res
}

// jobsOf lists the ScheduledJob's Jobs from the API server, by name.
func (f *fixture) jobsOf(t *testing.T, sj *v1alpha1.ScheduledJob) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := f.env.Manager.GetAPIReader().List(f.env.Ctx, &list, client.InNamespace(sj.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, sj) && j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	return out
}

// waitJobsCached waits until the cache has n Jobs in the namespace, the last changes included.
func (f *fixture) waitJobsCached(t *testing.T, sj *v1alpha1.ScheduledJob) {
	t.Helper()
	for _, j := range f.jobsOf(t, sj) {
		testenv.WaitCacheCurrent(t, f.env, &j)
	}
}

func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.evs.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func everyMinute(ns, name string) *v1alpha1.ScheduledJob {
	return &v1alpha1.ScheduledJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ScheduledJobSpec{
			Schedule: "*/1 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}},
		},
	}
}

// create creates sj and sets the fake clock to its creation time (which the API server set).
func (f *fixture) create(t *testing.T, sj *v1alpha1.ScheduledJob) {
	t.Helper()
	if err := f.env.Client.Create(f.env.Ctx, sj); err != nil {
		t.Fatal(err)
	}
	f.clock.SetTime(sj.CreationTimestamp.Time)
}

// slotPasses runs the pass at a slot and then, as the created Job's watch event would, the
// pass that records it in the status.
func (f *fixture) slotPasses(t *testing.T, sj *v1alpha1.ScheduledJob) {
	t.Helper()
	f.reconcile(t, sj)
	f.waitJobsCached(t, sj)
	f.reconcile(t, sj)
}

// nextMinute moves the clock to 2s past the next minute and returns that minute.
func (f *fixture) nextMinute() time.Time {
	slot := f.clock.Now().Truncate(time.Minute).Add(time.Minute)
	f.clock.SetTime(slot.Add(2 * time.Second))
	return slot
}

func TestScheduledJob(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx

	t.Run("an every-minute schedule creates exactly one Job per slot and reports its times", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-every"), "tick")
		f.create(t, sj)
		f.reconcile(t, sj)
		if n := len(f.jobsOf(t, sj)); n != 0 {
			t.Fatalf("%d jobs before the first slot, want 0", n)
		}
		// The pass before the slot already read the ScheduledJob from the API server, so the
		// slot's pass does not.
		var now v1alpha1.ScheduledJob
		if err := c.Get(ctx, client.ObjectKeyFromObject(sj), &now); err != nil {
			t.Fatal(err)
		}
		if !f.rec.confirmed.Confirmed(&now) {
			t.Errorf("the version the pass before its first slot left (%s) is not confirmed", now.ResourceVersion)
		}
		slot := f.nextMinute()
		f.drainEvents()
		res := f.reconcile(t, sj)
		// The pass at the slot only creates the Job; the status and the Event wait for the next pass.
		if evs := f.drainEvents(); len(evs) != 0 {
			t.Errorf("events of the slot pass = %q, want none yet", evs)
		}
		if n := len(f.jobsOf(t, sj)); n != 1 || sj.Status.LastScheduleTime != nil || res.RequeueAfter != StatusBackstop {
			t.Fatalf("after the slot pass: %d jobs, lastScheduleTime %v, requeue %v; want 1 job, no status write yet, requeue %v",
				n, sj.Status.LastScheduleTime, res.RequeueAfter, StatusBackstop)
		}
		if res.Priority == nil || *res.Priority != 0 {
			t.Errorf("backstop priority %v, want 0 (the slot's priority spent)", res.Priority)
		}
		f.waitJobsCached(t, sj)
		res = f.reconcile(t, sj) // the pass the Job's watch event starts
		f.reconcile(t, sj)       // a further pass in the same slot must not create again
		js := f.jobsOf(t, sj)
		if evs := f.drainEvents(); len(evs) != 1 || !strings.Contains(evs[0], "Normal "+slotplan.ReasonSuccessfulCreate) || !strings.Contains(evs[0], jobname.Slot(sj, slot)) {
			t.Errorf("events after the status pass = %q, want one SuccessfulCreate naming the Job", evs)
		}
		if len(js) != 1 || js[0].Name != jobname.Slot(sj, slot) {
			t.Fatalf("jobs = %d (%v), want one named for %v", len(js), js, slot)
		}
		if got := js[0].Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != slot.UTC().Format(time.RFC3339) {
			t.Errorf("scheduled-timestamp = %q, want %s", got, slot.UTC().Format(time.RFC3339))
		}
		st := sj.Status
		if st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(slot) || st.NextScheduleTime == nil || !st.NextScheduleTime.Time.Equal(slot.Add(time.Minute)) ||
			len(st.Active) != 1 || st.ObservedGeneration != sj.Generation {
			t.Errorf("status = %+v, want last %v, next %v, one active", st, slot, slot.Add(time.Minute))
		}
		if want := time.Minute - 2*time.Second + schedule.Padding; res.RequeueAfter != want {
			t.Errorf("requeue after %v, want %v", res.RequeueAfter, want)
		}
		// The pass for the next slot is queued above watch events, as its namespace's first.
		if res.Priority == nil || *res.Priority != slotPriority {
			t.Errorf("requeue priority %v, want %d", res.Priority, slotPriority)
		}
		// The Job's own status moving (its resourceVersion) is no reason to write the
		// ScheduledJob's status.
		job := js[0]
		job.Labels["touched"] = "yes"
		if err := c.Update(ctx, &job); err != nil {
			t.Fatal(err)
		}
		f.waitJobsCached(t, sj)
		rv := sj.ResourceVersion
		f.reconcile(t, sj)
		if sj.ResourceVersion != rv {
			t.Errorf("a Job update rewrote the ScheduledJob (resourceVersion %s -> %s)", rv, sj.ResourceVersion)
		}
		next := f.nextMinute()
		f.slotPasses(t, sj)
		if js := f.jobsOf(t, sj); len(js) != 2 || !sj.Status.LastScheduleTime.Time.Equal(next) {
			t.Errorf("after the second slot: %d jobs, last %v; want 2 and %v", len(js), sj.Status.LastScheduleTime, next)
		}
	})

	t.Run("a Job created before a crash is adopted: AlreadyExists plus IsControlledBy", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-crash"), "crash")
		f.create(t, sj)
		f.reconcile(t, sj)
		slot := f.nextMinute()
		// What a reconcile created just before crashing, without its status write; the cache
		// has not seen it, so only the create's AlreadyExists tells.
		pre := slotplan.NewJob(sj, jobname.Slot(sj, slot), slot, time.UTC, "")
		if err := f.env.Manager.GetClient().Create(ctx, pre); err != nil {
			t.Fatal(err)
		}
		// A pass that finds its cache behind the API server before the claim asks to come back
		// after jobs.Recheck and writes nothing (ReadyToCreate), as the controller's queue would.
		for i := 0; f.reconcile(t, sj).RequeueAfter == jobs.Recheck && i < 50; i++ {
			time.Sleep(jobs.Recheck)
		}
		if js := f.jobsOf(t, sj); len(js) != 1 || len(sj.Status.Active) != 1 || !sj.Status.LastScheduleTime.Time.Equal(slot) {
			t.Fatalf("jobs %d, status %+v; want the one Job adopted as active and the slot recorded", len(js), sj.Status)
		}
	})

	t.Run("Forbid skips a slot while a Job is active, says so in an Event and counts it", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-forbid"), "forbid")
		sj.Spec.ConcurrencyPolicy = v1alpha1.ForbidConcurrent
		f.create(t, sj)
		f.nextMinute()
		f.slotPasses(t, sj)
		f.drainEvents()
		before := testutil.ToFloat64(f.rec.Metrics.SkippedSlots.WithLabelValues(slotplan.ReasonJobAlreadyActive))
		f.waitJobsCached(t, sj)
		skipped := f.nextMinute()
		f.reconcile(t, sj)
		if n := len(f.jobsOf(t, sj)); n != 1 {
			t.Fatalf("%d jobs, want still 1", n)
		}
		if sj.Status.LastSkippedTime == nil || !sj.Status.LastSkippedTime.Time.Equal(skipped) {
			t.Errorf("lastSkippedTime = %v, want %v", sj.Status.LastSkippedTime, skipped)
		}
		evs := strings.Join(f.drainEvents(), "\n")
		if !strings.Contains(evs, "Warning "+slotplan.ReasonJobAlreadyActive) {
			t.Errorf("events = %q, want a %s Warning", evs, slotplan.ReasonJobAlreadyActive)
		}
		if d := testutil.ToFloat64(f.rec.Metrics.SkippedSlots.WithLabelValues(slotplan.ReasonJobAlreadyActive)) - before; d != 1 {
			t.Errorf("skipped-slot metric grew by %v, want 1", d)
		}
		f.reconcile(t, sj) // the same skipped slot is not reported twice
		if d := testutil.ToFloat64(f.rec.Metrics.SkippedSlots.WithLabelValues(slotplan.ReasonJobAlreadyActive)) - before; d != 1 {
			t.Errorf("after another pass the metric grew by %v, want still 1", d)
		}
	})

	t.Run("Replace deletes the active Job and starts the new one", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-replace"), "replace")
		sj.Spec.ConcurrencyPolicy = v1alpha1.ReplaceConcurrent
		f.create(t, sj)
		f.nextMinute()
		f.slotPasses(t, sj)
		slot := f.nextMinute()
		f.reconcile(t, sj)
		js := f.jobsOf(t, sj)
		if len(js) != 1 || js[0].Name != jobname.Slot(sj, slot) || len(sj.Status.Active) != 1 || sj.Status.Active[0].Name != js[0].Name {
			t.Fatalf("jobs %v, active %v; want only the new slot's Job", js, sj.Status.Active)
		}
	})

	t.Run("history limits keep the newest finished Jobs and lastSuccessfulTime is set", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-history"), "hist")
		sj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
		f.create(t, sj)
		var last time.Time
		for range 3 {
			slot := f.nextMinute()
			f.slotPasses(t, sj)
			for _, j := range f.jobsOf(t, sj) {
				if j.Name == jobname.Slot(sj, slot) {
					if err := testenv.Finish(ctx, c, &j, true, slot, slot.Add(time.Second)); err != nil {
						t.Fatal(err)
					}
				}
			}
			last = slot
			f.waitJobsCached(t, sj)
		}
		f.reconcile(t, sj)
		js := f.jobsOf(t, sj)
		if len(js) != 1 || js[0].Name != jobname.Slot(sj, last) {
			t.Fatalf("jobs %v, want only the newest", js)
		}
		if sj.Status.LastSuccessfulTime == nil || !sj.Status.LastSuccessfulTime.Time.Equal(last.Add(time.Second)) || len(sj.Status.Active) != 0 {
			t.Errorf("status = %+v, want lastSuccessfulTime %v and nothing active", sj.Status, last.Add(time.Second))
		}
	})

	t.Run("suspend stops runs, says so once and does nothing per slot", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-suspend"), "sleepy")
		sj.Spec.Suspend = ptr.To(true)
		f.create(t, sj)
		f.drainEvents()
		f.nextMinute()
		if res := f.reconcile(t, sj); res.RequeueAfter != 0 {
			t.Errorf("requeueAfter = %v while suspended, want none", res.RequeueAfter)
		}
		if n := len(f.jobsOf(t, sj)); n != 0 || sj.Status.NextScheduleTime != nil || sj.Status.LastSkippedTime != nil {
			t.Fatalf("jobs %d, status %+v; want none, no next time, no skipped slot", n, sj.Status)
		}
		if c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady); c == nil || c.Reason != slotplan.ReasonSuspended {
			t.Errorf("Ready = %+v, want reason Suspended", c)
		}
		if evs := f.drainEvents(); len(evs) != 1 || !strings.Contains(evs[0], slotplan.ReasonSuspended) {
			t.Errorf("events = %q, want one %s", evs, slotplan.ReasonSuspended)
		}
		// Three more slots (a Job's event or a resync can still bring a pass): no write, no Event.
		rv := sj.ResourceVersion
		for range 3 {
			f.nextMinute()
			f.reconcile(t, sj)
		}
		if sj.ResourceVersion != rv {
			t.Errorf("the status was written while suspended (resourceVersion %s -> %s): %+v", rv, sj.ResourceVersion, sj.Status)
		}
		if evs := f.drainEvents(); len(evs) != 0 {
			t.Errorf("events at later slots while suspended: %q", evs)
		}
	})

	t.Run("run-now creates one Job per token, and the same token again does nothing", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-runnow"), "manual")
		sj.Spec.Schedule = "0 0 1 1 *"
		f.create(t, sj)
		f.reconcile(t, sj)
		sj.Annotations = map[string]string{keys.AnnotationRunNow: "deploy-42"}
		if err := c.Update(ctx, sj); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, sj)
		f.reconcile(t, sj)
		js := f.jobsOf(t, sj)
		if len(js) != 1 || js[0].Name != jobname.RunNow(sj, "deploy-42") || js[0].Annotations[keys.AnnotationRunNowToken] != "deploy-42" {
			t.Fatalf("jobs %v, want one run-now Job for the token", js)
		}
		if sj.Status.LastRunNowToken != "deploy-42" || sj.Status.LastScheduleTime != nil {
			t.Errorf("status %+v, want the token recorded and no scheduled slot", sj.Status)
		}
	})

	t.Run("an unknown time zone is a condition and a Warning, with no requeue", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-badtz"), "badtz")
		sj.Spec.TimeZone = ptr.To("Mars/Olympus")
		f.create(t, sj)
		f.drainEvents()
		res := f.reconcile(t, sj)
		c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != slotplan.ReasonUnknownTimeZone || res.RequeueAfter != 0 {
			t.Fatalf("Ready = %+v, requeue %v; want False/UnknownTimeZone and no requeue", c, res.RequeueAfter)
		}
		if evs := strings.Join(f.drainEvents(), "\n"); !strings.Contains(evs, "Warning "+slotplan.ReasonUnknownTimeZone) {
			t.Errorf("events = %q, want an UnknownTimeZone Warning", evs)
		}
	})

	t.Run("the schema defaults fields and rejects bad input with clear messages", func(t *testing.T) {
		ns := f.env.Namespace(t, "sj-schema")
		sj := everyMinute(ns, "defaults")
		if err := c.Create(ctx, sj); err != nil {
			t.Fatal(err)
		}
		if sj.Spec.ConcurrencyPolicy != v1alpha1.AllowConcurrent || sj.Spec.Suspend == nil || *sj.Spec.Suspend ||
			ptr.Deref(sj.Spec.SuccessfulJobsHistoryLimit, 0) != 3 || ptr.Deref(sj.Spec.FailedJobsHistoryLimit, 0) != 1 {
			t.Errorf("defaults = %+v, want Allow, suspend false, limits 3/1", sj.Spec)
		}
		for _, ok := range []string{"@hourly", "@every 90m", "0 9 * * MON-FRI", "*/15 0-6 1,15 * ?"} {
			s := everyMinute(ns, "ok")
			s.GenerateName, s.Name = "ok-", ""
			s.Spec.Schedule = ok
			if err := c.Create(ctx, s); err != nil {
				t.Errorf("schedule %q rejected: %v", ok, err)
			}
		}
		cases := []struct {
			name string
			mod  func(*v1alpha1.ScheduledJob)
			want string
		}{
			{"a name longer than 52", func(s *v1alpha1.ScheduledJob) { s.Name = strings.Repeat("n", 53) }, "at most 52 characters"},
			{"a zero starting deadline", func(s *v1alpha1.ScheduledJob) { s.Spec.StartingDeadlineSeconds = ptr.To[int64](0) }, "0 means no run could ever start"},
			{"six fields", func(s *v1alpha1.ScheduledJob) { s.Spec.Schedule = "0 0 9 * * *" }, "schedule must be five cron fields"},
			{"words", func(s *v1alpha1.ScheduledJob) { s.Spec.Schedule = "every day" }, "schedule must be five cron fields"},
			{"a TZ prefix", func(s *v1alpha1.ScheduledJob) { s.Spec.Schedule = "TZ=UTC 0 * * * *" }, "not TZ="},
			{"an unknown concurrency policy", func(s *v1alpha1.ScheduledJob) { s.Spec.ConcurrencyPolicy = "Sometimes" }, "Unsupported value"},
			{"a negative history limit", func(s *v1alpha1.ScheduledJob) { s.Spec.FailedJobsHistoryLimit = ptr.To[int32](-1) }, "failedJobsHistoryLimit"},
		}
		for _, tc := range cases {
			s := everyMinute(ns, "bad")
			tc.mod(s)
			err := c.Create(ctx, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
			}
		}
	})
}

func TestScheduledJobControllerRunsInTheManager(t *testing.T) {
	f := newFixture(t, true)
	c, ctx := f.env.Client, f.env.Ctx
	sj := everyMinute(f.env.Namespace(t, "sj-manager"), "wired")
	sj.Spec.Schedule = "0 0 1 1 *"
	sj.Annotations = map[string]string{keys.AnnotationRunNow: "now"}
	if err := c.Create(ctx, sj); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the controller creates the run-now Job and reports it active", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(sj), sj)
		return len(sj.Status.Active) == 1 && len(f.jobsOf(t, sj)) == 1 && sj.Status.NextScheduleTime != nil
	})
}

func TestScheduledJobSlotStatusFollowsTheJobEvent(t *testing.T) {
	f := newFixture(t, true)
	c, ctx := f.env.Client, f.env.Ctx
	// The clock is two minutes ahead, so the first pass finds a due slot and creates its Job
	// without writing the status; only the Job's watch event can bring the object back before
	// the backstop requeue.
	f.clock.SetTime(time.Now().Add(2 * time.Minute))
	sj := everyMinute(f.env.Namespace(t, "sj-follow"), "follow")
	start := time.Now()
	if err := c.Create(ctx, sj); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the slot's Job is created and recorded as active with its slot", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(sj), sj)
		return sj.Status.LastScheduleTime != nil && len(sj.Status.Active) == 1 && len(f.jobsOf(t, sj)) == 1
	})
	if took := time.Since(start); took >= StatusBackstop/2 {
		t.Errorf("status recorded after %v: the backstop, not the Job's event, brought the object back", took)
	}
	if name := jobname.Slot(sj, sj.Status.LastScheduleTime.Time); sj.Status.Active[0].Name != name {
		t.Errorf("active = %v, want the Job %s of lastScheduleTime", sj.Status.Active, name)
	}
}

func TestStatusWriteWaitsForCreatesInFlight(t *testing.T) {
	f := newFixture(t, false)
	sj := everyMinute(f.env.Namespace(t, "sj-gate"), "gate")
	f.create(t, sj)
	testenv.WaitCacheCurrent(t, f.env, sj)
	// Another ScheduledJob's create is in flight: this pass (a first status write) must hold back.
	f.rec.writes().Begin()
	done := make(chan error, 1)
	go func() {
		_, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the pass finished (err %v) while a create was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	live := &v1alpha1.ScheduledJob{}
	if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(sj), live); err != nil {
		t.Fatal(err)
	}
	if live.Status.ObservedGeneration != 0 {
		t.Fatalf("status written while a create was in flight: %+v", live.Status)
	}
	f.rec.writes().End()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(sj), live); err != nil {
		t.Fatal(err)
	}
	if live.Status.ObservedGeneration != live.Generation {
		t.Errorf("status after the create ended = %+v, want it written", live.Status)
	}
}

// A pass that reads the ScheduledJob from a cache that does not yet show the status write of the
// pass before it finds the slot's Job unrecorded. It must neither record nor announce the slot a
// second time (seen in the e2e suite: two SuccessfulCreate Events for one Job): its status write
// conflicts, and it drops its Events.
func TestStalePassDoesNotAnnounceTheSlotTwice(t *testing.T) {
	f := newFixture(t, false)
	sj := everyMinute(f.env.Namespace(t, "sj-stale"), "stale")
	f.create(t, sj)
	f.reconcile(t, sj) // first status (observedGeneration), no slot due yet
	f.nextMinute()
	f.reconcile(t, sj) // the slot's pass: creates the Job, leaves the status to the next pass
	stale := sj.DeepCopy()
	f.waitJobsCached(t, sj)
	f.reconcile(t, sj) // records the slot and announces the Job
	if sj.Status.LastScheduleTime == nil {
		t.Fatalf("the slot was not recorded: %+v", sj.Status)
	}
	count := func(evs []string) int {
		n := 0
		for _, e := range evs {
			if strings.Contains(e, slotplan.ReasonSuccessfulCreate) {
				n++
			}
		}
		return n
	}
	if n := count(f.drainEvents()); n != 1 {
		t.Fatalf("%d SuccessfulCreate Events after the slot, want 1", n)
	}
	orig := f.rec.Client
	f.rec.Client = testenv.Intercept(orig, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*v1alpha1.ScheduledJob); ok && key == client.ObjectKeyFromObject(stale) {
				stale.DeepCopyInto(got)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	defer func() { f.rec.Client = orig }()
	if _, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)}); err != nil {
		t.Fatalf("a pass on a stale read returned %v, want a quiet requeue", err)
	}
	if n := count(f.drainEvents()); n != 0 {
		t.Errorf("the stale pass announced the slot again (%d SuccessfulCreate Events)", n)
	}
	if jobs := f.jobsOf(t, sj); len(jobs) != 1 {
		t.Errorf("%d Jobs, want the slot's one", len(jobs))
	}
}

// Under Forbid a slot that falls while a Job is active is reported skipped. The active Job's end
// wakes the next pass, which may read the ScheduledJob from a cache that does not yet show that
// skip: it must not run the slot it reported skipped (`make chaos`, leader-frozen: the slot was
// in the run history twice, Skipped and Failed). This process's own status write is not
// confirmed cache state until the cache shows it.
func TestAPassOnAReadOlderThanItsOwnSkipDoesNotRunTheSkippedSlot(t *testing.T) {
	f := newFixture(t, false)
	sj := everyMinute(f.env.Namespace(t, "sj-stale-skip"), "forbid")
	sj.Spec.ConcurrencyPolicy = v1alpha1.ForbidConcurrent
	f.create(t, sj)
	f.reconcile(t, sj) // first status, confirms the object
	f.nextMinute()
	f.slotPasses(t, sj) // slot 1: its Job, recorded
	if n := len(f.jobsOf(t, sj)); n != 1 {
		t.Fatalf("%d Jobs after the first slot, want 1", n)
	}
	beforeSkip := sj.DeepCopy()
	f.nextMinute()
	f.reconcile(t, sj) // slot 2: the Job of slot 1 is active, so slot 2 is skipped
	if sj.Status.LastSkippedTime == nil {
		t.Fatalf("slot 2 was not reported skipped: %+v", sj.Status)
	}
	f.finishActive(t, sj) // the Job of slot 1 ends: its event wakes a pass
	f.waitJobsCached(t, sj)

	orig := f.rec.Client
	f.rec.Client = testenv.Intercept(orig, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*v1alpha1.ScheduledJob); ok && key == client.ObjectKeyFromObject(beforeSkip) {
				beforeSkip.DeepCopyInto(got) // the cache, not yet showing the skip
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	defer func() { f.rec.Client = orig }()
	if _, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)}); err != nil {
		t.Fatalf("a pass on a stale read returned %v, want a quiet requeue", err)
	}
	if n := len(f.jobsOf(t, sj)); n != 1 {
		t.Errorf("%d Jobs: the slot reported skipped ran after all", n)
	}
}
