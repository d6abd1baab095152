package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// loadOptions shape the load benchmark: ScheduledJobs at growing counts beside a bare-client
// Job-create floor, schedules and a fan-out sharing a minute, and fairness between tenants.
type loadOptions struct {
	parts     []string // which parts run: schedules, mixed, fair, requests
	schedules []int    // every-minute ScheduledJobs at each step, ascending
	minutes   int      // slots measured per step and per part
	workers   int      // the floor's concurrent writers
	// mixedSchedules ScheduledJobs and a fan-out to mixedNamespaces namespaces at the same minute.
	mixedSchedules, mixedNamespaces int
	// bigTenant ScheduledJobs in one namespace beside a single one in another.
	bigTenant int
	// A hugeBytes source fanned out to fairNamespaces namespaces beside a small one.
	hugeBytes, fairNamespaces int
	// bigRequests CopyRequests in one namespace beside a single one in another.
	bigRequests int
}

// loadStep is one ScheduledJob count beside its floor.
type loadStep struct {
	schedules int
	ours      tally
	floor     []time.Duration // per Job: from the first create to visible through a watch
	slotCPU   []string
	floorCPU  string
}

// loadMixed is a minute shared by ScheduledJobs and a fan-out.
type loadMixed struct {
	slot    time.Time
	jobs    tally
	copies  []time.Duration // per copy: from the source write to visible
	version string
}

type loadResult struct {
	steps []loadStep
	mixed []loadMixed
	// The shared minute's floor: a bare client creating the Jobs and the copies at once.
	mixedFloorJobs, mixedFloorCopies []time.Duration
	// Fairness: the small tenant's single ScheduledJob alone, then beside the big tenant's.
	smallAlone, smallBeside []time.Duration
	big                     tally
	// The small source's fan-out alone and with the huge source's fan-out started just before.
	smallSyncAlone, smallSyncBeside, hugeSync time.Duration
	// requests is the CopyRequest part (nil when not run).
	requests *requestResult
}

// jobObserver records when each Job in the cluster was first seen through a watch, by
// "namespace/name" and, for Jobs with a controller and a scheduled-time annotation, by
// "namespace/owner@slot".
type jobObserver struct {
	mu   sync.Mutex
	seen map[string]time.Time
	stop chan struct{}
}

func newJobObserver(ctx context.Context, cs kubernetes.Interface) (*jobObserver, error) {
	o := &jobObserver{seen: map[string]time.Time{}, stop: make(chan struct{})}
	inf := informers.NewSharedInformerFactory(cs, 0).Batch().V1().Jobs().Informer()
	record := func(obj any) {
		now := time.Now()
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		keys := []string{j.Namespace + "/" + j.Name}
		if owner := metav1.GetControllerOf(j); owner != nil {
			if ts, err := time.Parse(time.RFC3339, j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]); err == nil {
				keys = append(keys, slotKey(j.Namespace, owner.Name, ts))
			}
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, k := range keys {
			if _, ok := o.seen[k]; !ok {
				o.seen[k] = now
			}
		}
	}
	if err := runRecording(ctx, inf, o.stop, record); err != nil {
		return nil, fmt.Errorf("job observer: %w", err)
	}
	return o, nil
}

func slotKey(namespace, owner string, slot time.Time) string {
	return fmt.Sprintf("%s/%s@%d", namespace, owner, slot.Unix())
}

func (o *jobObserver) close() { close(o.stop) }

func (o *jobObserver) at(key string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.seen[key]
	return t, ok
}

// slotOutcomes sorts one slot's ScheduledJobs by when their Job appeared: within the slot's
// minute (onTime), after it (late: the slot ran, late), or not yet (missing).
type slotOutcomes struct{ onTime, late, missing int }

func (s *slotOutcomes) add(o slotOutcomes) {
	s.onTime, s.late, s.missing = s.onTime+o.onTime, s.late+o.late, s.missing+o.missing
}

// outcomes sorts the Jobs of owners in namespace for the slot as seen so far.
func (o *jobObserver) outcomes(namespace string, owners []string, slot time.Time) slotOutcomes {
	var out slotOutcomes
	for _, owner := range owners {
		at, ok := o.at(slotKey(namespace, owner, slot))
		switch {
		case !ok:
			out.missing++
		case at.Sub(slot) < time.Minute:
			out.onTime++
		default:
			out.late++
		}
	}
	return out
}

