package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/at"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// Issue 37, "Job features": the Job fields CronJob users rely on, run by the real Job controller
// (kind: real pods, real exit codes) through a ScheduledJob (a run-now token: no minute slot to
// wait for) and an At each, and what the add-on reports compared with the Job's own conditions.
// docs/scheduling.md ("Job features") says what is reported for each.

const (
	jobFeaturesNamespace = "e2e-jobfeatures"
	// farSchedule never fires during the suite (1 January): the ScheduledJobs run by run-now.
	farSchedule = "0 0 1 1 *"
	queueName   = "team-queue"
	multiKueue  = "kueue.x-k8s.io/multikueue"
)

// jobFeature is one Job template, run by a ScheduledJob and by an At of the same name.
type jobFeature struct {
	name string
	spec batchv1.JobSpec
	// labels are the template's labels.
	labels map[string]string
	// own checks the Job's own status: that the feature did what it does (the test is about the
	// real Job controller's result, so it must be the one the feature leads to).
	own func(t *testing.T, j *batchv1.Job)
	// minMinor is the first Kubernetes minor whose API server keeps the feature's field by
	// default (a beta feature gate on): on an older one (make test-e2e-kind-oldest, v1.30) the
	// field is dropped and the Job is an ordinary one, so the case is left out, and said.
	minMinor int
}

// serverMinor is the cluster's Kubernetes minor (TestJobFeatures' Setup); 0 until known.
var serverMinor int

// available keeps the features the cluster's Kubernetes has.
func available(fs []jobFeature) []jobFeature {
	var out []jobFeature
	for _, f := range fs {
		if serverMinor == 0 || serverMinor >= f.minMinor {
			out = append(out, f)
		}
	}
	return out
}

// minorOf reads the cluster's minor version ("30", or "30+" from some providers).
func minorOf(t *testing.T, cfg *envconf.Config) int {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	m, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if err != nil {
		t.Fatalf("server version %q: minor %q: %v", v.GitVersion, v.Minor, err)
	}
	return m
}

// busyboxJob is a Job spec of one container running script in the suite's job image.
func busyboxJob(script string, mod func(*batchv1.JobSpec)) batchv1.JobSpec {
	s := batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{Name: "main", Image: chartJobImage, Command: []string{"/bin/sh", "-c", script}}},
	}}}
	if mod != nil {
		mod(&s)
	}
	return s
}

// indexed makes s an Indexed Job of 2 completions run at once.
func indexed(s *batchv1.JobSpec) {
	s.CompletionMode, s.Completions, s.Parallelism = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](2), ptr.To[int32](2)
}

// terminal is the Job's Complete or Failed condition that is True, or nil.
func terminal(j *batchv1.Job) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func finishingFeatures() []jobFeature { return available(allFinishingFeatures()) }

func waitingFeatures() []jobFeature { return available(allWaitingFeatures()) }

