package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The busy scenario's slots beside their floor (issue 38): the same 1,000 Jobs created at one
// instant by a bare client, on the same control plane in the same cell, once as the bench's admin
// (the API server's exempt priority level, no admission policy of ours) and once with the
// manager's own ServiceAccount token (the chart's FlowSchema and priority level, and the chart's
// admission policies on the manager's writes); and what the manager and the API server report
// over each slot (creation skew, work queue wait, client requests, Priority and Fairness waits).

// jobFloorIdentities are the identities the Job floor writes as.
var jobFloorIdentities = []string{"admin", "manager"}

// jobFloorRun is one Job floor: n Jobs created at one instant.
type jobFloorRun struct {
	identity string
	// visible are the Jobs' times from the go signal until visible through the bench's watch
	// (what a ScheduledJob's skew measures from its slot).
	visible []time.Duration
	// createP50, createP99 and createLast are the writer's own times from the go signal until
	// each create returned.
	createP50, createP99, createLast time.Duration
	diag                             slotDiag
	load                             float64
}

// slotRun is one slot of the manager, with what was read over it.
type slotRun struct {
	t    tally
	diag slotDiag
	load float64
	// outcome is the slot's Jobs sorted two minutes after the last slot (-busy-together).
	outcome slotOutcomes
}

// slotDiag is what the manager's and the API server's metrics say over a window.
type slotDiag struct {
	// creates is the manager's platform_operators_scheduledjob_job_creation_skew_seconds
	// over the window: count, mean and the upper bound of the bucket holding the 99th
	// percentile (the skew until the create returned, as the manager sees it).
	creates               float64
	createMean, createP99 time.Duration
	// queueMean and workMean are the scheduledjob work queue's mean wait and mean reconcile.
	queueMean, workMean time.Duration
	// requests are the manager's rest_client_requests_total over the window, by method.
	requests map[string]float64
	// apfWait is the API server's mean Priority and Fairness queue wait per priority level
	// (requests that executed), apfCount how many; apfRejected the rejections.
	apfWait     map[string]time.Duration
	apfCount    map[string]float64
	apfRejected float64
	cpu         string
}

// metricsSnapshot is the raw text of both /metrics endpoints at one moment.
type metricsSnapshot struct{ manager, apiserver string }

func snapshotMetrics(ctx context.Context, e *env) metricsSnapshot {
	var s metricsSnapshot
	if e.manager != nil {
		s.manager, _ = testbed.HTTPGet(ctx, "http://"+e.manager.MetricsAddr+"/metrics")
	}
	if raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
		s.apiserver = string(raw)
	}
	return s
}

var promLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// promSamples calls fn for every sample of metric name (exactly that name) in text, with its
// labels.
func promSamples(text, name string, fn func(labels map[string]string, v float64)) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		labels := map[string]string{}
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			for _, m := range promLabel.FindAllStringSubmatch(rest[1:end], -1) {
				labels[m[1]] = m[2]
			}
			rest = rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // a longer name with this prefix
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		fn(labels, v)
	}
}

// promSum sums the samples of name whose labels include every pair of match.
func promSum(text, name string, match map[string]string) float64 {
	var sum float64
	promSamples(text, name, func(l map[string]string, v float64) {
		for k, want := range match {
			if l[k] != want {
				return
			}
		}
		sum += v
	})
	return sum
}

// promBy sums the samples of name by the value of label, for samples whose labels include every
// pair of match.
func promBy(text, name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	promSamples(text, name, func(l map[string]string, v float64) {
		for k, want := range match {
			if l[k] != want {
				return
			}
		}
		out[l[label]] += v
	})
	return out
}

func meanDur(sum, count float64) time.Duration {
	if count <= 0 {
		return 0
	}
	return time.Duration(sum / count * float64(time.Second))
}

// bucketP99 is the upper bound of the histogram bucket (cumulative counts by le, the
// difference between two snapshots) that holds the 99th percentile; 0 without samples.
func bucketP99(before, after map[string]float64) time.Duration {
	type b struct{ le, n float64 }
	var bs []b
	total := 0.0
	for le, n := range after {
		d := n - before[le]
		if le == "+Inf" {
			total = d
			continue
		}
		v, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		bs = append(bs, b{v, d})
	}
	if total <= 0 {
		return 0
	}
	slices.SortFunc(bs, func(x, y b) int {
		switch {
		case x.le < y.le:
			return -1
		case x.le > y.le:
			return 1
		}
		return 0
	})
	for _, x := range bs {
		if x.n >= 0.99*total {
			return time.Duration(x.le * float64(time.Second))
		}
	}
	return -1 // beyond the last finite bucket
}

