package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

type schedulingOptions struct {
	objects int
	minutes int
	// together runs both kinds at once (each is load for the other); otherwise one after the other.
	together bool
	// kinds are the kinds measured: ScheduledJob, CronJob.
	kinds []string
}

// kindResult is how one controller kept its schedule, slot by slot.
type kindResult struct {
	slots []tally
}

// tally counts one slot (minute) of one kind, or all of them (total).
type tally struct {
	at            time.Time
	expected, ran int
	skews         []time.Duration
}

// merge adds o's counts and skews to t.
func (t *tally) merge(o tally) {
	t.expected += o.expected
	t.ran += o.ran
	t.skews = append(t.skews, o.skews...)
}

// total sums the slots.
func (k *kindResult) total() tally {
	var t tally
	for _, s := range k.slots {
		t.merge(s)
	}
	return t
}

// arrivals says how many of a slot's Jobs had appeared by a few points in time: where the tail is.
func arrivals(skews []time.Duration) string {
	var parts []string
	for _, by := range []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second, 3 * time.Second, 5 * time.Second} {
		n := 0
		for _, d := range skews {
			if d <= by {
				n++
			}
		}
		parts = append(parts, fmt.Sprintf("%d by %s", n, by))
	}
	return strings.Join(parts, ", ")
}

type schedulingResult struct {
	ours, builtin kindResult
	firstSlot     time.Time
	together      bool
}

const schedNS = "bench-scheduling"

// jobTemplate is a Job that creates no pod (suspended): the benchmark measures the scheduling
// controllers, not pod churn on a 2-core machine, and both kinds get the same template.
func jobTemplate() batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Suspend: ptr.To(true),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "run", Image: "busybox", Command: []string{"true"}}},
		}},
	}}
}

func runScheduling(ctx context.Context, e *env, o schedulingOptions) (*schedulingResult, error) {
	cs := e.cs
	if err := ensureNamespace(ctx, cs, schedNS, nil); err != nil {
		return nil, err
	}
	jobs, err := newJobObserver(ctx, cs)
	if err != nil {
		return nil, err
	}
	defer jobs.close()

	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	res := &schedulingResult{together: o.together}
	phases := [][]string{o.kinds}
	if !o.together {
		phases = nil
		for _, k := range o.kinds {
			phases = append(phases, []string{k})
		}
	}
	for _, kinds := range phases {
		first, last, usage, err := runSlots(ctx, e, dyn, o, kinds)
		if err != nil {
			return nil, err
		}
		if res.firstSlot.IsZero() {
			res.firstSlot = first
		}
		for _, kind := range kinds {
			out, prefix := &res.ours, "sj"
			if kind == "CronJob" {
				out, prefix = &res.builtin, "cj"
			}
			owners := make([]string, o.objects)
			for i := range owners {
				owners[i] = fmt.Sprintf("%s-%04d", prefix, i)
			}
			for s := first; !s.After(last); s = s.Add(time.Minute) {
				// A slot counts only if its job appeared within the minute it belongs to.
				sr := jobs.slot(schedNS, owners, s)
				out.slots = append(out.slots, sr)
				logf("%s slot %s: %d/%d ran, skew p50 %s p99 %s; arrivals: %s; CPU in the first %s: %s", kind, s.Format("15:04"), sr.ran, sr.expected,
					percentile(sr.skews, 0.5).Round(time.Millisecond), percentile(sr.skews, 0.99).Round(time.Millisecond), arrivals(sr.skews), slotWindow, usage[s])
			}
			t := out.total()
			logf("%s: %d/%d slots ran, skew p50 %s p99 %s", kind, t.ran, t.expected,
				percentile(t.skews, 0.5).Round(time.Millisecond), percentile(t.skews, 0.99).Round(time.Millisecond))
		}
	}
	return res, nil
}

var (
	sjGVR = schema.GroupVersionResource{Group: "ops.platform-operators.io", Version: "v1alpha1", Resource: "scheduledjobs"}
)

