package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	slotlogic "github.com/platform-operators/platform-operators/controller/logic/slots"
)

// chartJobImage is the job image the chart is installed with: the chart's default on kwok (no
// pod runs, nothing is pulled), the test bed registry's busybox on kind (setKindValues).
var chartJobImage = "docker.io/library/busybox:1.37"

const (
	atNamespace         = "e2e-at"
	schedulingNamespace = "e2e-scheduling"
	// kwokFailLabel makes kwok fail a pod (tests/testbed/kwok-stages.yaml).
	kwokFailLabel = "pod-container-running-failed.stage.kwok.x-k8s.io"
	// kwokCompleteDelay keeps a Job's pod running for a while (tests/testbed/kwok-stages.yaml).
	kwokCompleteDelay = "pod-complete.stage.kwok.x-k8s.io/delay"
	// slotTimeout bounds a wait for two every-minute slots.
	slotTimeout = 150 * time.Second
)

// opsClient is the suite's client that knows the ops.platform-operators.io kinds.
func opsClient(t *testing.T, cfg *envconf.Config) client.Client { return ctrlClient(t, cfg) }

func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.For(cond, wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(timeout)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ownedJobs lists the Jobs controlled by owner.
func ownedJobs(ctx context.Context, c client.Client, owner client.Object) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := c.List(ctx, &list, client.InNamespace(owner.GetNamespace())); err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, owner) {
			out = append(out, j)
		}
	}
	return out, nil
}

// eventsFor lists the Events about the named object, oldest first.
func eventsFor(ctx context.Context, c client.Client, namespace, name string) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{"involvedObject.name": name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitAtPhase waits until the At reaches one of phases and returns it as last read.
func waitAtPhase(ctx context.Context, t *testing.T, c client.Client, at *v1alpha1.At, phases ...v1alpha1.AtPhase) *v1alpha1.At {
	t.Helper()
	got := &v1alpha1.At{}
	waitFor(ctx, t, waitTimeout, fmt.Sprintf("At %s never reached %v", at.Name, phases), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(at), got); err != nil {
			return false, nil
		}
		return slices.Contains(phases, got.Status.Phase), nil
	})
	return got
}

func withReason(evs []corev1.Event, reason string) []corev1.Event {
	var out []corev1.Event
	for _, e := range evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestAt(t *testing.T) {
	var succeeding, failing, local *v1alpha1.At
	var localAt time.Time
	f := features.New("At runs a command once at a given time")
	f = withNamespace(f, atNamespace)
	f = f.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		succeeding = &v1alpha1.At{
			ObjectMeta: metav1.ObjectMeta{Namespace: atNamespace, Name: "hello"},
			Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now().Add(5 * time.Second)), Command: `echo "hello from $(hostname)"`},
		}
		failing = &v1alpha1.At{
			ObjectMeta: metav1.ObjectMeta{Namespace: atNamespace, Name: "boom"},
			Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now()), JobTemplate: &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kwokFailLabel: "true"}},
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "main", Image: chartJobImage, Command: []string{"/bin/sh", "-c", "exit 3"}}}},
				},
			}}},
		}
		// A wall-clock time in a zone far from UTC: the manager (tzdata embedded) resolves it.
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		localAt = time.Now().Add(8 * time.Second).Truncate(time.Second)
		local = &v1alpha1.At{
			ObjectMeta: metav1.ObjectMeta{Namespace: atNamespace, Name: "local"},
			Spec:       v1alpha1.AtSpec{LocalTime: localAt.In(ny).Format("2006-01-02T15:04:05"), TimeZone: ptr.To("America/New_York"), Command: "date"},
		}
		for _, at := range []*v1alpha1.At{succeeding, failing, local} {
			if err := c.Create(ctx, at); err != nil {
				t.Fatalf("creating At %s: %v", at.Name, err)
			}
		}
		return ctx
	})
	f = f.Assess("an At a few seconds ahead waits, runs in the chart's job image and reaches Succeeded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		at := waitAtPhase(ctx, t, c, succeeding, v1alpha1.AtSucceeded)
		if at.Status.StartTime == nil || at.Status.StartTime.Time.Before(succeeding.Spec.Schedule.Time) {
			t.Errorf("startTime %v, want not before the schedule %v", at.Status.StartTime, succeeding.Spec.Schedule)
		}
		js, err := ownedJobs(ctx, c, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) != 1 || js[0].Name != at.Status.JobName {
			t.Fatalf("jobs %d, want exactly the one in status (%s)", len(js), at.Status.JobName)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(atNamespace), client.MatchingLabels{"batch.kubernetes.io/job-name": js[0].Name}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			t.Fatal("the Job's pod is gone")
		}
		if got := pods.Items[0].Spec.Containers[0]; got.Image != chartJobImage || got.Command[0] != "/bin/sh" || got.Command[1] != "-c" {
			t.Errorf("pod container = image %q, command %q; want %s and /bin/sh -c", got.Image, got.Command, chartJobImage)
		}
		return ctx
	})
	f = f.Assess("an At in local time with a time zone runs at that instant", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		at := waitAtPhase(ctx, t, c, local, v1alpha1.AtSucceeded)
		if at.Status.ScheduledTime == nil || !at.Status.ScheduledTime.Time.Equal(localAt) {
			t.Errorf("status.scheduledTime %v, want %v (the local time resolved in America/New_York)", at.Status.ScheduledTime, localAt)
		}
		if at.Status.StartTime == nil || at.Status.StartTime.Time.Before(localAt) {
			t.Errorf("startTime %v, want not before %v", at.Status.StartTime, localAt)
		}
		return ctx
	})
	f = f.Assess("an At whose pod fails reaches Failed with the Job's reason", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		at := waitAtPhase(ctx, t, opsClient(t, cfg), failing, v1alpha1.AtFailed)
		// On real nodes the container exits 3 and the Job controller gives up (backoffLimit 0).
		if !strings.Contains(at.Status.Message, "failed") || at.Status.CompletionTime == nil ||
			(isKind() && !strings.Contains(at.Status.Message, "BackoffLimitExceeded")) {
			t.Errorf("status = %+v, want a failure message and completion time", at.Status)
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}

// everyMinuteJob is a ScheduledJob running every minute, with a pod template kwok completes.
func everyMinuteJob(name string, mods ...func(*v1alpha1.ScheduledJob)) *v1alpha1.ScheduledJob {
	sj := &v1alpha1.ScheduledJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: schedulingNamespace, Name: name},
		Spec: v1alpha1.ScheduledJobSpec{
			Schedule: "*/1 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: chartJobImage, Command: []string{"date"}}},
			}}}},
		},
	}
	for _, m := range mods {
		m(sj)
	}
	return sj
}