// diagnose is what changed between two snapshots.
func diagnose(a, b metricsSnapshot) slotDiag {
	const skew = "platform_operators_scheduledjob_job_creation_skew_seconds"
	d := slotDiag{requests: map[string]float64{}, apfWait: map[string]time.Duration{}, apfCount: map[string]float64{}}
	sq := map[string]string{"name": "scheduledjob"}
	delta := func(text0, text1, name string, m map[string]string) float64 {
		return promSum(text1, name, m) - promSum(text0, name, m)
	}
	d.creates = delta(a.manager, b.manager, skew+"_count", nil)
	d.createMean = meanDur(delta(a.manager, b.manager, skew+"_sum", nil), d.creates)
	d.createP99 = bucketP99(promBy(a.manager, skew+"_bucket", "le", nil), promBy(b.manager, skew+"_bucket", "le", nil))
	d.queueMean = meanDur(delta(a.manager, b.manager, "workqueue_queue_duration_seconds_sum", sq), delta(a.manager, b.manager, "workqueue_queue_duration_seconds_count", sq))
	d.workMean = meanDur(delta(a.manager, b.manager, "workqueue_work_duration_seconds_sum", sq), delta(a.manager, b.manager, "workqueue_work_duration_seconds_count", sq))
	r0, r1 := promBy(a.manager, "rest_client_requests_total", "method", nil), promBy(b.manager, "rest_client_requests_total", "method", nil)
	for m, v := range r1 {
		if n := v - r0[m]; n > 0 {
			d.requests[m] = n
		}
	}
	const wait = "apiserver_flowcontrol_request_wait_duration_seconds"
	ex := map[string]string{"execute": "true"}
	s0, s1 := promBy(a.apiserver, wait+"_sum", "priority_level", ex), promBy(b.apiserver, wait+"_sum", "priority_level", ex)
	c0, c1 := promBy(a.apiserver, wait+"_count", "priority_level", ex), promBy(b.apiserver, wait+"_count", "priority_level", ex)
	for pl, c := range c1 {
		if n := c - c0[pl]; n > 0 {
			d.apfCount[pl] = n
			d.apfWait[pl] = meanDur(s1[pl]-s0[pl], n)
		}
	}
	d.apfRejected = delta(a.apiserver, b.apiserver, "apiserver_flowcontrol_rejected_requests_total", nil)
	return d
}