// runSlots creates o.objects objects of each kind, waits o.minutes slots, then deletes them
// (so a later phase runs alone), and returns the first and last slot measured.
func runSlots(ctx context.Context, e *env, dyn dynamic.Interface, o schedulingOptions, kinds []string) (time.Time, time.Time, map[time.Time]string, error) {
	cs := e.cs
	has := func(k string) bool { return slices.Contains(kinds, k) }
	logf("creating %d each of %v (every minute)", o.objects, kinds)
	if has("ScheduledJob") {
		if _, err := createScheduledJobs(ctx, dyn, schedNS, "sj", o.objects); err != nil {
			return time.Time{}, time.Time{}, nil, err
		}
	}
	if has("CronJob") {
		if err := parallel(ctx, o.objects, 64, func(ctx context.Context, i int) error {
			_, err := cs.BatchV1().CronJobs(schedNS).Create(ctx, &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cj-%04d", i)},
				Spec:       batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: jobTemplate()},
			}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return time.Time{}, time.Time{}, nil, err
		}
	}
	// The first slot counted is the first whole minute that starts after every object exists.
	first := time.Now().Truncate(time.Minute).Add(time.Minute)
	last := first.Add(time.Duration(o.minutes-1) * time.Minute)
	wait := time.Until(last.Add(70 * time.Second))
	logf("measuring slots %s..%s (waiting %s)", first.Format("15:04"), last.Format("15:04"), wait.Round(time.Second))
	usage := watchSlotsCPU(ctx, first, last)
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return time.Time{}, time.Time{}, nil, ctx.Err()
	}
	// Remove this phase's objects and Jobs so the next phase has the cluster to itself.
	if has("CronJob") {
		bg := metav1.DeletePropagationBackground
		if err := deleteCollection(ctx, func() error {
			return cs.BatchV1().CronJobs(schedNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
		}); err != nil {
			return time.Time{}, time.Time{}, nil, err
		}
	}
	if err := deleteScheduling(ctx, cs, dyn, schedNS); err != nil {
		return time.Time{}, time.Time{}, nil, err
	}
	return first, last, usage(), nil
}

func writeSchedulingReport(path string, r *schedulingResult, o schedulingOptions, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## ScheduledJob vs batch/v1 CronJob\n\n")
	how := "one after the other (each kind alone on the cluster, the other's objects deleted)"
	if r.together {
		how = "at the same time (each is load for the other)"
	}
	fmt.Fprintf(&b, "Measured %s: %d ScheduledJobs and %d CronJobs, all `* * * * *`, in one namespace of the same kwok cluster in the same run, %s, "+
		"for %d slots each. CronJobs are run by the cluster's own kube-controller-manager v1.36.3 with default flags; "+
		"ScheduledJobs by the manager as installed by the chart. The Job template is suspended (no pods), so the run measures the scheduling "+
		"controllers rather than pod churn on a 2-core machine. Command: `%s`.\n\n",
		time.Now().UTC().Format("2006-01-02"), o.objects, o.objects, how, o.minutes, cmd)
	fmt.Fprintf(&b, "| controller | slots that got their Job (within the minute) | creation skew p50 | p99 | target | |\n|---|---|---|---|---|---|\n")
	row := func(name string, k tally, target, verdict string) {
		frac := 0.0
		if k.expected > 0 {
			frac = float64(k.ran) / float64(k.expected)
		}
		fmt.Fprintf(&b, "| %s | %d / %d (%.1f%%) | %s | %s | %s | %s |\n", name, k.ran, k.expected, 100*math.Floor(frac*1000)/1000,
			ms(percentile(k.skews, 0.5)), ms(percentile(k.skews, 0.99)), target, verdict)
	}
	if ours := r.ours.total(); ours.expected > 0 {
		row("platform-operators ScheduledJob", ours, "every slot, p99 ≤ 2 s",
			verdict(ours.ran == ours.expected && percentile(ours.skews, 0.99) <= 2*time.Second))
	}
	if builtin := r.builtin.total(); builtin.expected > 0 {
		row("kube-controller-manager CronJob", builtin, "(reference)", "")
	}
	// Per slot, in order (slot n of one kind is not the same minute as slot n of the other when
	// they run one after the other).
	fmt.Fprintf(&b, "\nPer slot (Jobs that appeared within the minute, skew p50 / p99):\n\n| slot | ScheduledJob | CronJob |\n|---|---|---|\n")
	cell := func(k kindResult, i int) string {
		if i >= len(k.slots) {
			return ""
		}
		s := k.slots[i]
		return fmt.Sprintf("%d / %d, %s / %s", s.ran, s.expected, ms(percentile(s.skews, 0.5)), ms(percentile(s.skews, 0.99)))
	}
	for i := 0; i < max(len(r.ours.slots), len(r.builtin.slots)); i++ {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", i+1, cell(r.ours, i), cell(r.builtin, i))
	}
	fmt.Fprintf(&b, "\nSkew is the time from the slot (the Job's `batch.kubernetes.io/cronjob-scheduled-timestamp`) until the Job is visible through a watch.\n")
	return replaceSection(path, "scheduling", b.String())
}
