package at

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

const testImage = "harbor.example.com/library/busybox:1.37"

// fixture is one envtest API server shared by the subtests, a fake clock, and a reconciler
// the tests call directly (so time moves only when the test says so).
type fixture struct {
	env   *testenv.Env
	clock *clocktesting.FakeClock
	rec   *Reconciler
	evs   *events.FakeRecorder
}

// newFixture starts envtest; with wired, the reconciler also runs in the manager (watches,
// requeues); without, only the test calls it, so nothing happens behind the test's back.
func newFixture(t *testing.T, wired bool) *fixture {
	f := &fixture{clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), evs: events.NewFakeRecorder(1000)}
	f.env = testenv.Start(t, func(mgr ctrl.Manager) error {
		f.rec = &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: f.evs, Clock: f.clock, JobImage: testImage}
		if wired {
			return f.rec.SetupWithManager(mgr)
		}
		return nil
	})
	return f
}

func (f *fixture) reconcile(t *testing.T, at *v1alpha1.At) ctrl.Result {
	t.Helper()
	testenv.WaitCacheCurrent(t, f.env, at)
	res, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(at)})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if err := f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(at), at); err != nil {
		t.Fatal(err)
	}
	return res
}

// jobsOf lists the At's Jobs from the API server (not the cache).
func (f *fixture) jobsOf(t *testing.T, at *v1alpha1.At) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := f.env.Manager.GetAPIReader().List(f.env.Ctx, &list, client.InNamespace(at.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, at) {
			out = append(out, j)
		}
	}
	return out
}

// waitCached waits until the cache's index shows the Job in the given state.
func (f *fixture) waitCached(t *testing.T, at *v1alpha1.At, check func(*batchv1.Job) bool) {
	testenv.Eventually(t, "the cache sees the Job", func() bool {
		var list batchv1.JobList
		_ = f.env.Client.List(f.env.Ctx, &list, client.InNamespace(at.Namespace), client.MatchingFields{jobs.ControllerUIDIndex: string(at.UID)})
		return len(list.Items) == 1 && check(&list.Items[0])
	})
}

func commandAt(ns, name string, when time.Time) *v1alpha1.At {
	return &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(when), Command: `echo "hello, world" | tr a-z A-Z`},
	}
}