// String is the diagnosis in one line.
func (d slotDiag) String() string {
	var req []string
	for _, m := range slices.Sorted(mapKeys(d.requests)) {
		req = append(req, fmt.Sprintf("%s %.0f", m, d.requests[m]))
	}
	var apf []string
	for _, pl := range slices.Sorted(mapKeys(d.apfCount)) {
		apf = append(apf, fmt.Sprintf("%s %.0f req, mean wait %s", pl, d.apfCount[pl], ms(d.apfWait[pl])))
	}
	p99 := ms(d.createP99)
	if d.createP99 < 0 {
		p99 = "> 300 s"
	}
	return fmt.Sprintf("manager: %.0f slot creates, skew to the create's return mean %s, p99 ≤ %s; work queue wait mean %s, reconcile mean %s; client requests %s. API server APF: %s; rejected %.0f. CPU: %s",
		d.creates, ms(d.createMean), p99, ms(d.queueMean), ms(d.workMean), strings.Join(req, ", "), strings.Join(apf, "; "), d.apfRejected, d.cpu)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

const jobFloorCreatedBy = "bench-floor"

// busyJobFloor has the floor writer, a process of its own in cg, create n Jobs (the
// ScheduledJobs' template; as the manager, with our created-by label, which the chart's policy
// asks of the manager's Jobs and forbids to anyone else) in busyNS at one instant as identity (admin: the bench's kubeconfig; manager: the
// manager's ServiceAccount token), times each until visible through the bench's Job watch, and
// deletes them.
func busyJobFloor(ctx context.Context, e *env, cg *testbed.CPUCgroup, jobs *jobObserver, n, workers int, name, identity string) (jobFloorRun, error) {
	run := jobFloorRun{identity: identity, load: loadAvg()}
	args := []string{"-kubeconfig", filepath.Join(e.dir, "kubeconfig")}
	if identity == "manager" {
		args = []string{"-kubeconfig", filepath.Join(e.dir, "manager.kubeconfig"), "-created-by"} // testbed.RunAsChart's
	}
	self, err := os.Executable()
	if err != nil {
		return run, err
	}
	cmd := testbed.JoinCommand([]string{cg.Dir}, self, append([]string{floorWriterCommand,
		"-namespaces", strconv.Itoa(n), "-version", name, "-workers", strconv.Itoa(workers), "-jobs-in", busyNS}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return run, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return run, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return run, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		return run, floorWriterFailed("did not get ready", lines)
	}
	m0, c0 := snapshotMetrics(ctx, e), sampleCPU()
	t0 := time.Now()
	if _, err := fmt.Fprintln(stdin, "go"); err != nil {
		return run, err
	}
	pctx, cancel := context.WithDeadline(ctx, t0.Add(busyFanOutTimeout))
	defer cancel()
	seen := 0
	if err := wait.PollUntilContextCancel(pctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		for ; seen < n; seen++ {
			at, ok := jobs.at(busyNS + "/" + floorJobName(name, seen))
			if !ok {
				return false, nil
			}
			run.visible = append(run.visible, at.Sub(t0))
		}
		return true, nil
	}); err != nil {
		return run, fmt.Errorf("floor Job %s not seen in %s: %w", floorJobName(name, seen), busyFanOutTimeout, err)
	}
	if !lines.Scan() || lines.Text() != "done" {
		return run, floorWriterFailed("did not finish", lines)
	}
	if lines.Scan() {
		var last, p50, p99 int64
		if _, err := fmt.Sscanf(lines.Text(), "creates %d %d %d", &last, &p50, &p99); err == nil {
			run.createLast, run.createP50, run.createP99 = time.Duration(last), time.Duration(p50), time.Duration(p99)
		}
	}
	run.diag = diagnose(m0, snapshotMetrics(ctx, e))
	run.diag.cpu = cpuSummary(c0, sampleCPU(), runtime.NumCPU())
	if err := deleteBusyJobs(ctx, e.cs, busyFloorLabel+"="+name); err != nil {
		return run, err
	}
	return run, nil
}

func floorJobName(name string, i int) string { return fmt.Sprintf("%s-%04d", name, i) }

// deleteBusyJobs deletes busyNS's Jobs matching selector and waits (at most two minutes) until
// they are gone, then gives the cluster 5 s.
func deleteBusyJobs(ctx context.Context, cs kubernetes.Interface, selector string) error {
	bg := metav1.DeletePropagationBackground
	// Three tries, 5 s apart; a failure of the last one is left to the wait below.
	try := 0
	_ = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 5 * time.Second, Steps: 3}, func(ctx context.Context) (bool, error) {
		try++
		err := deleteCollection(ctx, func() error {
			return cs.BatchV1().Jobs(busyNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: selector})
		})
		if err != nil && ctx.Err() == nil {
			logf("busy: deleting Jobs %q (try %d): %v", selector, try, err)
		}
		return err == nil, nil
	})
	// Errors and running out of time are not fatal here: the Jobs left are counted by what follows.
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := cs.BatchV1().Jobs(busyNS).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
		return err == nil && len(left.Items) == 0, nil
	})
	time.Sleep(5 * time.Second)
	return ctx.Err()
}

