package main

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// scaleOptions shape the scale sweep: the SecretSync fan-out at growing namespace counts, each
// measured beside its floor in the same run.
type scaleOptions struct {
	points  []int // target namespaces at each step, ascending
	samples int   // new-namespace latency samples per step
	workers int   // the floor's concurrent writers
	// At the last step, with its SecretSync's copies in place: the unrelated Secrets, Jobs and
	// Pods the memory phase adds (0 skips that kind).
	unrelated, jobs, pods int
}

// scalePoint is one step of the sweep.
type scalePoint struct {
	namespaces                                       int
	floorCreate, floorUpdate, oursCreate, oursUpdate time.Duration
	// floorFirst and oursFirst are when the first new-source copy was visible: from the
	// floor's first write, from the source write (the manager learns of it through a watch).
	floorFirst, oursFirst time.Duration
	newNamespace          []time.Duration
	rssMiB                float64
	// liveMiB is the manager's Go heap live after its last GC when rssMiB was read; -1 when
	// its metrics do not have it.
	liveMiB float64
	// createCPU is the machine's CPU split during the manager's new-source fan-out.
	createCPU string
	// memory is the memory phase's rows (the last step only).
	memory []scaleMemory
}

// scaleMemory is the manager's memory after a restart with what the cluster holds at that point.
type scaleMemory struct {
	what            string
	rssMiB, heapMiB float64
	peakMiB         float64
	// liveMiB is the Go heap live after the last GC (go_gc_heap_live_bytes); -1 when the
	// manager's metrics do not have it.
	liveMiB float64
}

// scaleResult is the sweep's steps and what the manager ran under.
type scaleResult struct {
	points []scalePoint
	// memoryLimit is -memory-limit; limit the memory limit of the manager's cgroup in bytes (0:
	// none).
	memoryLimit string
	limit       int64
	// goMemLimit is the Go memory limit the manager ran with, from its go_gc_gomemlimit_bytes at
	// the first step, in bytes: 0 for none (math.MaxInt64), -1 when the metric is missing.
	goMemLimit int64
	// profiles is the profiler when -profile-dir is set.
	profiles *profiler
}

var secretSyncGVR = schema.GroupVersionResource{Group: "ops.platform-operators.io", Version: "v1alpha1", Resource: "secretsyncs"}