func TestAt(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx

	t.Run("a command waits for its time, runs once via /bin/sh -c in the job image, and succeeds", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-succeeds")
		when := f.clock.Now().Add(90 * time.Second).Truncate(time.Second)
		at := commandAt(ns, "hello", when)
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		res := f.reconcile(t, at)
		if at.Status.Phase != v1alpha1.AtPending || len(f.jobsOf(t, at)) != 0 {
			t.Fatalf("before its time: phase %q, %d jobs; want Pending and none", at.Status.Phase, len(f.jobsOf(t, at)))
		}
		if want := 90*time.Second + schedule.Padding; res.RequeueAfter != want {
			t.Errorf("requeue after %v, want exactly %v (the schedule)", res.RequeueAfter, want)
		}

		f.clock.SetTime(when)
		f.reconcile(t, at)
		js := f.jobsOf(t, at)
		if len(js) != 1 {
			t.Fatalf("at its time: %d jobs, want 1", len(js))
		}
		job := js[0]
		if want := jobname.Slot(at, when); job.Name != want || at.Status.JobName != want {
			t.Errorf("job name %q, status.jobName %q, want %q", job.Name, at.Status.JobName, want)
		}
		pod := job.Spec.Template.Spec
		if len(pod.Containers) != 1 || pod.Containers[0].Image != testImage ||
			strings.Join(pod.Containers[0].Command, "|") != `/bin/sh|-c|echo "hello, world" | tr a-z A-Z` {
			t.Errorf("container = %+v, want the command under /bin/sh -c in %s", pod.Containers, testImage)
		}
		if pod.RestartPolicy != corev1.RestartPolicyNever || ptr.Deref(job.Spec.BackoffLimit, -1) != 0 {
			t.Errorf("restartPolicy %q, backoffLimit %v; want Never and 0 (runs once)", pod.RestartPolicy, job.Spec.BackoffLimit)
		}
		// The run knows when it was scheduled for: the annotation on the Job and its pods, and
		// SCHEDULED_TIME from it (the API server accepted the downward API reference).
		if w := when.UTC().Format(time.RFC3339); job.Annotations[jobstate.ScheduledTimeAnnotation] != w || job.Spec.Template.Annotations[jobstate.ScheduledTimeAnnotation] != w {
			t.Errorf("scheduled time annotations: job %v, pods %v; want %s", job.Annotations, job.Spec.Template.Annotations, w)
		}
		if env := pod.Containers[0].Env; len(env) != 1 || env[0].Name != jobstate.ScheduledTimeEnv || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil {
			t.Errorf("container env = %+v, want SCHEDULED_TIME from the pod's annotation", env)
		}
		if at.Status.Phase != v1alpha1.AtRunning || at.Status.StartTime == nil || at.Status.ObservedGeneration != at.Generation {
			t.Errorf("status = %+v, want Running with a start time and observedGeneration", at.Status)
		}

		if err := testenv.Finish(ctx, c, &job, true, when, when.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		f.waitCached(t, at, func(j *batchv1.Job) bool { ok, _, _ := jobstate.Finished(j); return ok })
		f.clock.Step(time.Minute)
		f.reconcile(t, at)
		if at.Status.Phase != v1alpha1.AtSucceeded || at.Status.CompletionTime == nil ||
			!meta.IsStatusConditionTrue(at.Status.Conditions, ConditionSucceeded) {
			t.Fatalf("after the Job completed: %+v, want Succeeded with completion time and condition", at.Status)
		}
		f.reconcile(t, at)
		if n := len(f.jobsOf(t, at)); n != 1 {
			t.Errorf("%d jobs after another reconcile, want still 1", n)
		}
	})

	t.Run("a failing Job makes the At Failed with the Job's reason", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-fails")
		at := commandAt(ns, "boom", f.clock.Now().Add(-time.Second))
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		js := f.jobsOf(t, at)
		if len(js) != 1 {
			t.Fatalf("%d jobs, want 1", len(js))
		}
		if err := testenv.Finish(ctx, c, &js[0], false, f.clock.Now(), f.clock.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		f.waitCached(t, at, func(j *batchv1.Job) bool { ok, _, _ := jobstate.Finished(j); return ok })
		f.reconcile(t, at)
		cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded)
		if at.Status.Phase != v1alpha1.AtFailed || cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonJobFailed ||
			!strings.Contains(at.Status.Message, "BackoffLimitExceeded") {
			t.Fatalf("status = %+v, want Failed, reason JobFailed, message naming BackoffLimitExceeded", at.Status)
		}
	})

	t.Run("a start later than startingDeadlineSeconds fails with MissedDeadline and creates no Job", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-too-late")
		at := commandAt(ns, "late", f.clock.Now().Add(-2*time.Hour))
		at.Spec.StartingDeadlineSeconds = ptr.To[int64](60)
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		res := f.reconcile(t, at)
		cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded)
		if at.Status.Phase != v1alpha1.AtFailed || cond == nil || cond.Reason != ReasonMissedDeadline || len(f.jobsOf(t, at)) != 0 {
			t.Fatalf("status = %+v, jobs %d; want Failed with MissedDeadline and no Job", at.Status, len(f.jobsOf(t, at)))
		}
		if res.RequeueAfter != 0 {
			t.Errorf("requeue after %v, want none", res.RequeueAfter)
		}
	})

	t.Run("a Job created before a crash is adopted, not created twice", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-crash")
		at := commandAt(ns, "crash", f.clock.Now().Add(-time.Second))
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		// What an earlier reconcile created before crashing, without writing status.
		pre := NewJob(at, testImage)
		if err := c.Create(ctx, pre); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		if js := f.jobsOf(t, at); len(js) != 1 || at.Status.JobName != pre.Name || at.Status.Phase != v1alpha1.AtRunning {
			t.Fatalf("jobs %d, status %+v; want the one Job adopted and Running", len(js), at.Status)
		}
	})

	t.Run("a Job deleted while running fails the At and never runs again", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-deleted")
		at := commandAt(ns, "gone", f.clock.Now().Add(-time.Second))
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		js := f.jobsOf(t, at)
		if len(js) != 1 {
			t.Fatalf("%d jobs, want 1", len(js))
		}
		if err := c.Delete(ctx, &js[0], client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the Job is gone from the cache", func() bool {
			var list batchv1.JobList
			_ = c.List(ctx, &list, client.InNamespace(ns))
			return len(list.Items) == 0
		})
		f.reconcile(t, at)
		if at.Status.Phase != v1alpha1.AtFailed || len(f.jobsOf(t, at)) != 0 {
			t.Fatalf("status %+v, jobs %d; want Failed and no new Job", at.Status, len(f.jobsOf(t, at)))
		}
	})

	// Issue 29: Job names are unique per owner incarnation.
	t.Run("an At applied again while its old Job remains runs, not JobNameTaken", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-again")
		when := f.clock.Now().Add(-time.Second)
		first := commandAt(ns, "again", when)
		if err := c.Create(ctx, first); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, first)
		// Deleted and applied again: the old Job stays until the garbage collector gets to it
		// (envtest runs none: for good).
		if err := c.Delete(ctx, first); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the first At is gone", func() bool {
			return f.env.Manager.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.At{}) != nil
		})
		second := commandAt(ns, "again", when)
		if err := c.Create(ctx, second); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, second)
		if js := f.jobsOf(t, second); len(js) != 1 || second.Status.Phase != v1alpha1.AtRunning || js[0].Name == first.Status.JobName {
			t.Fatalf("jobs %d, status %+v; want a Job of its own (not %s), Running", len(js), second.Status, first.Status.JobName)
		}
	})

	t.Run("a CronJob's Job of the same name and minute does not take the At's", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-cronjob")
		when := f.clock.Now().Add(-time.Second)
		// What the built-in CronJob controller names the Job of a CronJob "report" at that minute.
		cronJobs := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobname.LegacySlot("report", when)},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		}
		if err := c.Create(ctx, cronJobs); err != nil {
			t.Fatal(err)
		}
		at := commandAt(ns, "report", when)
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		if js := f.jobsOf(t, at); len(js) != 1 || at.Status.Phase != v1alpha1.AtRunning {
			t.Fatalf("jobs %d, status %+v; want its own Job, Running", len(js), at.Status)
		}
	})

	// Issue 29: a Job with a short ttlSecondsAfterFinished completes and is deleted before a
	// worker looks at its At. The informer saw it finish: a success, not JobDeleted.
	t.Run("a Job that succeeded and was deleted by its TTL before the At was looked at is a success", func(t *testing.T) {
		var err error
		if f.rec.gone, err = jobs.WatchGone(f.env.Manager.GetCache(), "At", f.rec.Clock); err != nil {
			t.Fatal(err)
		}
		f.drain()
		ns := f.env.Namespace(t, "at-ttl")
		when := f.clock.Now().Add(-time.Second)
		at := commandAt(ns, "ttl", when)
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		js := f.jobsOf(t, at)
		if len(js) != 1 {
			t.Fatalf("%d jobs, want 1", len(js))
		}
		if err := testenv.Finish(ctx, c, &js[0], true, when, when.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		f.waitCached(t, at, func(j *batchv1.Job) bool { ok, _, _ := jobstate.Finished(j); return ok })
		// The TTL controller's delete, before any pass of the At (envtest runs no garbage
		// collector to finish a foreground deletion: background).
		if err := c.Delete(ctx, &js[0], client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the Job is gone from the cache", func() bool {
			var list batchv1.JobList
			_ = c.List(ctx, &list, client.InNamespace(ns))
			return len(list.Items) == 0
		})
		f.reconcile(t, at)
		if at.Status.Phase != v1alpha1.AtSucceeded || at.Status.CompletionTime == nil || !at.Status.CompletionTime.Time.Equal(when.Add(2*time.Second)) {
			t.Fatalf("status %+v; want Succeeded, completed when the Job did", at.Status)
		}
		if evs := f.drain(); slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, ReasonJobDeleted) }) {
			t.Errorf("events %q, want no %s", evs, ReasonJobDeleted)
		}
	})

	t.Run("a jobTemplate runs as given, with restartPolicy Never filled in", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-template")
		at := &v1alpha1.At{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpl"},
			Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(f.clock.Now()), JobTemplate: &batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
				Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "main", Image: "example/app:1", Args: []string{"migrate"}}},
				}}},
			}},
		}
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, at)
		js := f.jobsOf(t, at)
		if len(js) != 1 {
			t.Fatalf("%d jobs, want 1", len(js))
		}
		j := js[0]
		if j.Labels["team"] != "a" || j.Labels[keys.LabelCreatedBy] != Name || ptr.Deref(j.Spec.BackoffLimit, 0) != 2 ||
			j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || j.Spec.Template.Spec.Containers[0].Image != "example/app:1" {
			t.Fatalf("job = labels %v, backoffLimit %v, restartPolicy %q, image %q; want the template's with Never",
				j.Labels, j.Spec.BackoffLimit, j.Spec.Template.Spec.RestartPolicy, j.Spec.Template.Spec.Containers[0].Image)
		}
	})

	t.Run("the schema rejects bad input with clear messages", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-schema")
		now := metav1.NewTime(f.clock.Now())
		tpl := &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
		cases := []struct {
			name string
			at   v1alpha1.At
			want string
		}{
			{"both command and jobTemplate", v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "both"}, Spec: v1alpha1.AtSpec{Schedule: now, Command: "true", JobTemplate: tpl}}, "exactly one of command or jobTemplate"},
			{"neither command nor jobTemplate", v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "neither"}, Spec: v1alpha1.AtSpec{Schedule: now}}, "exactly one of command or jobTemplate"},
			{"image with jobTemplate", v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "img"}, Spec: v1alpha1.AtSpec{Schedule: now, Image: "x", JobTemplate: tpl}}, "image applies only to command"},
			{"a zero starting deadline", v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "zero"}, Spec: v1alpha1.AtSpec{Schedule: now, Command: "true", StartingDeadlineSeconds: ptr.To[int64](0)}}, "0 would never run"},
			{"a name longer than 52", v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 53)}, Spec: v1alpha1.AtSpec{Schedule: now, Command: "true"}}, "at most 52 characters"},
		}
		for _, tc := range cases {
			at := tc.at
			at.Namespace = ns
			err := c.Create(ctx, &at)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
			}
		}
		// A schedule with a non-UTC offset is accepted (and means the same instant).
		u := &unstructuredAt{ns: ns, name: "offset", schedule: "2030-05-01T09:30:00+02:00"}
		if err := c.Create(ctx, u.obj()); err != nil {
			t.Fatalf("an RFC 3339 time with +02:00: %v", err)
		}
		var got v1alpha1.At
		if err := f.env.Manager.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: ns, Name: "offset"}, &got); err != nil {
			t.Fatal(err)
		}
		if want := time.Date(2030, 5, 1, 7, 30, 0, 0, time.UTC); !got.Spec.Schedule.Equal(&metav1.Time{Time: want}) {
			t.Errorf("schedule = %v, want %v", got.Spec.Schedule, want)
		}
		for _, bad := range []string{"2030-05-01 09:30", "tomorrow"} {
			u := &unstructuredAt{ns: ns, name: "bad", schedule: bad}
			if err := c.Create(ctx, u.obj()); err == nil {
				t.Errorf("schedule %q was accepted, want it rejected", bad)
			}
		}
	})
}