// busySlots creates the every-minute ScheduledJobs, measures o.slots slots with the metrics over
// each, and deletes the ScheduledJobs and their Jobs again: they exist only while slots are
// measured, so no slot falls on a fan-out or a floor. measured is called once the slots are
// measured (and, with -busy-together, sorted), before the deletion (or when it fails earlier):
// -busy-together stops its fan-outs there, so that none runs beside the deletion.
func busySlots(ctx context.Context, e *env, dyn dynamic.Interface, jobs *jobObserver, o busyOptions, label string, firstSlot, measured func()) ([]slotRun, slotOutcomes, error) {
	var once sync.Once
	done := func() { once.Do(measured) }
	defer done()
	var outcomes slotOutcomes
	logf("busy: %s: creating %d every-minute ScheduledJobs", label, o.schedules)
	t0 := time.Now()
	owners, err := createScheduledJobs(ctx, dyn, busyNS, "sj", o.schedules)
	if err != nil {
		return nil, outcomes, err
	}
	logf("busy: %s: created in %s", label, secs(time.Since(t0)))
	defer func() {
		done()
		// A starved API server may drop the DeleteCollection (a stream error) part way: again
		// until none is left, or ScheduledJobs left behind would fire in the next cells.
		bg := metav1.DeletePropagationBackground
		for try := range 10 {
			err := deleteCollection(ctx, func() error {
				return dyn.Resource(sjGVR).Namespace(busyNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
			})
			if err == nil {
				left, lerr := dyn.Resource(sjGVR).Namespace(busyNS).List(ctx, metav1.ListOptions{Limit: 1})
				if lerr == nil && len(left.Items) == 0 {
					break
				}
				err = lerr
			}
			if ctx.Err() != nil {
				return
			}
			logf("busy: deleting the ScheduledJobs (try %d): %v", try+1, err)
			time.Sleep(5 * time.Second)
		}
		if err := deleteBusyJobs(ctx, e.cs, keys.LabelCreatedBy+"!="+jobFloorCreatedBy); err != nil {
			logf("busy: deleting the slots' Jobs: %v", err)
		}
	}()
	var runs []slotRun
	// The first slot at least 20 s away: every ScheduledJob seen and its first status written.
	slot := nextSlot(20 * time.Second)
	for range o.slots {
		logf("busy: %s: waiting for the slot %s", label, slot.Format("15:04"))
		if !sleepUntil(ctx, slot.Add(-3*time.Second)) {
			return runs, outcomes, ctx.Err()
		}
		firstSlot()
		m0, c0 := snapshotMetrics(ctx, e), sampleCPU()
		if !sleepUntil(ctx, slot.Add(25*time.Second)) {
			return runs, outcomes, ctx.Err()
		}
		t := jobs.slot(busyNS, owners, slot)
		if t.ran < t.expected {
			// The rest of the minute: a Job that comes within it still counts.
			if !sleepUntil(ctx, slot.Add(58*time.Second)) {
				return runs, outcomes, ctx.Err()
			}
			t = jobs.slot(busyNS, owners, slot)
		}
		r := slotRun{t: t, diag: diagnose(m0, snapshotMetrics(ctx, e)), load: loadAvg()}
		r.diag.cpu = cpuSummary(c0, sampleCPU(), runtime.NumCPU())
		runs = append(runs, r)
		logf("busy: %s slot %s: %d/%d, skew min %s p50 %s p99 %s max %s; %s; load %.2f", label, slot.Format("15:04"), t.ran, t.expected,
			ms(percentile(t.skews, 0)), ms(percentile(t.skews, 0.5)), ms(percentile(t.skews, 0.99)), ms(percentile(t.skews, 1)), r.diag, r.load)
		slot = slot.Add(time.Minute)
	}
	if o.together {
		// A late Job still counts as its slot run: sort them once the last slot is two minutes
		// old (the ScheduledJobs keep running meanwhile; only the measured slots are sorted).
		last := slot.Add(-time.Minute)
		if !sleepUntil(ctx, last.Add(2*time.Minute)) {
			return runs, outcomes, ctx.Err()
		}
		for i := range runs {
			got := jobs.outcomes(busyNS, owners, runs[i].t.at)
			runs[i].outcome = got
			outcomes.add(got)
			logf("busy: %s slot %s: %d on time, %d late, %d missing", label, runs[i].t.at.Format("15:04"), got.onTime, got.late, got.missing)
		}
	}
	return runs, outcomes, nil
}

// floorSummary is a floor run in a line.
func (f jobFloorRun) String() string {
	return fmt.Sprintf("%s: visible p50 %s p99 %s last %s; creates returned p50 %s p99 %s last %s; load %.2f; %s", f.identity,
		ms(percentile(f.visible, 0.5)), ms(percentile(f.visible, 0.99)), ms(percentile(f.visible, 1)), ms(f.createP50), ms(f.createP99), ms(f.createLast), f.load, f.diag)
}

// p99s are the runs' p99 skews (slots) or visible times (floors) of one identity.
func slotP99s(rs []slotRun) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		out = append(out, percentile(r.t.skews, 0.99))
	}
	return out
}

func floorP99s(fs []jobFloorRun, identity string) []time.Duration {
	var out []time.Duration
	for _, f := range fs {
		if f.identity == identity {
			out = append(out, percentile(f.visible, 0.99))
		}
	}
	return out
}

func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return time.Duration(median(seconds(ds)) * float64(time.Second))
}

func msList(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, strconv.FormatInt(d.Milliseconds(), 10))
	}
	return strings.Join(s, ", ") + " ms"
}