// slot tallies the Jobs of owners in namespace for the slot: a Job counts if it appeared
// within the minute.
func (o *jobObserver) slot(namespace string, owners []string, slot time.Time) tally {
	t := tally{at: slot}
	for _, owner := range owners {
		t.expected++
		if at, ok := o.at(slotKey(namespace, owner, slot)); ok && at.Sub(slot) < time.Minute {
			t.ran++
			t.skews = append(t.skews, at.Sub(slot))
		}
	}
	return t
}

func runLoad(ctx context.Context, e *env, o loadOptions) (*loadResult, error) {
	cs := e.cs
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	// Alone on the cluster: the secretsync scenario's SecretSync would copy into the namespaces
	// created here.
	if err := dyn.Resource(secretSyncGVR).Delete(ctx, benchSync, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	for _, ns := range []string{schedNS, sourceNS, "load-tenant-a", "load-tenant-b"} {
		if err := ensureNamespace(ctx, cs, ns, nil); err != nil {
			return nil, err
		}
	}
	jobs, err := newJobObserver(ctx, cs)
	if err != nil {
		return nil, err
	}
	defer jobs.close()
	res := &loadResult{}
	if slices.Contains(o.parts, "schedules") {
		for _, n := range o.schedules {
			step, err := loadScheduleStep(ctx, e, dyn, jobs, n, o)
			if err != nil {
				return nil, err
			}
			res.steps = append(res.steps, step)
		}
	}
	if slices.Contains(o.parts, "mixed") {
		if res.mixed, err = loadMixedMinutes(ctx, e, dyn, jobs, o, res); err != nil {
			return nil, err
		}
	}
	if slices.Contains(o.parts, "fair") {
		if err := loadFairSchedules(ctx, cs, dyn, jobs, o, res); err != nil {
			return nil, err
		}
		if err := loadFairSources(ctx, e, dyn, o, res); err != nil {
			return nil, err
		}
	}
	if slices.Contains(o.parts, "requests") {
		if res.requests, err = loadFairRequests(ctx, cs, dyn, o.bigRequests); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string, labels map[string]string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createScheduledJobs creates every-minute ScheduledJobs named prefix-0000... in namespace and
// returns their names.
func createScheduledJobs(ctx context.Context, dyn dynamic.Interface, namespace, prefix string, n int) ([]string, error) {
	tmpl, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(jobTemplate()))
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return names, parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		sj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "ScheduledJob",
			"metadata": map[string]any{"name": names[i], "namespace": namespace},
			"spec":     map[string]any{"schedule": "* * * * *", "jobTemplate": tmpl},
		}}
		_, err := dyn.Resource(sjGVR).Namespace(namespace).Create(ctx, sj, metav1.CreateOptions{})
		return err
	})
}

// deleteCollection runs a DeleteCollection, again when the API server answers that it ran out of
// time: with thousands of Jobs on 2 cores it may ("the server was unable to return a response in
// the time allotted"), while it goes on deleting, and a repeat deletes what is left. Any other
// error, or a timeout after five minutes of repeats, is returned.
func deleteCollection(ctx context.Context, del func() error) error {
	return repeatOnTimeout(ctx, 5*time.Second, 5*time.Minute, del)
}

// repeatOnTimeout runs del until it returns anything but an API server timeout, pausing between
// runs, for at most limit.
func repeatOnTimeout(ctx context.Context, pause, limit time.Duration, del func() error) error {
	var err error
	perr := wait.PollUntilContextTimeout(ctx, pause, limit, true, func(context.Context) (bool, error) {
		err = del()
		if !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) {
			return true, nil
		}
		logf("a DeleteCollection timed out on the API server (%v); repeating it", err)
		return false, nil
	})
	if perr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	// Done, or limit passed: the last run's answer (an API server timeout then).
	return err
}