func allFinishingFeatures() []jobFeature {
	return []jobFeature{{
		// podFailurePolicy: exit code 42 fails the Job at once, though backoffLimit allows 6 retries.
		name: "fail-job",
		spec: busyboxJob("exit 42", func(s *batchv1.JobSpec) {
			s.BackoffLimit = ptr.To[int32](6)
			s.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
		}),
		own: func(t *testing.T, j *batchv1.Job) {
			c := terminal(j)
			if c == nil || c.Type != batchv1.JobFailed || c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "exit code 42") || j.Status.Failed != 1 {
				t.Errorf("Job %s: condition %+v, failed %d; want Failed by PodFailurePolicy (exit code 42) after one pod", j.Name, c, j.Status.Failed)
			}
		},
	}, {
		// successPolicy: index 1 succeeding is enough, after index 0 failed for good. One pod at a
		// time, lowest index first, so the failure surely comes before the success (two pods at
		// once race: on a loaded node the failing one may not have started when the other ends);
		// backoffLimitPerIndex 0 keeps index 0 from being retried, and 3 completions keep the
		// failed and succeeded indexes (2) short of the count that would fail the Job first.
		name:     "success-policy",
		minMinor: 31, // JobSuccessPolicy: alpha (off) in 1.30, beta in 1.31, GA in 1.33
		spec: busyboxJob(`[ "$JOB_COMPLETION_INDEX" = 1 ]`, func(s *batchv1.JobSpec) {
			s.CompletionMode, s.Completions, s.Parallelism = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](3), ptr.To[int32](1)
			s.BackoffLimitPerIndex = ptr.To[int32](0)
			s.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("1")}}}
		}),
		own: func(t *testing.T, j *batchv1.Job) {
			c := terminal(j)
			if c == nil || c.Type != batchv1.JobComplete || c.Reason != batchv1.JobReasonSuccessPolicy || jobCondition(j, batchv1.JobSuccessCriteriaMet) == nil ||
				ptr.Deref(j.Status.FailedIndexes, "") != "0" || j.Status.CompletedIndexes != "1" {
				t.Errorf("Job %s: condition %+v, failedIndexes %v, completedIndexes %q, conditions %+v; want Complete by SuccessPolicy with SuccessCriteriaMet, index 0 failed, 1 completed",
					j.Name, c, ptr.Deref(j.Status.FailedIndexes, "<nil>"), j.Status.CompletedIndexes, j.Status.Conditions)
			}
		},
	}, {
		// backoffLimitPerIndex 0: index 1 fails once and for all, index 0 succeeds, the Job fails.
		name: "per-index",
		spec: busyboxJob(`[ "$JOB_COMPLETION_INDEX" = 0 ]`, func(s *batchv1.JobSpec) {
			indexed(s)
			s.BackoffLimitPerIndex = ptr.To[int32](0)
		}),
		own: func(t *testing.T, j *batchv1.Job) {
			c := terminal(j)
			if c == nil || c.Type != batchv1.JobFailed || c.Reason != batchv1.JobReasonFailedIndexes || ptr.Deref(j.Status.FailedIndexes, "") != "1" || j.Status.CompletedIndexes != "0" {
				t.Errorf("Job %s: condition %+v, failedIndexes %v, completedIndexes %q; want Failed by FailedIndexes, index 1 failed, 0 completed",
					j.Name, c, ptr.Deref(j.Status.FailedIndexes, "<nil>"), j.Status.CompletedIndexes)
			}
		},
	}}
}

func allWaitingFeatures() []jobFeature {
	return []jobFeature{{
		// Kueue's shape: created suspended with a queue label; Kueue resumes it once admitted.
		name:   "queued",
		labels: map[string]string{jobstate.QueueNameLabel: queueName},
		spec:   busyboxJob("true", func(s *batchv1.JobSpec) { s.Suspend = ptr.To(true) }),
		own: func(t *testing.T, j *batchv1.Job) {
			if c := jobCondition(j, batchv1.JobSuspended); c == nil || j.Status.StartTime != nil || j.Status.Active != 0 {
				t.Errorf("Job %s: status %+v; want Suspended, not started", j.Name, j.Status)
			}
		},
	}, {
		// MultiKueue's shape: another controller manages it; the built-in one leaves it alone.
		name:     "multikueue",
		minMinor: 32, // JobManagedBy: alpha (off) in 1.30 and 1.31, beta in 1.32, GA in 1.35
		spec:     busyboxJob("true", func(s *batchv1.JobSpec) { s.ManagedBy = ptr.To(multiKueue) }),
		own: func(t *testing.T, j *batchv1.Job) {
			if len(j.Status.Conditions) != 0 || j.Status.StartTime != nil || j.Status.Active != 0 {
				t.Errorf("Job %s: status %+v; want none: the built-in Job controller ignores a Job managed by %s", j.Name, j.Status, multiKueue)
			}
		},
	}}
}

// objectsFor are the ScheduledJob (with a run-now token, so its Job starts now) and the At of f.
func objectsFor(f jobFeature) (*v1alpha1.ScheduledJob, *v1alpha1.At) {
	tmpl := batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: f.labels}, Spec: f.spec}
	sj := &v1alpha1.ScheduledJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: jobFeaturesNamespace, Name: f.name, Annotations: map[string]string{keys.AnnotationRunNow: "1"}},
		Spec:       v1alpha1.ScheduledJobSpec{Schedule: farSchedule, JobTemplate: *tmpl.DeepCopy()},
	}
	a := &v1alpha1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: jobFeaturesNamespace, Name: f.name},
		Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now()), JobTemplate: tmpl.DeepCopy()},
	}
	return sj, a
}