// slotsNearFloor is the contended slot target: the slots' median p99 within 1 s of the median
// p99 of the bare client's Job floor, as admin and as the manager's ServiceAccount, measured in the
// same cell (on a node where the API server shares the contended cores, no client is faster than
// that floor); without a floor, the worst slot's p99 ≤ 2 s.
func slotsNearFloor(c busyCell, worst time.Duration) bool {
	if len(c.floors) == 0 {
		return worst <= 2*time.Second
	}
	sp := medianDur(slotP99s(c.slotRuns))
	return sp-medianDur(floorP99s(c.floors, "admin")) <= time.Second && sp-medianDur(floorP99s(c.floors, "manager")) <= time.Second
}

// writeSlotFloors adds the slots beside their Job floors to the busy report.
func writeSlotFloors(b *strings.Builder, r *busyResult, o busyOptions) {
	has := false
	for _, c := range r.cells {
		has = has || len(c.floors) > 0
	}
	if !has {
		return
	}
	fmt.Fprintf(b, "\n### Slot skew beside its floor\n\n")
	fmt.Fprintf(b, "Before each cell's slots, a bare client (a process in the floor's cgroup, %d writers, the manager's `--scheduledjob-workers` default) creates the same %d Jobs (the ScheduledJobs' suspended template, in their namespace) at one instant, %d times as the bench's admin (the API server's exempt priority level; of the chart's admission policies only ownership-keys, which every client's writes pass) and %d times with the manager's ServiceAccount token (the chart's FlowSchema and priority level, and its `manager-jobs` policy, as the manager's creates; these Jobs carry our created-by label as the manager's do), alternately; each Job is timed from that instant until visible through the bench's watch, as a ScheduledJob's skew is from its slot. "+
		"Then %d every-minute ScheduledJobs are created, %d slots measured, and the ScheduledJobs and Jobs deleted (they exist only then: no slot falls on a floor). p99 per run, in run order; the difference is the median of the slots' p99 minus the median of the floors' p99.\n\n",
		o.jobFloorWorkers, o.schedules, o.jobFloors, o.jobFloors, o.schedules, o.slots)
	fmt.Fprintf(b, "| CPU request | node | slot skew p50 / p99 per slot | floor as admin: p99 per run | floor as the manager's ServiceAccount: p99 per run | slots − admin floor (median p99) | slots − ServiceAccount floor | load |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.cells {
		if len(c.floors) == 0 && len(c.slotRuns) == 0 {
			continue
		}
		var sl []string
		for _, s := range c.slotRuns {
			sl = append(sl, fmt.Sprintf("%s / %s (%d/%d)", ms(percentile(s.t.skews, 0.5)), ms(percentile(s.t.skews, 0.99)), s.t.ran, s.t.expected))
		}
		sp, ap, mp := medianDur(slotP99s(c.slotRuns)), medianDur(floorP99s(c.floors, "admin")), medianDur(floorP99s(c.floors, "manager"))
		loads := "–"
		if len(c.load) > 0 {
			loads = fmt.Sprintf("%.1f–%.1f", slices.Min(c.load), slices.Max(c.load))
		}
		fmt.Fprintf(b, "| %dm | %s | %s | %s | %s | %s | %s | %s |\n", c.milli, c.mode, strings.Join(sl, ", "),
			msList(floorP99s(c.floors, "admin")), msList(floorP99s(c.floors, "manager")), ms(sp-ap), ms(sp-mp), loads)
	}
	fmt.Fprintf(b, "\nWhat the manager's and the API server's metrics said over each slot (from 3 s before it to the tally) and each floor (go to the last Job visible): the manager's `platform_operators_scheduledjob_job_creation_skew_seconds` (slot until its create returned), the scheduledjob work queue's wait and reconcile time, its client's requests by method (`rest_client_requests_total`), and the API server's Priority and Fairness queue wait per priority level (`apiserver_flowcontrol_request_wait_duration_seconds`, executed requests):\n\n")
	for _, c := range r.cells {
		for i, s := range c.slotRuns {
			fmt.Fprintf(b, "- %dm %s slot %d (skew min %s, p99 %s, max %s): %s\n", c.milli, c.mode, i+1, ms(percentile(s.t.skews, 0)), ms(percentile(s.t.skews, 0.99)), ms(percentile(s.t.skews, 1)), s.diag)
		}
		for _, f := range c.floors {
			fmt.Fprintf(b, "- %dm %s floor %s\n", c.milli, c.mode, f)
		}
	}
}