// deleteScheduling deletes the ScheduledJobs and Jobs of the namespaces and gives the cluster
// a quiet moment.
func deleteScheduling(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, namespaces ...string) error {
	bg := metav1.DeletePropagationBackground
	for _, ns := range namespaces {
		if err := deleteCollection(ctx, func() error {
			return dyn.Resource(sjGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
		}); err != nil {
			return err
		}
		if err := deleteCollection(ctx, func() error {
			return cs.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
		}); err != nil {
			return err
		}
	}
	time.Sleep(20 * time.Second)
	return nil
}

// nextSlot is the first whole minute at least lead from now.
func nextSlot(lead time.Duration) time.Time {
	return time.Now().Add(lead).Truncate(time.Minute).Add(time.Minute)
}

// loadScheduleStep measures n every-minute ScheduledJobs for o.minutes slots between two runs of
// the floor (a bare client creating n Jobs at once; the run with the lower p99 is kept).
func loadScheduleStep(ctx context.Context, e *env, dyn dynamic.Interface, jobs *jobObserver, n int, o loadOptions) (loadStep, error) {
	step := loadStep{schedules: n}
	floor := func(run string) error {
		lat, cpu, err := jobFloor(ctx, e.cs, jobs, fmt.Sprintf("floor-%d-%s", n, run), n, o.workers)
		if err != nil {
			return err
		}
		logf("job floor %d (%s): p50 %s p99 %s; %s", n, run, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond), cpu)
		if step.floor == nil || percentile(lat, 0.99) < percentile(step.floor, 0.99) {
			step.floor, step.floorCPU = lat, cpu
		}
		return nil
	}
	if err := floor("a"); err != nil {
		return step, err
	}
	logf("load: %d every-minute ScheduledJobs", n)
	names, err := createScheduledJobs(ctx, dyn, schedNS, "load", n)
	if err != nil {
		return step, err
	}
	first := nextSlot(5 * time.Second)
	last := first.Add(time.Duration(o.minutes-1) * time.Minute)
	usage := watchSlotsCPU(ctx, first, last)
	if !sleepUntil(ctx, last.Add(70*time.Second)) {
		return step, ctx.Err()
	}
	cpu := usage()
	for s := first; !s.After(last); s = s.Add(time.Minute) {
		t := jobs.slot(schedNS, names, s)
		logf("load %d slot %s: %d/%d ran, skew p50 %s p99 %s; %s", n, s.Format("15:04"), t.ran, t.expected,
			percentile(t.skews, 0.5).Round(time.Millisecond), percentile(t.skews, 0.99).Round(time.Millisecond), cpu[s])
		step.ours.merge(t)
		step.slotCPU = append(step.slotCPU, cpu[s])
	}
	if err := deleteScheduling(ctx, e.cs, dyn, schedNS); err != nil {
		return step, err
	}
	if err := floor("b"); err != nil {
		return step, err
	}
	return step, nil
}

// jobFloor has a bare client create n Jobs (the ScheduledJobs' template) with the floor's
// concurrency and returns each one's time from the first create until it is visible through a
// watch; the Jobs are deleted again.
func jobFloor(ctx context.Context, cs kubernetes.Interface, jobs *jobObserver, name string, n, workers int) ([]time.Duration, string, error) {
	tmpl := jobTemplate()
	c0 := sampleCPU()
	t0 := time.Now()
	if err := parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		_, err := cs.BatchV1().Jobs(schedNS).Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", name, i), Labels: map[string]string{floorLabel: name}},
			Spec:       tmpl.Spec,
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, "", err
	}
	lat := make([]time.Duration, 0, n)
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for len(lat) < n {
			at, ok := jobs.at(fmt.Sprintf("%s/%s-%04d", schedNS, name, len(lat)))
			if !ok {
				return false, nil
			}
			lat = append(lat, at.Sub(t0))
		}
		return true, nil
	}); err != nil {
		return nil, "", fmt.Errorf("floor job %s-%04d not seen: %w", name, len(lat), err)
	}
	cpu := cpuSummary(c0, sampleCPU(), runtime.NumCPU())
	bg := metav1.DeletePropagationBackground
	if err := deleteCollection(ctx, func() error {
		return cs.BatchV1().Jobs(schedNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: floorLabel + "=" + name})
	}); err != nil {
		return nil, "", err
	}
	time.Sleep(10 * time.Second)
	return lat, cpu, nil
}