// oneJob waits for owner's one Job and returns it.
func oneJob(ctx context.Context, t *testing.T, c client.Client, owner client.Object) *batchv1.Job {
	t.Helper()
	var js []batchv1.Job
	waitFor(ctx, t, waitTimeout, "no Job for "+owner.GetName(), func(ctx context.Context) (bool, error) {
		var err error
		js, err = ownedJobs(ctx, c, owner)
		return err == nil && len(js) > 0, nil
	})
	if len(js) != 1 {
		t.Fatalf("%s has %d Jobs, want 1", owner.GetName(), len(js))
	}
	return &js[0]
}

// alertingCounters are the series the chart's alerts on ScheduledJob runs read.
var alertingCounters = []string{
	`platform_operators_scheduledjob_runs_finished_total{result="failed"}`,
	`platform_operators_scheduledjob_skipped_slots_total{reason="MissedDeadline"}`,
	`platform_operators_scheduledjob_skipped_slots_total{reason="MissedSlots"}`,
	`platform_operators_scheduledjob_skipped_slots_total{reason="TooManyMissedTimes"}`,
	`platform_operators_scheduledjob_skipped_slots_total{reason="JobRejected"}`,
}

func TestJobFeatures(t *testing.T) {
	if namespacedMode() {
		t.Skip("E2E_RBAC_SCOPE=namespaced: the manager works only in the suite's listed namespaces")
	}
	var metricsBefore string
	var waitingSince time.Time
	waitingUIDs := map[string]types.UID{}
	f := features.New("Job features: the add-on reports what the Job controller decided, and a held Job as waiting")
	f = withNamespace(f, jobFeaturesNamespace)
	f = f.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		serverMinor = minorOf(t, cfg)
		for _, f := range append(allFinishingFeatures(), allWaitingFeatures()...) {
			if serverMinor < f.minMinor {
				t.Logf("Kubernetes 1.%d: the %s case needs 1.%d (its feature gate is off before), left out", serverMinor, f.name, f.minMinor)
			}
		}
		c := opsClient(t, cfg)
		var err error
		if metricsBefore, err = bed.ManagerMetrics(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		waitingSince = time.Now()
		for _, wf := range waitingFeatures() {
			sj, a := objectsFor(wf)
			if err := c.Create(ctx, sj); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		return ctx
	})
	f = f.Assess("a suspended, queued Job and a Job managed elsewhere are reported waiting, past podsStuckAfter, untouched, with no alerting series", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		reasons := map[string]string{"queued": jobstate.ReasonJobSuspended, "multikueue": jobstate.ReasonManagedElsewhere}
		holders := map[string]string{"queued": queueName, "multikueue": multiKueue}
		for _, wf := range waitingFeatures() {
			sj, a := objectsFor(wf)
			waitFor(ctx, t, waitTimeout, "ScheduledJob "+sj.Name+" never recorded a Waiting run", func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
					return false, nil
				}
				return len(sj.Status.Runs) == 1 && sj.Status.Runs[0].Result == v1alpha1.RunWaiting, nil
			})
			waitingUIDs["sj/"+sj.Name] = oneJob(ctx, t, c, sj).UID
			waitAtPhase(ctx, t, c, a, v1alpha1.AtPending)
			waitFor(ctx, t, waitTimeout, "At "+a.Name+" never said its Job waits", func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
					return false, nil
				}
				cond := meta.FindStatusCondition(a.Status.Conditions, at.ConditionSucceeded)
				return a.Status.JobName != "" && cond != nil && cond.Reason == reasons[wf.name], nil
			})
			waitingUIDs["at/"+a.Name] = oneJob(ctx, t, c, a).UID
		}
		// Past the suite's podsStuckAfter, with a margin for the pass it would take: an ordinary
		// Job without a pod would be JobsStuck / PodsNotCreated by now (TestAtWhosePodsAreRefused).
		time.Sleep(time.Until(waitingSince.Add(suitePodsStuckAfter + 10*time.Second)))
		for _, wf := range waitingFeatures() {
			sj, a := objectsFor(wf)
			if err := c.Get(ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
				t.Fatal(err)
			}
			j := oneJob(ctx, t, c, sj)
			wf.own(t, j)
			r := sj.Status.Runs
			if len(r) != 1 || r[0].JobName != j.Name || r[0].Result != v1alpha1.RunWaiting || r[0].Reason != reasons[wf.name] || !strings.Contains(r[0].Message, holders[wf.name]) {
				t.Errorf("ScheduledJob %s: runs %+v; want one Waiting run of %s, reason %s, naming %s", sj.Name, r, j.Name, reasons[wf.name], holders[wf.name])
			}
			if len(sj.Status.Active) != 1 || sj.Status.Active[0].UID != j.UID {
				t.Errorf("ScheduledJob %s: active %+v; want its waiting Job", sj.Name, sj.Status.Active)
			}
			if cond := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionJobsStuck); cond != nil {
				t.Errorf("ScheduledJob %s: %+v; want no JobsStuck for a waiting Job", sj.Name, cond)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
				t.Fatal(err)
			}
			aj := oneJob(ctx, t, c, a)
			wf.own(t, aj)
			cond := meta.FindStatusCondition(a.Status.Conditions, at.ConditionSucceeded)
			if a.Status.Phase != v1alpha1.AtPending || cond == nil || cond.Status != metav1.ConditionUnknown || cond.Reason != reasons[wf.name] || !strings.Contains(a.Status.Message, holders[wf.name]) {
				t.Errorf("At %s: phase %s, condition %+v; want Pending, Succeeded Unknown with reason %s naming %s", a.Name, a.Status.Phase, cond, reasons[wf.name], holders[wf.name])
			}
			// Untouched: the same Jobs, not deleted, no pod created for them.
			for key, job := range map[string]*batchv1.Job{"sj/" + sj.Name: j, "at/" + a.Name: aj} {
				if job.UID != waitingUIDs[key] || job.DeletionTimestamp != nil {
					t.Errorf("%s's Job %s was replaced or is being deleted", key, job.Name)
				}
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.InNamespace(jobFeaturesNamespace), client.MatchingLabels{"batch.kubernetes.io/job-name": job.Name}); err != nil || len(pods.Items) != 0 {
					t.Errorf("%s's Job %s has %d pods (%v), want none", key, job.Name, len(pods.Items), err)
				}
			}
			for _, name := range []string{sj.Name, a.Name} {
				evs, err := eventsFor(ctx, c, jobFeaturesNamespace, name)
				if err != nil {
					t.Fatal(err)
				}
				if w := withReason(evs, slotplan.ReasonPodsNotCreated); len(w) > 0 {
					t.Errorf("PodsNotCreated Events about %s: %+v", name, w)
				}
			}
		}
		after, err := bed.ManagerMetrics(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, series := range alertingCounters {
			if d := counterDelta(metricsBefore, after, series); d != 0 {
				t.Errorf("%s moved by %v while only waiting Jobs existed", series, d)
			}
		}
		return ctx
	})
	f = f.Assess("once the queue admits (resumes) the suspended Jobs, they run and their runs end Succeeded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		sj, a := objectsFor(waitingFeatures()[0])
		for _, owner := range []client.Object{sj, a} {
			// Read for its UID: a Job is found as the one it controls.
			if err := c.Get(ctx, client.ObjectKeyFromObject(owner), owner); err != nil {
				t.Fatal(err)
			}
			j := oneJob(ctx, t, c, owner)
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
			if err := c.Patch(ctx, j, patch); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(ctx, t, waitTimeout, "the resumed ScheduledJob run never ended Succeeded", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
				return false, nil
			}
			return len(sj.Status.Runs) == 1 && sj.Status.Runs[0].Result == v1alpha1.RunSucceeded, nil
		})
		if got := waitAtPhase(ctx, t, c, a, v1alpha1.AtSucceeded, v1alpha1.AtFailed); got.Status.Phase != v1alpha1.AtSucceeded {
			t.Errorf("At %s: %s (%s), want Succeeded", a.Name, got.Status.Phase, got.Status.Message)
		}
		return ctx
	})
	f = f.Assess("podFailurePolicy, successPolicy and backoffLimitPerIndex: each run's result, reason and message are the Job's own", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		start := time.Now()
		for _, ff := range finishingFeatures() {
			sj, a := objectsFor(ff)
			if err := c.Create(ctx, sj); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		for _, ff := range finishingFeatures() {
			sj, a := objectsFor(ff)
			waitFor(ctx, t, 2*waitTimeout, "ScheduledJob "+sj.Name+"'s run never finished", func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
					return false, nil
				}
				return len(sj.Status.Runs) == 1 && (sj.Status.Runs[0].Result == v1alpha1.RunSucceeded || sj.Status.Runs[0].Result == v1alpha1.RunFailed), nil
			})
			j := oneJob(ctx, t, c, sj)
			ff.own(t, j)
			checkRunIsTheJobs(t, sj.Status.Runs[0], j)

			got := waitAtPhase(ctx, t, c, a, v1alpha1.AtSucceeded, v1alpha1.AtFailed)
			aj := oneJob(ctx, t, c, got)
			ff.own(t, aj)
			checkAtIsTheJobs(t, got, aj)
		}
		t.Logf("the six Jobs ended and were reported within %s", time.Since(start).Round(time.Second))
		return ctx
	})
	testenv.Test(t, f.Feature())
}

