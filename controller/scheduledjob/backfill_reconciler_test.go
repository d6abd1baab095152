package scheduledjob

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// The backfill's envtest ScheduledJobs run daily at 03:30 UTC, and the ranges they backfill are
// whole past days: the scheduled path has no slot due while a test runs, so every Job is a
// backfill Job.
const dailySchedule = "30 3 * * *"

func dailyReport(ns, name, backfill string) *v1alpha1.ScheduledJob {
	sj := everyMinute(ns, name)
	sj.Spec.Schedule = dailySchedule
	if backfill != "" {
		sj.Annotations = map[string]string{keys.AnnotationBackfill: backfill}
	}
	return sj
}

// lastDays is the backfill value of the n whole UTC days before now's, and their 03:30 slots,
// oldest first.
func lastDays(now time.Time, n int) (string, []time.Time) {
	midnight := now.UTC().Truncate(24 * time.Hour)
	from := midnight.Add(-time.Duration(n) * 24 * time.Hour)
	var slots []time.Time
	for d := range n {
		slots = append(slots, from.Add(time.Duration(d)*24*time.Hour+3*time.Hour+30*time.Minute))
	}
	return from.Format(time.RFC3339) + "/" + midnight.Format(time.RFC3339), slots
}

// setBackfill sets (or, with "", removes) the backfill annotation, as kubectl annotate does.
func (f *fixture) setBackfill(t *testing.T, sj *v1alpha1.ScheduledJob, value string) {
	t.Helper()
	before := sj.DeepCopy()
	if value == "" {
		delete(sj.Annotations, keys.AnnotationBackfill)
	} else {
		if sj.Annotations == nil {
			sj.Annotations = map[string]string{}
		}
		sj.Annotations[keys.AnnotationBackfill] = value
	}
	if err := f.env.Client.Patch(f.env.Ctx, sj, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// backfillPasses runs up to n passes BackfillInterval apart, each after the cache caught up,
// and, once the backfill is no longer Running, one more (the last Job's watch event's).
func (f *fixture) backfillPasses(t *testing.T, sj *v1alpha1.ScheduledJob, n int) {
	t.Helper()
	for range n {
		f.reconcile(t, sj)
		f.waitJobsCached(t, sj)
		if bf := sj.Status.Backfill; bf != nil && bf.Phase != v1alpha1.BackfillRunning {
			f.reconcile(t, sj) // the pass the last Job's watch event starts: its run recorded
			return
		}
		f.clock.Step(slotplan.BackfillInterval)
	}
}

func (f *fixture) setSuspend(t *testing.T, sj *v1alpha1.ScheduledJob, suspend bool) {
	t.Helper()
	before := sj.DeepCopy()
	sj.Spec.Suspend = ptr.To(suspend)
	if err := f.env.Client.Patch(f.env.Ctx, sj, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

func jobNames(js []batchv1.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Name)
	}
	return out
}

func backfillNames(sj *v1alpha1.ScheduledJob, slots []time.Time) []string {
	var out []string
	for _, s := range slots {
		out = append(out, jobname.Backfill(sj, s))
	}
	return out
}

func TestBackfill(t *testing.T) {
	f := newFixture(t, false)

	t.Run("three slots get three Jobs with their scheduled times, recorded in the run history, and asking again runs none twice", func(t *testing.T) {
		sj := dailyReport(f.env.Namespace(t, "bf-three"), "report", "")
		f.create(t, sj)
		f.reconcile(t, sj)
		value, slots := lastDays(f.clock.Now(), 3)
		f.drainEvents()
		f.setBackfill(t, sj, value)
		f.backfillPasses(t, sj, 10)
		js := f.jobsOf(t, sj)
		if got, want := strings.Join(jobNames(js), ","), strings.Join(backfillNames(sj, slots), ","); got != want {
			t.Fatalf("jobs %s, want %s", got, want)
		}
		for i, j := range js {
			want := slots[i].Format(time.RFC3339)
			if got := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != want {
				t.Errorf("%s: %s = %q, want %q", j.Name, batchv1.CronJobScheduledTimestampAnnotation, got, want)
			}
			env := j.Spec.Template.Spec.Containers[0].Env
			if len(env) != 1 || env[0].Name != jobstate.ScheduledTimeEnv || env[0].ValueFrom == nil || !strings.Contains(env[0].ValueFrom.FieldRef.FieldPath, batchv1.CronJobScheduledTimestampAnnotation) {
				t.Errorf("%s: env %+v, want %s from the scheduled-timestamp annotation", j.Name, env, jobstate.ScheduledTimeEnv)
			}
			if j.Labels[keys.LabelCreatedBy] != Name || !metav1.IsControlledBy(&j, sj) {
				t.Errorf("%s: labels %v, owners %v: want ours, controlled by the ScheduledJob", j.Name, j.Labels, j.OwnerReferences)
			}
		}
		bf := sj.Status.Backfill
		if bf == nil || bf.Phase != v1alpha1.BackfillFinished || bf.Slots != 3 || bf.Done != 3 || bf.Created != 3 || bf.Request != value {
			t.Fatalf("status.backfill = %+v, want Finished, 3 of 3 created", bf)
		}
		if c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionBackfill); c == nil || c.Reason != slotplan.ReasonBackfillFinished {
			t.Errorf("Backfill condition = %+v, want %s", c, slotplan.ReasonBackfillFinished)
		}
		var runs []string
		for _, r := range sj.Status.Runs {
			runs = append(runs, r.JobName+"@"+r.ScheduledTime.UTC().Format(time.RFC3339))
		}
		for i, s := range slots {
			if want := backfillNames(sj, slots)[i] + "@" + s.Format(time.RFC3339); !strings.Contains(strings.Join(runs, " "), want) {
				t.Errorf("status.runs %v, want %s", runs, want)
			}
		}
		evs := strings.Join(f.drainEvents(), "\n")
		if strings.Count(evs, slotplan.ReasonSuccessfulCreate) != 3 || !strings.Contains(evs, slotplan.ReasonBackfillRunning) || !strings.Contains(evs, slotplan.ReasonBackfillFinished) {
			t.Errorf("events:\n%s\nwant BackfillRunning, 3 SuccessfulCreate, BackfillFinished", evs)
		}

		// Asked again: the same value (set again, as a GitOps tool would) runs nothing.
		f.setBackfill(t, sj, "")
		f.setBackfill(t, sj, value)
		f.backfillPasses(t, sj, 4)
		if n := len(f.jobsOf(t, sj)); n != 3 {
			t.Errorf("after asking the same again (removed, then set back): %d Jobs, want 3", n)
		}
		// A new range that covers the three days and the one before runs that one only.
		wider, widerSlots := lastDays(f.clock.Now(), 4)
		f.setBackfill(t, sj, wider)
		f.backfillPasses(t, sj, 10)
		if got, want := strings.Join(jobNames(f.jobsOf(t, sj)), ","), strings.Join(backfillNames(sj, widerSlots), ","); got != want {
			t.Errorf("after a wider request: jobs %s, want %s", got, want)
		}
		if bf := sj.Status.Backfill; bf.Phase != v1alpha1.BackfillFinished || bf.Done != 4 || bf.Created != 1 {
			t.Errorf("status.backfill = %+v, want Finished, 4 done, 1 created", bf)
		}
	})

	t.Run("a request out of bounds is refused with a condition and one Warning, and nothing runs", func(t *testing.T) {
		now := f.clock.Now().UTC()
		for i, value := range []string{
			now.Add(-time.Hour).Format(time.RFC3339) + "/" + now.Add(time.Hour).Format(time.RFC3339),              // to in the future
			now.Add(-40*24*time.Hour).Format(time.RFC3339) + "/" + now.Add(-39*24*time.Hour).Format(time.RFC3339), // too old
			"last week",
		} {
			sj := dailyReport(f.env.Namespace(t, fmt.Sprintf("bf-refused-%d", i)), "report", value)
			f.create(t, sj)
			f.clock.SetTime(now)
			f.drainEvents()
			f.reconcile(t, sj)
			f.reconcile(t, sj)
			bf := sj.Status.Backfill
			c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionBackfill)
			if bf == nil || bf.Phase != v1alpha1.BackfillRefused || c == nil || c.Status != metav1.ConditionFalse || c.Reason != slotplan.ReasonBackfillRefused || c.Message == "" {
				t.Errorf("%q: status.backfill %+v, condition %+v; want Refused, Backfill False %s with the reason", value, bf, c, slotplan.ReasonBackfillRefused)
			}
			if evs := f.drainEvents(); len(evs) != 1 || !strings.Contains(evs[0], "Warning "+slotplan.ReasonBackfillRefused) {
				t.Errorf("%q: events %q, want one %s Warning over two passes", value, evs, slotplan.ReasonBackfillRefused)
			}
			if n := len(f.jobsOf(t, sj)); n != 0 {
				t.Errorf("%q: %d Jobs, want none", value, n)
			}
		}
	})

	t.Run("under Forbid a backfill Job waits for the active one", func(t *testing.T) {
		value, slots := lastDays(f.clock.Now(), 2)
		sj := dailyReport(f.env.Namespace(t, "bf-forbid"), "report", value)
		sj.Spec.ConcurrencyPolicy = v1alpha1.ForbidConcurrent
		f.create(t, sj)
		f.backfillPasses(t, sj, 5)
		js := f.jobsOf(t, sj)
		if len(js) != 1 || js[0].Name != jobname.Backfill(sj, slots[0]) {
			t.Fatalf("jobs %v, want the first slot's only while it runs", jobNames(js))
		}
		if bf := sj.Status.Backfill; bf.Phase != v1alpha1.BackfillRunning || !strings.Contains(bf.Message, js[0].Name) {
			t.Errorf("status.backfill = %+v, want Running, waiting for %s", bf, js[0].Name)
		}
		if err := testenv.Finish(f.env.Ctx, f.env.Client, &js[0], true, f.clock.Now(), f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		f.waitJobsCached(t, sj)
		f.backfillPasses(t, sj, 5)
		if got, want := strings.Join(jobNames(f.jobsOf(t, sj)), ","), strings.Join(backfillNames(sj, slots), ","); got != want {
			t.Errorf("jobs %s, want %s", got, want)
		}
	})

	t.Run("suspended, a backfill waits, and runs once resumed", func(t *testing.T) {
		value, slots := lastDays(f.clock.Now(), 1)
		sj := dailyReport(f.env.Namespace(t, "bf-suspend"), "report", value)
		sj.Spec.Suspend = ptr.To(true)
		f.create(t, sj)
		f.backfillPasses(t, sj, 3)
		if n := len(f.jobsOf(t, sj)); n != 0 || sj.Status.Backfill != nil {
			t.Fatalf("%d Jobs, status.backfill %+v: want none while suspended", n, sj.Status.Backfill)
		}
		f.setSuspend(t, sj, false)
		f.backfillPasses(t, sj, 3)
		if js := f.jobsOf(t, sj); len(js) != 1 || js[0].Name != jobname.Backfill(sj, slots[0]) {
			t.Errorf("jobs %v after resuming, want the slot's", jobNames(js))
		}
	})
}

// The fault a backfill must survive: a process killed after any of its writes (between a Job's
// create and the status write that moves the cursor, in particular), its successor carrying on.
// Each slot's Job is created once, and the backfill finishes.
func TestABackfillRunsEachSlotOnceWhateverWriteTheProcessDiesAfter(t *testing.T) {
	f := newFixture(t, false)
	for death := 0; death <= 6; death++ {
		t.Run(fmt.Sprintf("killed after write %d", death), func(t *testing.T) {
			value, slots := lastDays(f.clock.Now(), 3)
			sj := dailyReport(f.env.Namespace(t, fmt.Sprintf("bf-kill-%d", death)), "report", value)
			// History limits 0: a finished Job is pruned as soon as that is safe, so only the
			// status can tell its slot ran.
			sj.Spec.SuccessfulJobsHistoryLimit, sj.Spec.FailedJobsHistoryLimit = ptr.To[int32](0), ptr.To[int32](0)
			f.create(t, sj)
			created := map[string][]types.UID{}
			dying := &process{writesBeforeDeath: death, created: created}
			for i := 0; i < 8 && !dying.dead(); i++ {
				_ = f.pass(t, sj, dying)
				f.finishActive(t, sj)
				f.clock.Step(slotplan.BackfillInterval)
			}
			f.rec.confirmed = statuswrite.Confirmations{} // a new process has confirmed nothing
			next := &process{writesBeforeDeath: -1, created: created}
			// Suspended meanwhile: the passes that move no cursor must not prune the Job the
			// cursor stands on (its Job is then the only trace that its slot ran).
			f.setSuspend(t, sj, true)
			for range 2 {
				if err := f.pass(t, sj, next); err != nil {
					t.Fatal(err)
				}
			}
			f.setSuspend(t, sj, false)
			for i := 0; i < 12; i++ {
				if err := f.pass(t, sj, next); err != nil {
					t.Fatal(err)
				}
				f.finishActive(t, sj)
				f.clock.Step(slotplan.BackfillInterval)
			}
			for _, name := range backfillNames(sj, slots) {
				if len(created[name]) != 1 {
					t.Errorf("%s was created %d times, want once (created: %v)", name, len(created[name]), created)
				}
			}
			if len(created) != len(slots) {
				t.Errorf("created %v, want the %d backfill Jobs only", created, len(slots))
			}
			if bf := sj.Status.Backfill; bf == nil || bf.Phase != v1alpha1.BackfillFinished || bf.Done != 3 || bf.Created != 3 {
				t.Errorf("status.backfill = %+v, want Finished, 3 of 3 created", bf)
			}
		})
	}
}