// createSecretSync creates a SecretSync of the source in sourceNS to the namespaces with label.
func createSecretSync(ctx context.Context, dyn dynamic.Interface, name, source, label string) error {
	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"source": map[string]any{"namespace": sourceNS, "name": source},
			"target": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{label: "true"}}},
		},
	}}
	_, err := dyn.Resource(secretSyncGVR).Create(ctx, ss, metav1.CreateOptions{})
	return err
}

// removeSecretSync deletes a SecretSync and its source and waits until its copies are gone.
func removeSecretSync(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, name, source string) error {
	if err := dyn.Resource(secretSyncGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := cs.CoreV1().Secrets(sourceNS).Delete(ctx, source, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: keys.LabelSecretSync + "=" + name, Limit: 1})
		return err == nil && len(left.Items) == 0, err
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("copies of %s still there after 5 minutes", name)
	}
	return err
}

// writeSource creates the source (first version) or updates it, returning when the call did.
func writeSource(ctx context.Context, cs kubernetes.Interface, name, version string, data map[string][]byte, create bool) (time.Time, error) {
	data[versionKey] = []byte(version)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sourceNS, Name: name}, Type: corev1.SecretTypeOpaque, Data: data}
	t0 := time.Now()
	var err error
	if create {
		_, err = cs.CoreV1().Secrets(sourceNS).Create(ctx, s, metav1.CreateOptions{})
	} else {
		_, err = cs.CoreV1().Secrets(sourceNS).Update(ctx, s, metav1.UpdateOptions{})
	}
	return t0, err
}

// copyLatencies are the times from t0 until each namespace showed version.
func (o *observer) copyLatencies(version string, t0 time.Time) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for _, at := range o.first[version] {
		out = append(out, at.Sub(t0))
	}
	return out
}

// loadMixedMinutes runs o.mixedSchedules every-minute ScheduledJobs and, at each slot, writes
// a new version of a source fanned out to o.mixedNamespaces namespaces (created, then updated).
func loadMixedMinutes(ctx context.Context, e *env, dyn dynamic.Interface, jobs *jobObserver, o loadOptions, res *loadResult) ([]loadMixed, error) {
	cs := e.cs
	logf("load: %d ScheduledJobs and a fan-out to %d namespaces at the same minutes", o.mixedSchedules, o.mixedNamespaces)
	if err := parallel(ctx, o.mixedNamespaces, 64, func(ctx context.Context, i int) error {
		return ensureNamespace(ctx, cs, nsName(i), map[string]string{targetLabel: "true"})
	}); err != nil {
		return nil, err
	}
	if err := settle(ctx, cs, o.mixedNamespaces); err != nil {
		return nil, err
	}
	var err error
	if res.mixedFloorJobs, res.mixedFloorCopies, err = mixedFloor(ctx, cs, jobs, o); err != nil {
		return nil, err
	}
	const name, source = "load-mixed", "load-mixed-src"
	obs, err := newObserver(ctx, cs, keys.LabelSecretSync+"="+name)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	if err := createSecretSync(ctx, dyn, name, source, targetLabel); err != nil {
		return nil, err
	}
	names, err := createScheduledJobs(ctx, dyn, schedNS, "mix", o.mixedSchedules)
	if err != nil {
		return nil, err
	}
	first := nextSlot(5 * time.Second)
	var out []loadMixed
	for i := 0; i < o.minutes; i++ {
		m := loadMixed{slot: first.Add(time.Duration(i) * time.Minute), version: fmt.Sprintf("mixed-%d", i)}
		if !sleepUntil(ctx, m.slot) {
			return nil, ctx.Err()
		}
		t0, err := writeSource(ctx, cs, source, m.version, payload(""), i == 0)
		if err != nil {
			return nil, err
		}
		if _, err := obs.waitAll(ctx, m.version, o.mixedNamespaces, 2*time.Minute); err != nil {
			return nil, err
		}
		m.copies = obs.copyLatencies(m.version, t0)
		out = append(out, m)
	}
	if !sleepUntil(ctx, first.Add(time.Duration(o.minutes-1)*time.Minute+70*time.Second)) {
		return nil, ctx.Err()
	}
	for i := range out {
		out[i].jobs = jobs.slot(schedNS, names, out[i].slot)
		logf("mixed slot %s: ScheduledJobs %d/%d, skew p99 %s; copies %d, p99 %s", out[i].slot.Format("15:04"), out[i].jobs.ran, out[i].jobs.expected,
			percentile(out[i].jobs.skews, 0.99).Round(time.Millisecond), len(out[i].copies), percentile(out[i].copies, 0.99).Round(time.Millisecond))
	}
	if err := deleteScheduling(ctx, cs, dyn, schedNS); err != nil {
		return nil, err
	}
	return out, removeSecretSync(ctx, cs, dyn, name, source)
}