// checkRunIsTheJobs compares a ScheduledJob's run with its Job's own terminal condition.
func checkRunIsTheJobs(t *testing.T, r v1alpha1.ScheduledJobRun, j *batchv1.Job) {
	t.Helper()
	c := terminal(j)
	if c == nil {
		t.Fatalf("Job %s has no terminal condition: %+v", j.Name, j.Status.Conditions)
	}
	want := v1alpha1.RunFailed
	if c.Type == batchv1.JobComplete {
		want = v1alpha1.RunSucceeded
	}
	finished := c.LastTransitionTime.Time
	if c.Type == batchv1.JobComplete && j.Status.CompletionTime != nil {
		finished = j.Status.CompletionTime.Time
	}
	if r.JobName != j.Name || r.Result != want || r.Reason != c.Reason || r.Message != c.Message || r.CompletionTime == nil || !r.CompletionTime.Time.Equal(finished) {
		t.Errorf("run %+v; want Job %s's own: %s, reason %q, message %q, completed %s", r, j.Name, want, c.Reason, c.Message, finished.UTC().Format(time.RFC3339))
	}
	if r.StartTime == nil || j.Status.StartTime == nil || !r.StartTime.Equal(j.Status.StartTime) {
		t.Errorf("run startTime %v, Job's %v", r.StartTime, j.Status.StartTime)
	}
}