// runScale grows the target namespaces to each point in turn and measures, at each: the floor
// (before and after, the faster kept), a new SecretSync's fan-out of a new source and of its
// update, the new-namespace → copy latency, and the manager's RSS. Each step's SecretSync is
// deleted (and its copies with it) before the next.
func runScale(ctx context.Context, e *env, so scaleOptions) (*scaleResult, error) {
	cs := e.cs
	res := &scaleResult{memoryLimit: e.memoryLimit}
	if e.manager.Cgroup != nil {
		res.limit = e.manager.Cgroup.Limit
	}
	mm, err := managerMemoryMetrics(ctx, e)
	if err != nil {
		return nil, err
	}
	res.goMemLimit = mm.goMemLimit
	logf("scale: the manager's memory limit %d bytes (its cgroup's), its GOMEMLIMIT %d bytes (go_gc_gomemlimit_bytes; 0: none, -1: not exposed)", res.limit, res.goMemLimit)
	if e.profileDir != "" {
		res.profiles = &profiler{e: e, dir: e.profileDir}
	}
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	// Alone on the cluster: the secretsync scenario's SecretSync would copy into the namespaces
	// created here too.
	if err := dyn.Resource(secretSyncGVR).Delete(ctx, benchSync, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sourceNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	have := 0
	for _, n := range so.points {
		logf("scale: growing to %d target namespaces", n)
		if err := parallel(ctx, n, 64, func(ctx context.Context, i int) error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{targetLabel: "true"}}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return nil, err
		}
		have = max(have, n)
		if err := settle(ctx, cs, have); err != nil {
			return nil, err
		}
		p := scalePoint{namespaces: n}
		var floor secretSyncResult
		o := secretSyncOptions{namespaces: n, workers: so.workers}
		// Profiles (-profile-dir) start right before the window's first write and last as long
		// as the window is expected to: the floor's from the step before, the manager's the
		// floor's just measured.
		var floorProfile, oursProfile func() (wait func())
		if res.profiles != nil {
			var prev *scalePoint
			if len(res.points) > 0 {
				prev = &res.points[len(res.points)-1]
			}
			expected := estimateFloor(n, prev)
			floorProfile = func() func() { return res.profiles.start(ctx, n, "floor", expected) }
			oursProfile = func() func() { return res.profiles.start(ctx, n, "ours", floor.floorCreate) }
		}
		if err := runFloor(ctx, cs, o, fmt.Sprintf("floor-%d-a", n), &floor, floorProfile); err != nil {
			return nil, err
		}
		var memory func() error
		if n == so.points[len(so.points)-1] {
			memory = func() error { return scaleMemoryPhase(ctx, e, n, so, &p) }
		}
		if err := scaleManagerRun(ctx, e, dyn, n, so.samples, &p, memory, oursProfile); err != nil {
			return nil, err
		}
		if err := runFloor(ctx, cs, o, fmt.Sprintf("floor-%d-b", n), &floor, nil); err != nil {
			return nil, err
		}
		p.floorCreate, p.floorUpdate, p.floorFirst = floor.floorCreate, floor.floorUpdate, floor.floorFirst
		logf("scale %d: create %s vs floor %s (%.2f×), update %s vs floor %s (%.2f×), new namespace p99 %s, RSS %.1f MiB", n,
			p.oursCreate.Round(time.Millisecond), p.floorCreate.Round(time.Millisecond), p.oursCreate.Seconds()/p.floorCreate.Seconds(),
			p.oursUpdate.Round(time.Millisecond), p.floorUpdate.Round(time.Millisecond), p.oursUpdate.Seconds()/p.floorUpdate.Seconds(),
			percentile(p.newNamespace, 0.99), p.rssMiB)
		res.points = append(res.points, p)
	}
	return res, nil
}