// TestScheduling assesses ScheduledJob on real minute slots. All ScheduledJobs are created at
// once, so the two slots the every-minute assessment waits for also serve Forbid and suspend:
// the whole feature costs about two minutes.
func TestScheduling(t *testing.T) {
	// Two schedules that share every other minute, and a start jitter: still one Job per minute,
	// each started at its slot plus this object's fixed offset.
	every := everyMinuteJob("every", func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
		sj.Spec.Schedule = ""
		sj.Spec.Schedules = []string{"* * * * *", "*/2 * * * *"}
		sj.Spec.Jitter = &metav1.Duration{Duration: 20 * time.Second}
	})
	forbid := everyMinuteJob("forbid", func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.ConcurrencyPolicy = v1alpha1.ForbidConcurrent
		sj.Spec.StartingDeadlineSeconds = ptr.To[int64](20)
		// The first Job runs past the next slot: on kwok by its Stage, on real nodes by its command.
		sj.Spec.JobTemplate.Spec.Template.Annotations = map[string]string{kwokCompleteDelay: "180s"}
		sj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command = []string{"sleep", "180"}
	})
	suspended := everyMinuteJob("suspended", func(sj *v1alpha1.ScheduledJob) { sj.Spec.Suspend = ptr.To(true) })
	manual := everyMinuteJob("manual", func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.Schedule = "0 0 1 1 *"
		sj.Annotations = map[string]string{keys.AnnotationRunNow: "first"}
	})
	var created time.Time

	f := features.New("ScheduledJob creates Jobs on a cron schedule")
	f = withNamespace(f, schedulingNamespace)
	f = f.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		created = time.Now()
		for _, sj := range []*v1alpha1.ScheduledJob{every, forbid, suspended, manual} {
			if err := c.Create(ctx, sj); err != nil {
				t.Fatalf("creating ScheduledJob %s: %v", sj.Name, err)
			}
		}
		return ctx
	})
	f = f.Assess("run-now creates one Job per token, and repeating a token does nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		waitFor(ctx, t, waitTimeout, "the run-now Job never appeared", func(ctx context.Context) (bool, error) {
			js, err := ownedJobs(ctx, c, manual)
			return err == nil && len(js) == 1, nil
		})
		sj := &v1alpha1.ScheduledJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(manual), sj); err != nil {
			t.Fatal(err)
		}
		// A second request with a new token runs once more; the first token is not run again.
		// Within a minute of the first run-now Job it waits for the minute to pass
		// (slotplan.RunNowInterval), said by status.runNowWaiting, then runs.
		patch := client.MergeFrom(sj.DeepCopy())
		sj.Annotations[keys.AnnotationRunNow] = "second"
		if err := c.Patch(ctx, sj, patch); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, waitTimeout+slotplan.RunNowInterval, "the second token never ran", func(ctx context.Context) (bool, error) {
			got := &v1alpha1.ScheduledJob{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(manual), got); err != nil {
				return false, nil
			}
			js, err := ownedJobs(ctx, c, manual)
			return err == nil && len(js) == 2 && got.Status.LastRunNowToken == "second", nil
		})
		return ctx
	})
	f = f.Assess("an every-minute schedule creates exactly one Job per slot and keeps the history limit", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		var creates []corev1.Event
		waitFor(ctx, t, slotTimeout, "two slots never got their Jobs", func(ctx context.Context) (bool, error) {
			evs, err := eventsFor(ctx, c, schedulingNamespace, every.Name)
			if err != nil {
				return false, nil
			}
			creates = withReason(evs, "SuccessfulCreate")
			return len(creates) >= 2, nil
		})
		slots := map[string]bool{}
		for _, e := range creates {
			slots[e.Message] = true
		}
		if len(slots) != len(creates) {
			t.Errorf("SuccessfulCreate events %d for %d distinct Jobs, want one per slot", len(creates), len(slots))
		}
		// Minutes passed since creation bound the slots: one Job each, never more.
		if slots := int(time.Since(created.Truncate(time.Minute))/time.Minute) + 1; len(creates) > slots {
			t.Errorf("%d Jobs created in %d slots", len(creates), slots)
		}
		sj := &v1alpha1.ScheduledJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(every), sj); err != nil {
			t.Fatal(err)
		}
		offset := slotlogic.JitterOffset(every)
		if sj.Status.LastScheduleTime == nil || sj.Status.NextScheduleTime == nil ||
			!sj.Status.NextScheduleTime.Time.Equal(sj.Status.LastScheduleTime.Add(time.Minute+offset)) {
			t.Errorf("status last %v next %v, want next one minute after last plus the jitter offset %v", sj.Status.LastScheduleTime, sj.Status.NextScheduleTime, offset)
		}
		// Each Job starts no earlier than its slot plus the offset; the slot itself is what the
		// Job carries as its scheduled time.
		js, err := ownedJobs(ctx, c, every)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range js {
			slot, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
			if err != nil {
				t.Fatalf("Job %s scheduled time %q: %v", j.Name, j.Annotations[jobstate.ScheduledTimeAnnotation], err)
			}
			if slot.Second() != 0 {
				t.Errorf("Job %s carries %v, not a minute slot", j.Name, slot)
			}
			// creationTimestamp has whole seconds, and the offset is whole seconds too.
			if j.CreationTimestamp.Time.Before(slot.Add(offset)) {
				t.Errorf("Job %s created at %v, before its slot %v plus the jitter offset %v", j.Name, j.CreationTimestamp.Time, slot, offset)
			}
		}
		// History limit 1: finished Jobs beyond the newest one are pruned.
		waitFor(ctx, t, waitTimeout, "the history limit never held", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(every), sj); err != nil {
				return false, nil
			}
			js, err := ownedJobs(ctx, c, every)
			if err != nil {
				return false, nil
			}
			finished := 0
			for _, j := range js {
				for _, cond := range j.Status.Conditions {
					if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
						finished++
					}
				}
			}
			return finished == 1 && sj.Status.LastSuccessfulTime != nil, nil
		})
		return ctx
	})
	f = f.Assess("Forbid with a long-running Job skips the next slot and says so", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		waitFor(ctx, t, slotTimeout, "no JobAlreadyActive Event for the Forbid ScheduledJob", func(ctx context.Context) (bool, error) {
			evs, err := eventsFor(ctx, c, schedulingNamespace, forbid.Name)
			return err == nil && len(withReason(evs, "JobAlreadyActive")) > 0, nil
		})
		js, err := ownedJobs(ctx, c, forbid)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) != 1 {
			t.Errorf("%d Jobs, want only the long-running one", len(js))
		}
		metrics, err := bed.ManagerMetrics(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := metricValue(metrics, `platform_operators_scheduledjob_skipped_slots_total{reason="JobAlreadyActive"}`); !ok || v == "0" {
			t.Errorf("skipped-slot metric = %q (found %v), want at least 1", v, ok)
		}
		return ctx
	})
	f = f.Assess("a suspended ScheduledJob runs nothing and reports the skipped slots", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		// The slots above have passed, so a suspended every-minute schedule missed at least one.
		waitFor(ctx, t, waitTimeout, "no Suspended Event", func(ctx context.Context) (bool, error) {
			evs, err := eventsFor(ctx, c, schedulingNamespace, suspended.Name)
			return err == nil && len(withReason(evs, "Suspended")) > 0, nil
		})
		js, err := ownedJobs(ctx, c, suspended)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) != 0 {
			t.Errorf("%d Jobs of a suspended ScheduledJob, want none", len(js))
		}
		// The first run-now token never ran twice.
		mj, err := ownedJobs(ctx, c, manual)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range mj {
			names = append(names, j.Name)
		}
		slices.Sort(names)
		if len(names) != 2 {
			t.Errorf("run-now Jobs %v, want one per token", names)
		}
		// None of this made the controllers fail a reconcile (conflicts, bad plans, hot loops).
		log, err := bed.ManagerLogs(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "Reconciler error") && (strings.Contains(line, `"controller":"scheduledjob"`) || strings.Contains(line, `"controller":"at"`)) {
				t.Errorf("manager log: %s", line)
			}
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}