// checkAtIsTheJobs compares an At's final status with its Job's own terminal condition.
func checkAtIsTheJobs(t *testing.T, a *v1alpha1.At, j *batchv1.Job) {
	t.Helper()
	c := terminal(j)
	if c == nil {
		t.Fatalf("Job %s has no terminal condition: %+v", j.Name, j.Status.Conditions)
	}
	phase, reason, says := v1alpha1.AtFailed, at.ReasonJobFailed, c.Reason+": "+c.Message
	if c.Type == batchv1.JobComplete {
		phase, reason, says = v1alpha1.AtSucceeded, at.ReasonJobComplete, "completed"
		if c.Reason == batchv1.JobReasonSuccessPolicy {
			says = "successPolicy: " + c.Message
		}
	}
	cond := meta.FindStatusCondition(a.Status.Conditions, at.ConditionSucceeded)
	if a.Status.Phase != phase || cond == nil || cond.Reason != reason || !strings.Contains(a.Status.Message, says) || a.Status.CompletionTime == nil || a.Status.JobName != j.Name {
		t.Errorf("At %s: phase %s, condition %+v, message %q; want %s, reason %s, a message with %q (Job %s's own %s)",
			a.Name, a.Status.Phase, cond, a.Status.Message, phase, reason, says, j.Name, fmt.Sprint(c.Type))
	}
}
