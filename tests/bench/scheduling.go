package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

type schedulingOptions struct {
	objects int
	minutes int
}

// kindResult is how one controller kept its schedule.
type kindResult struct {
	expected, ran int
	skews         []time.Duration
}

type schedulingResult struct {
	ours, builtin kindResult
	firstSlot     time.Time
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
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedNS}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	type key struct {
		kind, owner string
		slot        int64
	}
	var mu sync.Mutex
	firstSeen := map[key]time.Duration{}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(schedNS))
	inf := f.Batch().V1().Jobs().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		now := time.Now()
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		owner := metav1.GetControllerOf(j)
		ts, err := time.Parse(time.RFC3339, j.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
		if owner == nil || err != nil {
			return
		}
		k := key{kind: owner.Kind, owner: owner.Name, slot: ts.Unix()}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := firstSeen[k]; !ok {
			firstSeen[k] = now.Sub(ts)
		}
	}}); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("job observer did not sync")
	}

	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	gvr := schema.GroupVersionResource{Group: "ops.platform-operators.io", Version: "v1alpha1", Resource: "scheduledjobs"}
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(jobTemplate()))
	if err != nil {
		return nil, err
	}
	logf("creating %d ScheduledJobs and %d CronJobs (every minute)", o.objects, o.objects)
	if err := parallel(ctx, o.objects, 64, func(ctx context.Context, i int) error {
		sj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "ScheduledJob",
			"metadata": map[string]any{"name": fmt.Sprintf("sj-%04d", i), "namespace": schedNS},
			"spec":     map[string]any{"schedule": "* * * * *", "jobTemplate": tmpl},
		}}
		if _, err := dyn.Resource(gvr).Namespace(schedNS).Create(ctx, sj, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := cs.BatchV1().CronJobs(schedNS).Create(ctx, &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cj-%04d", i)},
			Spec:       batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: jobTemplate()},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	// The first slot counted is the first whole minute that starts after every object exists.
	first := time.Now().Truncate(time.Minute).Add(time.Minute)
	last := first.Add(time.Duration(o.minutes-1) * time.Minute)
	wait := time.Until(last.Add(70 * time.Second))
	logf("measuring slots %s..%s (waiting %s)", first.Format("15:04"), last.Format("15:04"), wait.Round(time.Second))
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	res := &schedulingResult{firstSlot: first}
	mu.Lock()
	defer mu.Unlock()
	for _, kr := range []struct {
		kind, prefix string
		out          *kindResult
	}{{"ScheduledJob", "sj", &res.ours}, {"CronJob", "cj", &res.builtin}} {
		for i := 0; i < o.objects; i++ {
			for s := first; !s.After(last); s = s.Add(time.Minute) {
				kr.out.expected++
				// A slot counts only if its job appeared within the minute it belongs to.
				if d, ok := firstSeen[key{kind: kr.kind, owner: fmt.Sprintf("%s-%04d", kr.prefix, i), slot: s.Unix()}]; ok && d < time.Minute {
					kr.out.ran++
					kr.out.skews = append(kr.out.skews, d)
				}
			}
		}
		logf("%s: %d/%d slots ran, skew p50 %s p99 %s", kr.kind, kr.out.ran, kr.out.expected,
			percentile(kr.out.skews, 0.5).Round(time.Millisecond), percentile(kr.out.skews, 0.99).Round(time.Millisecond))
	}
	return res, nil
}

func writeSchedulingReport(path string, r *schedulingResult, o schedulingOptions, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## ScheduledJob vs batch/v1 CronJob\n\n")
	fmt.Fprintf(&b, "Measured %s: %d ScheduledJobs and %d CronJobs, all `* * * * *`, in one namespace of the same kwok cluster in the same run "+
		"(each is load for the other), for %d slots from %s. CronJobs are run by the cluster's own kube-controller-manager v1.36.3 with default flags; "+
		"ScheduledJobs by the manager as installed by the chart. The Job template is suspended (no pods), so the run measures the scheduling "+
		"controllers rather than pod churn on a 2-core machine. Command: `%s`.\n\n",
		time.Now().UTC().Format("2006-01-02"), o.objects, o.objects, o.minutes, r.firstSlot.UTC().Format("15:04 UTC"), cmd)
	fmt.Fprintf(&b, "| controller | slots that got their Job (within the minute) | creation skew p50 | p99 | target |\n|---|---|---|---|---|\n")
	row := func(name string, k kindResult, target string) {
		frac := 0.0
		if k.expected > 0 {
			frac = float64(k.ran) / float64(k.expected)
		}
		fmt.Fprintf(&b, "| %s | %d / %d (%.1f%%) | %s | %s | %s |\n", name, k.ran, k.expected, 100*math.Floor(frac*1000)/1000,
			ms(percentile(k.skews, 0.5)), ms(percentile(k.skews, 0.99)), target)
	}
	row("platform-operators ScheduledJob", r.ours, "every slot, p99 ≤ 2 s")
	row("kube-controller-manager CronJob", r.builtin, "(reference)")
	fmt.Fprintf(&b, "\nSkew is the time from the slot (the Job's `batch.kubernetes.io/cronjob-scheduled-timestamp`) until the Job is visible through a watch.\n")
	return replaceSection(path, "scheduling", b.String())
}