// mixedFloor is the floor of a shared minute: a bare client creates o.mixedSchedules Jobs and
// one Secret in each of o.mixedNamespaces namespaces at the same moment, each half with the
// floor's writers, and returns each one's time until it is visible through a watch. On 2 cores
// the API server serves both halves at once, as it does for the manager.
func mixedFloor(ctx context.Context, cs kubernetes.Interface, jobs *jobObserver, o loadOptions) (jobLat, copyLat []time.Duration, err error) {
	const name = "mixed-floor"
	obs, err := newObserver(ctx, cs, floorLabel+"="+name)
	if err != nil {
		return nil, nil, err
	}
	defer obs.close()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		jobLat, _, err = jobFloor(gctx, cs, jobs, name, o.mixedSchedules, o.workers)
		return err
	})
	g.Go(func() error {
		t0 := time.Now()
		if err := parallel(gctx, o.mixedNamespaces, o.workers, func(ctx context.Context, i int) error {
			_, err := cs.CoreV1().Secrets(nsName(i)).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: nsName(i), Name: name, Labels: map[string]string{floorLabel: name}},
				Type:       corev1.SecretTypeOpaque, Data: payload(name),
			}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if _, err := obs.waitAll(gctx, name, o.mixedNamespaces, 2*time.Minute); err != nil {
			return err
		}
		copyLat = obs.copyLatencies(name, t0)
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	logf("mixed floor: Jobs p99 %s, copies p99 %s", percentile(jobLat, 0.99).Round(time.Millisecond), percentile(copyLat, 0.99).Round(time.Millisecond))
	return jobLat, copyLat, parallel(ctx, o.mixedNamespaces, o.workers, func(ctx context.Context, i int) error {
		return cs.CoreV1().Secrets(nsName(i)).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// loadFairSchedules measures a small tenant's single ScheduledJob alone, then beside a big
// tenant's o.bigTenant ones sharing its slots.
func loadFairSchedules(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, jobs *jobObserver, o loadOptions, res *loadResult) error {
	const small, big = "load-tenant-b", "load-tenant-a"
	logf("load: fairness, one ScheduledJob alone, then beside another tenant's %d", o.bigTenant)
	smallNames, err := createScheduledJobs(ctx, dyn, small, "small", 1)
	if err != nil {
		return err
	}
	slots := func() ([]time.Time, error) {
		first := nextSlot(5 * time.Second)
		var out []time.Time
		for i := 0; i < o.minutes; i++ {
			out = append(out, first.Add(time.Duration(i)*time.Minute))
		}
		if !sleepUntil(ctx, out[len(out)-1].Add(70*time.Second)) {
			return nil, ctx.Err()
		}
		return out, nil
	}
	alone, err := slots()
	if err != nil {
		return err
	}
	for _, s := range alone {
		res.smallAlone = append(res.smallAlone, jobs.slot(small, smallNames, s).skews...)
	}
	bigNames, err := createScheduledJobs(ctx, dyn, big, "big", o.bigTenant)
	if err != nil {
		return err
	}
	beside, err := slots()
	if err != nil {
		return err
	}
	for _, s := range beside {
		t := jobs.slot(small, smallNames, s)
		b := jobs.slot(big, bigNames, s)
		logf("fair slot %s: the single one %v; the big tenant's %d/%d, p50 %s p99 %s", s.Format("15:04"), t.skews, b.ran, b.expected,
			percentile(b.skews, 0.5).Round(time.Millisecond), percentile(b.skews, 0.99).Round(time.Millisecond))
		if t.ran == 0 {
			// A missed run counts as a whole minute late.
			t.skews = append(t.skews, time.Minute)
		}
		res.smallBeside = append(res.smallBeside, t.skews...)
		res.big.merge(b)
	}
	return deleteScheduling(ctx, cs, dyn, small, big)
}

// loadFairSources times a small source's fan-out to o.fairNamespaces namespaces alone, then
// again right after a o.hugeBytes source's fan-out to the same namespaces was started.
func loadFairSources(ctx context.Context, e *env, dyn dynamic.Interface, o loadOptions, res *loadResult) error {
	cs := e.cs
	const label = "bench.platform-operators.io/fair"
	logf("load: a small source alone, then beside a %d-byte one, to %d namespaces", o.hugeBytes, o.fairNamespaces)
	if err := parallel(ctx, o.fairNamespaces, 64, func(ctx context.Context, i int) error {
		return ensureNamespace(ctx, cs, fmt.Sprintf("load-fair-%04d", i), map[string]string{label: "true"})
	}); err != nil {
		return err
	}
	if err := settle(ctx, cs, o.fairNamespaces); err != nil {
		return err
	}
	const small, huge = "load-small", "load-huge"
	smallObs, err := newObserver(ctx, cs, keys.LabelSecretSync+"="+small)
	if err != nil {
		return err
	}
	defer smallObs.close()
	hugeObs, err := newObserver(ctx, cs, keys.LabelSecretSync+"="+huge)
	if err != nil {
		return err
	}
	defer hugeObs.close()
	for _, name := range []string{small, huge} {
		if err := createSecretSync(ctx, dyn, name, name+"-src", label); err != nil {
			return err
		}
	}
	time.Sleep(2 * time.Second)
	t0, err := writeSource(ctx, cs, small+"-src", "small-1", payload(""), true)
	if err != nil {
		return err
	}
	last, err := smallObs.waitAll(ctx, "small-1", o.fairNamespaces, 2*time.Minute)
	if err != nil {
		return err
	}
	res.smallSyncAlone = last.Sub(t0)
	time.Sleep(5 * time.Second)
	blob := make([]byte, o.hugeBytes)
	_, _ = rand.Read(blob)
	h0, err := writeSource(ctx, cs, huge+"-src", "huge-1", map[string][]byte{"blob": blob}, true)
	if err != nil {
		return err
	}
	t0, err = writeSource(ctx, cs, small+"-src", "small-2", payload(""), false)
	if err != nil {
		return err
	}
	if last, err = smallObs.waitAll(ctx, "small-2", o.fairNamespaces, 5*time.Minute); err != nil {
		return err
	}
	res.smallSyncBeside = last.Sub(t0)
	if last, err = hugeObs.waitAll(ctx, "huge-1", o.fairNamespaces, 10*time.Minute); err != nil {
		return err
	}
	res.hugeSync = last.Sub(h0)
	logf("fair sources: small alone %s, beside the huge one %s; the huge one %s", res.smallSyncAlone.Round(time.Millisecond),
		res.smallSyncBeside.Round(time.Millisecond), res.hugeSync.Round(time.Millisecond))
	for _, name := range []string{small, huge} {
		if err := removeSecretSync(ctx, cs, dyn, name, name+"-src"); err != nil {
			return err
		}
	}
	return nil
}

// writeLoadReport replaces the sections of the parts that ran, each with its own date and
// command, and draws the schedules' chart: section load (the heading and the schedules steps),
// load-mixed (the shared minute) and load-fair (fairness). A part not run leaves its section as
// it was, so `-load-parts=fair` does not erase the other parts' results.
func writeLoadReport(path, imgDir string, r *loadResult, o loadOptions, cmd string) error {
	measured := measuredAsChart()
	if slices.Contains(o.parts, "schedules") {
		if err := writeLoadSchedules(path, imgDir, r, o, measured, cmd); err != nil {
			return err
		}
	}
	if slices.Contains(o.parts, "mixed") {
		if err := replaceSection(path, "load-mixed", loadMixedSection(r, o, measured, cmd)); err != nil {
			return err
		}
	}
	if slices.Contains(o.parts, "fair") {
		if err := replaceSection(path, "load-fair", loadFairSection(r, o, measured, cmd)); err != nil {
			return err
		}
	}
	if slices.Contains(o.parts, "requests") {
		if err := replaceSection(path, "load-requests", loadRequestsSection(r.requests, measured, cmd)); err != nil {
			return err
		}
	}
	return nil
}

// writeLoadSchedules writes section load: the heading of the load benchmark and the schedules
// steps beside their floor.
func writeLoadSchedules(path, imgDir string, r *loadResult, o loadOptions, measured, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## ScheduledJob at scale, both kinds at once, fairness\n\n")
	fmt.Fprintf(&b, "Every ScheduledJob is `* * * * *` with a suspended Job template. Each part of the load benchmark (`-load-parts`) rewrites only its own table, so each says when and how it was measured.\n\n")
	fmt.Fprintf(&b, "Every-minute ScheduledJobs at growing counts beside their floor. %s; %d slots per step. Command: `%s`.\n\n", measured, o.minutes, cmd)
	if len(r.steps) > 0 {
		if err := os.MkdirAll(imgDir, 0o755); err != nil {
			return err
		}
		if err := drawLoad(filepath.Join(imgDir, "scheduledjob-scale.png"), r.steps); err != nil {
			return err
		}
		fmt.Fprintf(&b, "| every-minute ScheduledJobs | slots run | skew p50 / p99 | floor p50 / p99 (bare client, %d writers, same Jobs) | p99 ratio | target | |\n|---|---|---|---|---|---|---|\n", o.workers)
		for _, s := range r.steps {
			p99, f99 := percentile(s.ours.skews, 0.99), percentile(s.floor, 0.99)
			ratio := p99.Seconds() / f99.Seconds()
			target, v := "(reference)", ""
			if s.schedules >= 3000 {
				target, v = "every slot, p99 ≤ 1.5× floor", verdict(s.ours.ran == s.ours.expected && ratio <= 1.5)
			}
			fmt.Fprintf(&b, "| %d | %d / %d | %s / %s | %s / %s | %.2f× | %s | %s |\n", s.schedules, s.ours.ran, s.ours.expected,
				ms(percentile(s.ours.skews, 0.5)), ms(p99), ms(percentile(s.floor, 0.5)), ms(f99), ratio, target, v)
		}
		fmt.Fprintf(&b, "\n![ScheduledJob creation p99 and the bare-client floor against the number of every-minute schedules](img/scheduledjob-scale.png)\n\n")
		fmt.Fprintf(&b, "The floor creates the same number of Jobs at once from a bare client and times each from the first create until visible through a watch; "+
			"a ScheduledJob's skew is from its slot until its Job is visible. CPU in the first %s of each slot, and during the floor:\n\n", slotWindow)
		for _, s := range r.steps {
			fmt.Fprintf(&b, "- %d: slots %s; floor %s\n", s.schedules, strings.Join(s.slotCPU, " | "), s.floorCPU)
		}
	}
	return replaceSection(path, "load", b.String())
}

// loadMixedSection is section load-mixed: ScheduledJobs and a fan-out at the same minutes.
func loadMixedSection(r *loadResult, o loadOptions, measured, cmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Schedules and a fan-out at the same minute\n\n")
	fmt.Fprintf(&b, "%s; %d slots. Command: `%s`.\n\n", measured, o.minutes, cmd)
	fmt.Fprintf(&b, "%d ScheduledJobs and a SecretSync fan-out to %d namespaces at the same minutes (the source created at the first slot, updated at the next; target: both p99 ≤ 2 s):\n\n", o.mixedSchedules, o.mixedNamespaces)
	fj, fc := percentile(r.mixedFloorJobs, 0.99), percentile(r.mixedFloorCopies, 0.99)
	fmt.Fprintf(&b, "| slot | ScheduledJobs run | skew p99 (floor) | ratio | copies | copy p99 from the source write (floor) | ratio | |\n|---|---|---|---|---|---|---|---|\n")
	for i, m := range r.mixed {
		jp, cp := percentile(m.jobs.skews, 0.99), percentile(m.copies, 0.99)
		fmt.Fprintf(&b, "| %d | %d / %d | %s (%s) | %.2f× | %d | %s (%s) | %.2f× | %s |\n", i+1, m.jobs.ran, m.jobs.expected, ms(jp), ms(fj), jp.Seconds()/fj.Seconds(),
			len(m.copies), ms(cp), ms(fc), cp.Seconds()/fc.Seconds(),
			verdict(m.jobs.ran == m.jobs.expected && jp <= 2*time.Second && cp <= 2*time.Second))
	}
	fmt.Fprintf(&b, "\nThe floor: a bare client creates the %d Jobs and the %d Secrets at the same moment (%d writers each), each timed until visible through a watch: Jobs p50 %s / p99 %s, Secrets p50 %s / p99 %s. "+
		"When the floor itself is over 2 s, the API server on this machine, not the manager, sets the pace.\n",
		o.mixedSchedules, o.mixedNamespaces, o.workers, ms(percentile(r.mixedFloorJobs, 0.5)), ms(fj), ms(percentile(r.mixedFloorCopies, 0.5)), ms(fc))
	return b.String()
}

// loadFairSection is section load-fair: a tenant's single schedule beside another's many, a
// small source beside a huge one.
func loadFairSection(r *loadResult, o loadOptions, measured, cmd string) string {
	var b strings.Builder
	worst := slices.Max(append([]time.Duration{0}, r.smallBeside...))
	fmt.Fprintf(&b, "### Fairness\n\n")
	fmt.Fprintf(&b, "%s; %d slots alone and %d beside. Command: `%s`.\n\n", measured, o.minutes, o.minutes, cmd)
	fmt.Fprintf(&b, "Targets: the single schedule not delayed by more than 1 s; the small source not stalled behind the huge one.\n\n")
	fmt.Fprintf(&b, "| case | result | |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| one tenant's single ScheduledJob, alone (skew per slot) | %s | |\n", durations(r.smallAlone))
	fmt.Fprintf(&b, "| the same beside another tenant's %d at the same slots (skew per slot) | %s | %s |\n", o.bigTenant, durations(r.smallBeside), verdict(worst <= time.Second))
	fmt.Fprintf(&b, "| the other tenant's %d (runs, skew p50 / p99) | %d / %d, %s / %s | |\n", o.bigTenant, r.big.ran, r.big.expected, ms(percentile(r.big.skews, 0.5)), ms(percentile(r.big.skews, 0.99)))
	fmt.Fprintf(&b, "| a 2 KiB source's fan-out to %d namespaces, alone | %s | |\n", o.fairNamespaces, ms(r.smallSyncAlone))
	fmt.Fprintf(&b, "| the same, its update written right after a %d KiB source's first write to the same namespaces (target: ≤ 2 s, as a fan-out sharing its minute) | %s | %s |\n", o.hugeBytes/1024, ms(r.smallSyncBeside),
		verdict(r.smallSyncBeside <= 2*time.Second))
	fmt.Fprintf(&b, "| that %d KiB source's fan-out | %s | |\n", o.hugeBytes/1024, ms(r.hugeSync))
	return b.String()
}

func durations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, ms(d))
	}
	return strings.Join(parts, ", ")
}

func drawLoad(path string, steps []loadStep) error {
	p := plot.New()
	p.Title.Text = "Every-minute ScheduledJobs: creation p99"
	p.X.Label.Text = "ScheduledJobs"
	p.Y.Label.Text = "ms"
	ours, floor := make(plotter.XYs, len(steps)), make(plotter.XYs, len(steps))
	for i, s := range steps {
		ours[i].X, ours[i].Y = float64(s.schedules), float64(percentile(s.ours.skews, 0.99).Milliseconds())
		floor[i].X, floor[i].Y = float64(s.schedules), float64(percentile(s.floor, 0.99).Milliseconds())
	}
	if err := addLines(p,
		series{"ScheduledJob skew p99", ours, color.RGBA{R: 30, G: 100, B: 200, A: 255}},
		series{"bare-client floor p99", floor, color.RGBA{R: 120, G: 120, B: 120, A: 255}}); err != nil {
		return err
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	img := vgimg.New(14*vg.Centimeter, 9*vg.Centimeter)
	p.Draw(draw.New(img))
	return savePNG(img, path)
}