func TestAtControllerRunsInTheManager(t *testing.T) {
	f := newFixture(t, true)
	c, ctx := f.env.Client, f.env.Ctx
	ns := f.env.Namespace(t, "at-manager")
	at := commandAt(ns, "wired", f.clock.Now().Add(-time.Second))
	if err := c.Create(ctx, at); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the controller creates the Job and reports Running", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(at), at)
		return at.Status.Phase == v1alpha1.AtRunning && len(f.jobsOf(t, at)) == 1
	})
}

// drain returns the Events recorded so far.
func (f *fixture) drain() []string {
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

func TestAtInLocalTime(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx
	localAt := func(ns, name, local, zone string) *v1alpha1.At {
		return &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.AtSpec{LocalTime: local, TimeZone: ptr.To(zone), Command: "echo $SCHEDULED_TIME"}}
	}

	t.Run("a local time in a spring-forward gap runs later by the jump, and says so", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-local-gap")
		berlin, _ := time.LoadLocation("Europe/Berlin")
		want := time.Date(2026, 3, 29, 3, 30, 0, 0, berlin) // 02:30 does not exist that night
		f.clock.SetTime(want.Add(-time.Hour))
		at := localAt(ns, "gap", "2026-03-29T02:30:00", "Europe/Berlin")
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.drain()
		res := f.reconcile(t, at)
		if at.Status.ScheduledTime == nil || !at.Status.ScheduledTime.Time.Equal(want) || at.Status.Phase != v1alpha1.AtPending {
			t.Fatalf("status = %+v, want Pending for %s", at.Status, want)
		}
		if res.RequeueAfter < time.Hour || res.RequeueAfter > time.Hour+time.Second {
			t.Errorf("requeue after %s, want about an hour", res.RequeueAfter)
		}
		evs := f.drain()
		if len(evs) != 1 || !strings.Contains(evs[0], "LocalTimeResolved") || !strings.Contains(evs[0], "does not exist") {
			t.Errorf("events %q, want one LocalTimeResolved saying the time does not exist", evs)
		}
		f.reconcile(t, at)
		if evs := f.drain(); len(evs) != 0 {
			t.Errorf("a second pass said it again: %q", evs)
		}
		f.clock.SetTime(want)
		f.reconcile(t, at)
		js := f.jobsOf(t, at)
		if len(js) != 1 || js[0].Name != jobname.Slot(at, want) ||
			js[0].Annotations[jobstate.ScheduledTimeAnnotation] != "2026-03-29T03:30:00+02:00" {
			t.Fatalf("jobs %+v, want one named for %s with the Berlin time", js, want)
		}
	})

	t.Run("a zone the manager does not know fails the At once", func(t *testing.T) {
		ns := f.env.Namespace(t, "at-local-zone")
		at := localAt(ns, "mars", "2030-01-01T00:00:00", "Mars/Olympus_Mons")
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		f.drain()
		f.reconcile(t, at)
		cond := meta.FindStatusCondition(at.Status.Conditions, "Succeeded")
		if at.Status.Phase != v1alpha1.AtFailed || cond == nil || cond.Reason != ReasonUnknownTimeZone || !strings.Contains(cond.Message, "Mars/Olympus_Mons") {
			t.Fatalf("status = %+v, want Failed/UnknownTimeZone naming the zone", at.Status)
		}
		f.reconcile(t, at)
		if evs := f.drain(); len(evs) != 1 {
			t.Errorf("events %q, want the one Warning", evs)
		}
	})
}
