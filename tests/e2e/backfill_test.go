package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

const backfillNamespace = "e2e-backfill"

// A backfill on real nodes: the two past slots of an every-minute schedule, asked for when the
// ScheduledJob is created (a new report job that should have run), each run to completion by the
// real Job controller, each pod reading its own slot from SCHEDULED_TIME.
func TestBackfillOnKind(t *testing.T) {
	var sj *v1alpha1.ScheduledJob
	var slots []time.Time
	f := features.New("a backfill runs each past slot once, with its own scheduled time")
	f = withNamespace(f, backfillNamespace)
	f = f.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		// Two whole minutes that ended before now: [now-3m, now-1m), minutes truncated.
		from := time.Now().UTC().Truncate(time.Minute).Add(-3 * time.Minute)
		slots = []time.Time{from, from.Add(time.Minute)}
		sj = &v1alpha1.ScheduledJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: backfillNamespace, Name: "report",
				Annotations: map[string]string{keys.AnnotationBackfill: from.Format(time.RFC3339) + "/" + from.Add(2*time.Minute).Format(time.RFC3339)}},
			Spec: v1alpha1.ScheduledJobSpec{
				Schedule: "* * * * *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: chartJobImage,
						Command: []string{"/bin/sh", "-c", `echo "report for $SCHEDULED_TIME"`}}},
				}}}},
			},
		}
		c := opsClient(t, cfg)
		// Until the API server's RESTMapper knows the ScheduledJob kind the chart just installed,
		// OwnerReferencesPermissionEnforcement refuses every Job owned by one (403). This suite is
		// the first after the install, so it may meet that: a backfill Job refused at admission is
		// tried again with backoff while the request stands (docs/scheduling.md).
		if err := c.Create(ctx, sj); err != nil {
			t.Fatal(err)
		}
		return ctx
	})
	f = f.Assess("both slots' Jobs run to completion, each pod printing its slot, and the backfill says so", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		got := &v1alpha1.ScheduledJob{}
		// Accepted, then one Job each BackfillInterval (10 s).
		waitFor(ctx, t, waitTimeout, "the backfill never finished", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil {
				return false, nil
			}
			bf := got.Status.Backfill
			return bf != nil && bf.Phase != v1alpha1.BackfillRunning, nil
		})
		if bf := got.Status.Backfill; bf.Phase != v1alpha1.BackfillFinished || bf.Slots != 2 || bf.Created != 2 || bf.Done != 2 {
			// The runs say why a slot was done without a Job of this backfill (a refusal's
			// reason and the API server's message, or a Job found).
			var runs []string
			for _, r := range got.Status.Runs {
				runs = append(runs, fmt.Sprintf("%s %s %s %s %q", r.ScheduledTime.UTC().Format(time.RFC3339), r.JobName, r.Result, r.Reason, r.Message))
			}
			t.Fatalf("status.backfill = %+v, want Finished, 2 of 2 created; status.runs: %q; notRun: %+v; created %s", bf, runs, got.Status.NotRun, got.CreationTimestamp.UTC().Format(time.RFC3339))
		}
		for _, slot := range slots {
			if r := slotplan.InRanges(got.Status.NotRun, slot); r != nil {
				t.Errorf("status.notRun still lists %s (%s) although its Job was created", slot.Format(time.RFC3339), r.Reason)
			}
		}
		// A refusal ridden out leaves its Warning: say so, it is what this run proved.
		if evs, err := eventsFor(ctx, c, backfillNamespace, sj.Name); err == nil {
			for _, e := range evs {
				if e.Reason == slotplan.ReasonJobRejected {
					t.Logf("refused and tried again: %s (x%d)", e.Message, max(e.Count, 1))
				}
			}
		}
		for _, slot := range slots {
			name := jobname.Backfill(got, slot)
			want := "report for " + slot.Format(time.RFC3339) + "\n"
			if log := jobPodLog(ctx, t, cfg, backfillNamespace, name); log != want {
				t.Errorf("Job %s: pod log %q, want %q", name, log, want)
			}
			var j batchv1.Job
			waitFor(ctx, t, waitTimeout, "Job "+name+" never completed", func(ctx context.Context) (bool, error) {
				if err := c.Get(ctx, client.ObjectKey{Namespace: backfillNamespace, Name: name}, &j); err != nil {
					return false, nil
				}
				done, how, _ := jobstate.Finished(&j)
				return done && how == batchv1.JobComplete, nil
			})
			if a := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; a != slot.Format(time.RFC3339) {
				t.Errorf("Job %s: %s = %q, want %q", name, batchv1.CronJobScheduledTimestampAnnotation, a, slot.Format(time.RFC3339))
			}
		}
		// status.runs records both backfilled runs as Succeeded.
		waitFor(ctx, t, waitTimeout, "the run history never recorded both backfilled runs as Succeeded", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil {
				return false, nil
			}
			n := 0
			for _, r := range got.Status.Runs {
				for _, slot := range slots {
					if r.JobName == jobname.Backfill(got, slot) && r.ScheduledTime.Time.Equal(slot) && r.Result == v1alpha1.RunSucceeded {
						n++
					}
				}
			}
			return n == 2, nil
		})
		// Each slot ran once: no other backfill Job, and the slots' scheduled Jobs (before the
		// ScheduledJob existed) were never created.
		js, err := ownedJobs(ctx, c, got)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range js {
			for _, slot := range slots {
				if j.Name == jobname.Slot(got, slot) {
					t.Errorf("the scheduled Job %s of a backfilled slot exists", j.Name)
				}
			}
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}