// scaleManagerRun measures one SecretSync at n target namespaces into p, runs memory (when set)
// with its copies in place, then deletes it and waits until its copies are gone. profile, unless
// nil, profiles the new-source window (see runFloor).
func scaleManagerRun(ctx context.Context, e *env, dyn dynamic.Interface, n, samples int, p *scalePoint, memory func() error, profile func() (wait func())) error {
	cs := e.cs
	name := fmt.Sprintf("scale-%d", n)
	src := fmt.Sprintf("scale-src-%d", n)
	obs, err := newObserver(ctx, cs, keys.LabelSecretSync+"="+name)
	if err != nil {
		return err
	}
	defer obs.close()
	if err := createSecretSync(ctx, dyn, name, src, targetLabel); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sourceNS, Name: src}, Type: corev1.SecretTypeOpaque, Data: payload("v1")}
	waitProfile := func() {}
	if profile != nil {
		waitProfile = profile()
	}
	c0 := sampleCPU()
	t0 := time.Now()
	if _, err := cs.CoreV1().Secrets(sourceNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	last, err := obs.waitAll(ctx, "v1", n, 10*time.Minute)
	if err != nil {
		return err
	}
	p.oursCreate, p.oursFirst = last.Sub(t0), obs.earliest("v1").Sub(t0)
	p.createCPU = cpuSummary(c0, sampleCPU(), runtime.NumCPU())
	logf("manager (%s) v1: %s; %s", name, obs.spread("v1", t0), p.createCPU)
	waitProfile()
	time.Sleep(2 * time.Second)
	secret.Data = payload("v2")
	c0 = sampleCPU()
	t0 = time.Now()
	if _, err := cs.CoreV1().Secrets(sourceNS).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if last, err = obs.waitAll(ctx, "v2", n, 10*time.Minute); err != nil {
		return err
	}
	p.oursUpdate = last.Sub(t0)
	logf("manager (%s) v2: %s", name, cpuSummary(c0, sampleCPU(), runtime.NumCPU()))
	time.Sleep(2 * time.Second)
	for i := 0; i < samples; i++ {
		ns := fmt.Sprintf("scale-%d-new-%03d", n, i)
		t0 := time.Now()
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{targetLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		at, err := obs.waitNS(ctx, ns, "v2", 0, 30*time.Second)
		if err != nil {
			return err
		}
		p.newNamespace = append(p.newNamespace, at.Sub(t0))
	}
	time.Sleep(5 * time.Second)
	if p.rssMiB, _, err = procMemory(e.manager.Cmd.Process.Pid); err != nil {
		return err
	}
	mm, err := managerMemoryMetrics(ctx, e)
	if err != nil {
		return err
	}
	p.liveMiB = mm.heapLiveMiB
	if memory != nil {
		if err := memory(); err != nil {
			return err
		}
	}
	// Clean up: the sample namespaces (terminating ones are never targets), the SecretSync and
	// its copies, the source.
	for i := 0; i < samples; i++ {
		if err := cs.CoreV1().Namespaces().Delete(ctx, fmt.Sprintf("scale-%d-new-%03d", n, i), metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return removeSecretSync(ctx, cs, dyn, name, src)
}

// scaleMemoryPhase measures the manager's memory after a restart (a cold start lists and
// reconciles everything) at n namespaces with the SecretSync's n copies, then again as unrelated
// Secrets (in two halves), Jobs and Pods are added: none of them carries our labels, so none
// should be cached.
func scaleMemoryPhase(ctx context.Context, e *env, n int, so scaleOptions, p *scalePoint) error {
	cs := e.cs
	read := func(what string) error {
		rss, peak, err := procMemory(e.manager.Cmd.Process.Pid)
		if err != nil {
			return err
		}
		mm, err := managerMemoryMetrics(ctx, e)
		if err != nil {
			return err
		}
		logf("scale memory (%s): RSS %.1f MiB (peak %.1f MiB), heap in use %.1f MiB, live after the last GC %.1f MiB, GOMEMLIMIT %d bytes", what, rss, peak, mm.heapInuseMiB, mm.heapLiveMiB, mm.goMemLimit)
		p.memory = append(p.memory, scaleMemory{what: what, rssMiB: rss, peakMiB: peak, heapMiB: mm.heapInuseMiB, liveMiB: mm.heapLiveMiB})
		return nil
	}
	measure := func(what string) error {
		e.stopManager()
		if err := e.startManager(ctx); err != nil {
			return err
		}
		// Idle: the cold start's reconcile of n targets is done well within this.
		time.Sleep(20 * time.Second)
		return read(what)
	}
	if err := measure(fmt.Sprintf("%d namespaces, %d copies", n, n)); err != nil {
		return err
	}
	if so.unrelated > 0 {
		for _, k := range []int{so.unrelated / 2, so.unrelated} {
			if err := ensureUnrelated(ctx, cs, n, k); err != nil {
				return err
			}
			if err := measure(fmt.Sprintf("+ %d unrelated 2 KiB Secrets", k)); err != nil {
				return err
			}
		}
	}
	if so.jobs > 0 || so.pods > 0 {
		logf("creating %d unrelated Jobs (suspended) and %d Pods", so.jobs, so.pods)
		if err := parallel(ctx, so.jobs, 64, func(ctx context.Context, i int) error {
			_, err := cs.BatchV1().Jobs(nsName(i%n)).Create(ctx, unrelatedJob(i), metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if err := parallel(ctx, so.pods, 64, func(ctx context.Context, i int) error {
			_, err := cs.CoreV1().Pods(nsName(i%n)).Create(ctx, unrelatedPod(i), metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if err := measure(fmt.Sprintf("+ %d Jobs and %d Pods", so.jobs, so.pods)); err != nil {
			return err
		}
	}
	// The cold start's lists and first pass leave pages the runtime returns to the system over
	// the next minutes: the same process once it has settled.
	time.Sleep(100 * time.Second)
	return read("the same, 2 min after the restart")
}

// managerMemory is what the manager's metrics say about its memory.
type managerMemory struct {
	// heapInuseMiB is go_memstats_heap_inuse_bytes: spans holding live objects and garbage not
	// yet collected.
	heapInuseMiB float64
	// heapLiveMiB is go_gc_heap_live_bytes (runtime/metrics /gc/heap/live:bytes): what the last
	// GC marked live; -1 when the metrics do not have it.
	heapLiveMiB float64
	// goMemLimit is go_gc_gomemlimit_bytes (/gc/gomemlimit:bytes) in bytes: 0 for none
	// (math.MaxInt64), -1 when the metrics do not have it.
	goMemLimit int64
}

// managerMemoryMetrics reads the manager's memory from its /metrics. controller-runtime
// registers client_golang's Go collector with all runtime/metrics, so the live heap and the Go
// memory limit are there beside the go_memstats_* ones.
func managerMemoryMetrics(ctx context.Context, e *env) (managerMemory, error) {
	body, err := testbed.HTTPGet(ctx, "http://"+e.manager.MetricsAddr+"/metrics")
	if err != nil {
		return managerMemory{}, err
	}
	m, err := parseManagerMemory(body)
	if err != nil {
		return managerMemory{}, fmt.Errorf("the manager's metrics: %w", err)
	}
	return m, nil
}

func parseManagerMemory(metrics string) (managerMemory, error) {
	values := map[string]float64{}
	for _, line := range strings.Split(metrics, "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				values[f[0]] = v
			}
		}
	}
	m := managerMemory{heapLiveMiB: -1, goMemLimit: -1}
	inuse, ok := values["go_memstats_heap_inuse_bytes"]
	if !ok {
		return m, fmt.Errorf("no go_memstats_heap_inuse_bytes")
	}
	m.heapInuseMiB = inuse / (1 << 20)
	if v, ok := values["go_gc_heap_live_bytes"]; ok {
		m.heapLiveMiB = v / (1 << 20)
	}
	if v, ok := values["go_gc_gomemlimit_bytes"]; ok {
		m.goMemLimit = 0
		if v < float64(math.MaxInt64) {
			m.goMemLimit = int64(v)
		}
	}
	return m, nil
}

// unrelatedJob is a suspended Job (no pods) that is not ours.
func unrelatedJob(i int) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i)},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.37", Command: []string{"true"}}},
			}},
		},
	}
}

// unrelatedPod is a Pod that is not ours, bound to no node (kwok runs none for it).
func unrelatedPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i), Labels: map[string]string{"app": "unrelated"}},
		Spec: corev1.PodSpec{
			// A scheduler name nobody serves: the Pod stays Pending without scheduler churn.
			SchedulerName: "none",
			Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.37", Command: []string{"sleep", "3600"}}},
		},
	}
}

// writeScaleReport replaces the scale section of the markdown file and draws its chart.
func writeScaleReport(path, imgDir string, res *scaleResult, cmd string) error {
	pts := res.points
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	if err := drawScale(filepath.Join(imgDir, "secretsync-scale.png"), pts); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## SecretSync at scale\n\n")
	fmt.Fprintf(&b, "%s; the namespaces grow from one step to the next, each step's floor is measured in the same run "+
		"(before and after the manager, the faster kept). Command: `%s`.\n\n", measuredAsChart(), cmd)
	fmt.Fprintf(&b, "%s\n\n", memoryLimitSentence(res))
	if res.profiles != nil {
		written, failed := res.profiles.summary()
		fmt.Fprintf(&b, "CPU profiles of kube-apiserver and the manager were taken over each step's floor and new-source windows (`-profile-dir`, %d written, %d failed), "+
			"so those windows' times include what profiling costs (some CPU in both processes).\n\n", len(written), len(failed))
	}
	fmt.Fprintf(&b, "| target namespaces | new source: floor / ours | ratio | its first copy: floor / ours | source update: floor / ours | ratio | new namespace → copy p50 / p99 | manager RSS |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range pts {
		fmt.Fprintf(&b, "| %d | %s / %s | %.2f× | %s / %s | %s / %s | %.2f× | %s / %s | %.1f MiB |\n", p.namespaces,
			secs(p.floorCreate), secs(p.oursCreate), p.oursCreate.Seconds()/p.floorCreate.Seconds(), ms(p.floorFirst), ms(p.oursFirst),
			secs(p.floorUpdate), secs(p.oursUpdate), p.oursUpdate.Seconds()/p.floorUpdate.Seconds(),
			ms(percentile(p.newNamespace, 0.5)), ms(percentile(p.newNamespace, 0.99)), p.rssMiB)
	}
	fmt.Fprintf(&b, "\nTargets: at 1,000 namespaces the new-source ratio ≤ 1.25×; at 10,000 both ratios ≤ 1.5× and the new-namespace p99 ≤ 100 ms. ")
	for _, p := range pts {
		cr, ur, p99 := p.oursCreate.Seconds()/p.floorCreate.Seconds(), p.oursUpdate.Seconds()/p.floorUpdate.Seconds(), percentile(p.newNamespace, 0.99)
		switch p.namespaces {
		case 1000:
			fmt.Fprintf(&b, "1,000: new source %.2f× (%s). ", cr, verdict(cr <= 1.25))
		case 10000:
			fmt.Fprintf(&b, "10,000: new source %.2f× (%s), update %.2f× (%s), new namespace p99 %s (%s). ", cr, verdict(cr <= 1.5), ur, verdict(ur <= 1.5), ms(p99), verdict(p99 <= 100*time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "\n\n![SecretSync at scale: ratio to the floor and new-namespace p99 against target namespaces](img/secretsync-scale.png)\n\n")
	fmt.Fprintf(&b, "Where the time goes: the CPU split while the manager fanned a new source out (cores used in that window, by process):\n\n")
	for _, p := range pts {
		fmt.Fprintf(&b, "- %d namespaces: %s\n", p.namespaces, p.createCPU)
	}
	for _, p := range pts {
		if len(p.memory) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nManager memory at %d namespaces, after a restart and 20 s idle, as unrelated objects are added, and the last process again once settled (target: RSS ≤ 96 MiB, flat):\n\n", p.namespaces)
		live := !slices.ContainsFunc(p.memory, func(m scaleMemory) bool { return m.liveMiB < 0 })
		if live {
			fmt.Fprintf(&b, "| cluster holds | RSS | peak RSS | Go heap in use | Go heap live after the last GC |\n|---|---|---|---|---|\n")
		} else {
			fmt.Fprintf(&b, "| cluster holds | RSS | peak RSS | Go heap in use |\n|---|---|---|---|\n")
		}
		for _, m := range p.memory {
			fmt.Fprintf(&b, "| %s | %.1f MiB | %.1f MiB | %.1f MiB |", m.what, m.rssMiB, m.peakMiB, m.heapMiB)
			if live {
				fmt.Fprintf(&b, " %.1f MiB |", m.liveMiB)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\nGo heap in use is the manager's `go_memstats_heap_inuse_bytes` (spans holding live objects and garbage not yet collected)")
		if live {
			fmt.Fprintf(&b, "; live after the last GC is its `go_gc_heap_live_bytes`, what the last collection marked live")
		}
		fmt.Fprintf(&b, ".\n")
	}
	fmt.Fprintf(&b, "\nIts first copy: when the first copy of the new source was visible through a watch, the floor's counted from its first write, ours from the source write: "+
		"the manager learns of the source through its own watch before it plans and writes, which the floor does not.\n")
	fmt.Fprintf(&b, "\nNew-namespace latency: %d samples per step, from the namespace create until its copy is visible through a watch.\n", len(pts[0].newNamespace))
	return replaceSection(path, "secretsync-scale", b.String())
}

// memoryLimitSentence says under which memory limit the manager ran and which Go memory limit
// it set itself.
func memoryLimitSentence(res *scaleResult) string {
	var goLimit string
	switch {
	case res.goMemLimit < 0:
		goLimit = "its Go memory limit was not read (no `go_gc_gomemlimit_bytes` in its /metrics)"
	case res.goMemLimit == 0:
		goLimit = "it set no Go memory limit (GOMEMLIMIT; its `go_gc_gomemlimit_bytes` is math.MaxInt64)"
	case res.limit > 0:
		goLimit = fmt.Sprintf("it set its Go memory limit (GOMEMLIMIT) to %s, %.0f%% of that (`--memory-limit-ratio`; read from its `go_gc_gomemlimit_bytes` at the first step)",
			mib(res.goMemLimit), 100*float64(res.goMemLimit)/float64(res.limit))
	default:
		goLimit = fmt.Sprintf("its Go memory limit (GOMEMLIMIT) was %s (its `go_gc_gomemlimit_bytes` at the first step)", mib(res.goMemLimit))
	}
	switch {
	case res.limit > 0:
		return fmt.Sprintf("The manager ran in a memory cgroup of its own limited to %s, the chart's `resources.limits.memory`, as the kubelet runs its container (`-memory-limit=chart`); %s.", mib(res.limit), goLimit)
	case res.memoryLimit == "chart":
		return fmt.Sprintf("The chart's values set no memory limit, so the manager ran without one, as the kubelet would run its container; %s.", goLimit)
	}
	return fmt.Sprintf("The manager ran as a plain host process, without a memory limit (`-memory-limit=off`); %s.", goLimit)
}

func mib(bytes int64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

func drawScale(path string, pts []scalePoint) error {
	ratio := plot.New()
	ratio.Title.Text = "SecretSync fan-out: manager / floor"
	ratio.X.Label.Text = "target namespaces"
	ratio.Y.Label.Text = "ratio to the bare-client floor"
	create, update := make(plotter.XYs, len(pts)), make(plotter.XYs, len(pts))
	lat := plot.New()
	lat.Title.Text = "New namespace → copy, p99"
	lat.X.Label.Text = "target namespaces"
	lat.Y.Label.Text = "ms"
	p99 := make(plotter.XYs, len(pts))
	for i, p := range pts {
		create[i].X, create[i].Y = float64(p.namespaces), p.oursCreate.Seconds()/p.floorCreate.Seconds()
		update[i].X, update[i].Y = float64(p.namespaces), p.oursUpdate.Seconds()/p.floorUpdate.Seconds()
		p99[i].X, p99[i].Y = float64(p.namespaces), float64(percentile(p.newNamespace, 0.99).Milliseconds())
	}
	if err := addLines(ratio,
		series{"new source", create, color.RGBA{R: 30, G: 100, B: 200, A: 255}},
		series{"source update", update, color.RGBA{R: 200, G: 80, B: 30, A: 255}}); err != nil {
		return err
	}
	ratio.Y.Min = 0
	ratio.Legend.Top = true
	if err := addLines(lat, series{xys: p99}); err != nil {
		return err
	}
	lat.Y.Min = 0
	mem := plot.New()
	mem.Title.Text = "Manager memory"
	mem.X.Label.Text = "target namespaces"
	mem.Y.Label.Text = "MiB"
	rss, live, target := make(plotter.XYs, len(pts)), plotter.XYs{}, make(plotter.XYs, len(pts))
	for i, p := range pts {
		rss[i].X, rss[i].Y = float64(p.namespaces), p.rssMiB
		target[i].X, target[i].Y = float64(p.namespaces), 96
		if p.liveMiB >= 0 {
			live = append(live, plotter.XY{X: float64(p.namespaces), Y: p.liveMiB})
		}
	}
	lines := []series{{"RSS", rss, color.RGBA{R: 30, G: 100, B: 200, A: 255}}}
	if len(live) == len(pts) {
		lines = append(lines, series{"Go heap live", live, color.RGBA{R: 40, G: 150, B: 60, A: 255}})
	}
	lines = append(lines, series{"target at 10,000 (96 MiB)", target, color.RGBA{R: 160, G: 160, B: 160, A: 255}})
	if err := addLines(mem, lines...); err != nil {
		return err
	}
	mem.Y.Min = 0
	mem.Legend.Top = true
	mem.Legend.Left = true
	const width, height = 12 * vg.Centimeter, 8 * vg.Centimeter
	img := vgimg.New(3*width, height)
	left, rest := splitHorizontal(draw.New(img), width)
	middle, right := splitHorizontal(rest, width)
	ratio.Draw(left)
	lat.Draw(middle)
	mem.Draw(right)
	return savePNG(img, path)
}
