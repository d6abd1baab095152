package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// hostileOptions shape the hostile-tenant memory scenario: a tenant with namespace rights only
// creates large objects carrying every label key the manager's caches select on, and the largest
// objects of every other kind the manager caches (issue 34: its custom resources, whatever their
// labels, and ServiceAccounts with many imagePullSecrets entries).
type hostileOptions struct {
	configMaps, secrets, jobs int
	// bytes is the size of each object: data (ConfigMaps, Secrets) or pod template (Jobs), plus
	// an annotation of a quarter of it (the API server allows 256 KiB of annotations).
	bytes int
	// scheduledJobs and ats are suspended ScheduledJobs and Ats far in the future whose
	// jobTemplate holds an environment variable of jobTemplateBytes.
	scheduledJobs, ats, jobTemplateBytes int
	// copyRequests are CopyRequests (of a source that is not offered) carrying an annotation of
	// copyRequestBytes.
	copyRequests, copyRequestBytes int
	// serviceAccounts each list pullSecretEntries imagePullSecrets entries (names of
	// hostilePullSecretNameBytes characters).
	serviceAccounts, pullSecretEntries int
	// copySamples is how many new copies are timed into the small tenant's namespace in each
	// phase but the flood (where they are timed one after the other for as long as it lasts).
	copySamples int
	// late, when longer than the after row's 30 s, adds a last row that long after the objects
	// were deleted: each informer's watch ends within a minute (cachebounds.MaxWatchTimeout; its
	// first, the streaming list, within 5 to 10), which frees the decode buffers it grew to the
	// largest object it carried.
	late time.Duration
	// few, when over 0, is a first, small tenant of the same kinds: before the flood the tenant
	// creates the first few objects of each kind and the manager restarts with them in place (a
	// reading), so that the reading with them all in place, after the flood, tells what the
	// count of a tenant's objects costs (hostileCount).
	few int
}

const (
	hostileNS = "hostile-tenant"
	// The small tenant beside the flooding one: a SecretSync fans every Secret labelled
	// hostileProbeLabel in hostileSmallSource out to hostileSmallNS.
	hostileSmallNS     = "hostile-small-tenant"
	hostileSmallSource = "hostile-small-source"
	hostileSmallSync   = "hostile-small"
	hostileProbeLabel  = "bench.platform-operators.io/hostile-probe"
	hostileSmallLabel  = "bench.platform-operators.io/hostile-small"
	// hostileObjectLabel is on every object of the new kinds (not a key of ours): what the
	// scenario deletes them by.
	hostileObjectLabel = "bench.platform-operators.io/hostile"
	// hostilePullSecretNameBytes is the length of each imagePullSecrets entry's name (a DNS label
	// at its limit).
	hostilePullSecretNameBytes = 63
	// hostileCopyTimeout is how long a copy probe waits for its copy before it counts as missed.
	hostileCopyTimeout = 30 * time.Second
)

var atGVR = schema.GroupVersionResource{Group: "ops.platform-operators.io", Version: "v1alpha1", Resource: "ats"}

// hostileKinds are the kinds the tenant creates, in the order the report names them.
var hostileKinds = []string{"ConfigMaps", "Secrets", "Jobs", "ScheduledJobs", "Ats", "CopyRequests", "ServiceAccounts"}

// count is how many objects of kind the options ask for.
func (o hostileOptions) count(kind string) int {
	switch kind {
	case "ConfigMaps":
		return o.configMaps
	case "Secrets":
		return o.secrets
	case "Jobs":
		return o.jobs
	case "ScheduledJobs":
		return o.scheduledJobs
	case "Ats":
		return o.ats
	case "CopyRequests":
		return o.copyRequests
	case "ServiceAccounts":
		return o.serviceAccounts
	}
	return 0
}

// hostileFlatMiB is how much RSS may grow over the first reading for the scenario's target
// ("flat") to be met: the noise of a restart and the GC's timing, not the tenant's objects
// (300 ConfigMaps of 800 KiB alone are 234 MiB).
const hostileFlatMiB = 16

// hostileLabels are the label keys the manager's caches select on for Secrets and ConfigMaps
// (any value: the selectors test for the key), cycled over the objects.
var hostileLabels = []string{keys.LabelSecretSync, keys.LabelCopyRequest, keys.LabelOffer}

// copyLatencies are the new-copy probes of one phase: from the source's create to its copy
// visible in the small tenant's namespace through a watch, and the floor beside each (a bare
// client's create of a Secret in that namespace until the same watch shows it).
type copyLatencies struct {
	copies, floors []time.Duration
	missed         int // probes whose copy did not arrive within hostileCopyTimeout (or whose write failed)
}

// hostileRow is one reading of the manager's memory, and the copy probes of its phase.
type hostileRow struct {
	what             string
	rssMiB, peakMiB  float64
	heapMiB, liveMiB float64
	killed, restarts int // OOM kills and restarts so far
	down             bool
	note             string
	copy             copyLatencies
}

type hostileResult struct {
	limit int64 // the manager's cgroup limit in bytes, 0 for none
	rows  []hostileRow
	// created and refused are how many hostile objects the API server took and refused, by kind;
	// refusals is each kind's first refusal's message.
	created, refused map[string]int
	refusals         map[string]string
	// profiles are the heap profiles written to -profile-dir, one per row.
	profiles []string
	// fewRow and fullRow are the rows read after a restart with the few objects and with them
	// all in place (-1: none); fewCreated and fullCreated how many objects were admitted then.
	fewRow, fullRow         int
	fewCreated, fullCreated int
}

// copyProbe times new copies into the small tenant's namespace: it watches that namespace's
// Secrets and records when each name was first seen.
type copyProbe struct {
	cs   kubernetes.Interface
	mu   sync.Mutex
	seen map[string]time.Time
	n    int
	stop chan struct{}
}

func newCopyProbe(ctx context.Context, cs kubernetes.Interface) (*copyProbe, error) {
	p := &copyProbe{cs: cs, seen: map[string]time.Time{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(hostileSmallNS))
	record := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		now := time.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.seen[s.Name]; !ok {
			p.seen[s.Name] = now
		}
	}
	if err := runRecording(ctx, f.Core().V1().Secrets().Informer(), p.stop, record); err != nil {
		close(p.stop)
		return nil, fmt.Errorf("copy probe: %w", err)
	}
	return p, nil
}

func (p *copyProbe) close() { close(p.stop) }

func (p *copyProbe) seenAt(name string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.seen[name]
	return t, ok
}

// once creates a new source Secret (which the SecretSync copies into the small tenant's
// namespace) and, right after it, a floor Secret in that namespace, and waits for both. A write
// that fails or a copy later than hostileCopyTimeout is a miss (the manager may be down: the
// scenario goes on).
func (p *copyProbe) once(ctx context.Context, into *copyLatencies) {
	p.n++
	src, floor := fmt.Sprintf("probe-%04d", p.n), fmt.Sprintf("floor-%04d", p.n)
	data := map[string][]byte{"token": bytes.Repeat([]byte("p"), 256)}
	t0 := time.Now()
	if _, err := p.cs.CoreV1().Secrets(hostileSmallSource).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: src,
		Labels: map[string]string{hostileProbeLabel: "true"}}, Data: data}, metav1.CreateOptions{}); err != nil {
		logf("hostile: copy probe %s: writing the source: %v", src, err)
		into.missed++
		return
	}
	t1 := time.Now()
	_, ferr := p.cs.CoreV1().Secrets(hostileSmallNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: floor}, Data: data}, metav1.CreateOptions{})
	pctx, cancel := context.WithDeadline(ctx, t0.Add(hostileCopyTimeout))
	defer cancel()
	if wait.PollUntilContextCancel(pctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		at, ok := p.seenAt(src)
		fat, fok := p.seenAt(floor)
		if ok && (fok || ferr != nil) {
			into.copies = append(into.copies, at.Sub(t0))
			if ferr == nil {
				into.floors = append(into.floors, fat.Sub(t1))
			}
			return true, nil
		}
		return false, nil
	}) == nil {
		return
	}
	logf("hostile: copy probe %s: no copy in %s within %s", src, hostileSmallNS, hostileCopyTimeout)
	into.missed++
}

// probeN runs n probes one after the other.
func (p *copyProbe) probeN(ctx context.Context, n int) copyLatencies {
	var l copyLatencies
	for range n {
		p.once(ctx, &l)
		time.Sleep(200 * time.Millisecond)
	}
	return l
}

// setUpSmallTenant creates the small tenant's namespace, the source namespace and the
// SecretSync fanning the probes out to it.
func setUpSmallTenant(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) error {
	if err := ensureNamespace(ctx, cs, hostileSmallSource, nil); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, cs, hostileSmallNS, map[string]string{hostileSmallLabel: "true"}); err != nil {
		return err
	}
	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
		"metadata": map[string]any{"name": hostileSmallSync},
		"spec": map[string]any{
			"source": map[string]any{"namespace": hostileSmallSource, "selector": map[string]any{"matchLabels": map[string]any{hostileProbeLabel: "true"}}},
			"target": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{hostileSmallLabel: "true"}}},
		},
	}}
	if _, err := dyn.Resource(secretSyncGVR).Create(ctx, ss, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// runHostile reads the manager's memory before, while and after a hostile tenant fills its
// namespace, and times new copies into a small tenant's namespace in each phase. It restarts the
// manager, as the kubelet would, when the kernel kills it at its memory limit, counting the
// kills, and never waits on a dead manager.
func runHostile(ctx context.Context, e *env, o hostileOptions) (*hostileResult, error) {
	cs := e.cs
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	res := &hostileResult{created: map[string]int{}, refused: map[string]int{}, refusals: map[string]string{}, fewRow: -1, fullRow: -1}
	if e.manager.Cgroup != nil {
		res.limit = e.manager.Cgroup.Limit
	}
	if err := ensureNamespace(ctx, cs, hostileNS, nil); err != nil {
		return nil, err
	}
	if err := setUpSmallTenant(ctx, cs, dyn); err != nil {
		return nil, fmt.Errorf("the small tenant: %w", err)
	}
	probe, err := newCopyProbe(ctx, cs)
	if err != nil {
		return nil, err
	}
	defer probe.close()
	// killed counts the kernel's OOM kills in every cgroup the manager ran in; counted is what
	// was already added from the current one (each start makes a new cgroup).
	var killed, restarts, counted int
	harvest := func() {
		k := oomKills(e)
		killed += max(k-counted, 0)
		counted = k
	}
	start := func() error {
		harvest()
		e.stopManager()
		counted = 0
		err := e.startManager(ctx)
		harvest()
		return err
	}
	alive := func() bool {
		if e.manager == nil {
			return false // the last start failed before the process ran
		}
		_, _, err := procMemory(e.manager.Cmd.Process.Pid)
		return err == nil
	}
	read := func(what string, peak float64, note string, lat copyLatencies) {
		harvest()
		row := hostileRow{what: what, killed: killed, restarts: restarts, note: note, liveMiB: -1, copy: lat}
		if !alive() {
			row.down = true
		} else if rss, hwm, err := procMemory(e.manager.Cmd.Process.Pid); err != nil {
			row.down = true
		} else {
			row.rssMiB, row.peakMiB = rss, max(hwm, peak)
			if mm, err := managerMemoryMetrics(ctx, e); err == nil {
				row.heapMiB, row.liveMiB = mm.heapInuseMiB, mm.heapLiveMiB
			}
			// With -profile-dir, a heap profile of each phase, taken after the readings above
			// (its forced collection would otherwise lower them).
			if path, err := heapProfile(ctx, e, fmt.Sprintf("hostile-%d.heap.pprof", len(res.rows)+1)); err != nil {
				logf("hostile: heap profile: %v", err)
			} else if path != "" {
				res.profiles = append(res.profiles, filepath.Base(path))
			}
		}
		logf("hostile (%s): RSS %.1f MiB, peak %.1f MiB, heap %.1f MiB, live %.1f MiB, OOM kills %d, restarts %d %s; new copy in %s: %s",
			what, row.rssMiB, row.peakMiB, row.heapMiB, row.liveMiB, killed, restarts, note, hostileSmallNS, lat.summary())
		res.rows = append(res.rows, row)
	}
	// revive starts the manager again after it died, up to 3 times (a kubelet would keep
	// trying with a back-off: three are enough to tell a crash loop); it returns the note for
	// the table.
	revive := func(what string) string {
		for range 3 {
			restarts++
			err := start()
			if err == nil {
				return what + "; restarted"
			}
			logf("hostile: the manager did not get ready after restart %d: %v", restarts, err)
		}
		return what + "; not ready after 3 restarts"
	}
	// probePhase times the phase's copies, unless the manager is down: then none can arrive,
	// and each counts as missed without waiting for it.
	probePhase := func() copyLatencies {
		if !alive() {
			return copyLatencies{missed: o.copySamples}
		}
		return probe.probeN(ctx, o.copySamples)
	}
	if err := start(); err != nil {
		return nil, err
	}
	time.Sleep(20 * time.Second)
	// One probe first, not counted: the SecretSync's first pass.
	probe.once(ctx, &copyLatencies{})
	before := probe.probeN(ctx, o.copySamples)
	read("before: the tenant's namespace empty, 20 s after a start", 0, "", before)

	var mu sync.Mutex
	// Objects of about o.bytes: three quarters data and a quarter annotation; a Job's pod
	// template holds half in an environment variable, and the annotation on the Job and on its
	// template.
	blob := bytes.Repeat([]byte("x"), o.bytes*3/4)
	annotation := strings.Repeat("y", o.bytes/4)
	meta := func(kind string, i int, label string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:        fmt.Sprintf("hostile-%s-%04d", kind, i),
			Labels:      map[string]string{label: "x"},
			Annotations: map[string]string{"hostile.example/pad": annotation},
		}
	}
	created := func(kind string, err error) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			res.created[kind]++
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err):
			// Refused at admission (the chart's ValidatingAdmissionPolicies keep our keys to the
			// manager; a schema bound on a custom resource's size): a defence, counted, not a
			// failure of the run.
			res.refused[kind]++
			if res.refusals[kind] == "" {
				res.refusals[kind] = err.Error()
			}
		default:
			return err
		}
		return nil
	}
	createCR := func(ctx context.Context, gvr schema.GroupVersionResource, obj kruntime.Object) error {
		u, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		_, err = dyn.Resource(gvr).Namespace(hostileNS).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
		return err
	}
	// The new kinds carry no key of ours: the manager caches every object of them.
	crMeta := func(kind string, i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: hostileNS, Name: fmt.Sprintf("hostile-%s-%04d", kind, i), Labels: map[string]string{hostileObjectLabel: "true"}}
	}
	template := hostileJobTemplate(o.jobTemplateBytes)
	crAnnotation := strings.Repeat("z", o.copyRequestBytes)
	entries := hostilePullSecrets(o.pullSecretEntries)
	logf("hostile: %d ConfigMaps, %d Secrets and %d Jobs of about %d KiB, labelled with %v and %s; %d ScheduledJobs and %d Ats with a %d KiB jobTemplate; %d CopyRequests with a %d KiB annotation; %d ServiceAccounts with %d imagePullSecrets entries each",
		o.configMaps, o.secrets, o.jobs, o.bytes/1024, hostileLabels, keys.LabelCreatedBy, o.scheduledJobs, o.ats, o.jobTemplateBytes/1024, o.copyRequests, o.copyRequestBytes/1024, o.serviceAccounts, o.pullSecretEntries)
	const workers = 4
	// createRange creates the objects of each kind from index lo(kind) up to hi(kind).
	createRange := func(lo, hi func(kind string) int) error {
		rng := func(kind string, fn func(ctx context.Context, i int) error) error {
			from := lo(kind)
			return parallel(ctx, max(hi(kind)-from, 0), workers, func(ctx context.Context, j int) error { return fn(ctx, from+j) })
		}
		return errors.Join(
			rng("ConfigMaps", func(ctx context.Context, i int) error {
				_, err := cs.CoreV1().ConfigMaps(hostileNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("cm", i, hostileLabels[i%len(hostileLabels)]),
					Data: map[string]string{"blob": string(blob)}}, metav1.CreateOptions{})
				return created("ConfigMaps", err)
			}),
			rng("Secrets", func(ctx context.Context, i int) error {
				_, err := cs.CoreV1().Secrets(hostileNS).Create(ctx, &corev1.Secret{ObjectMeta: meta("secret", i, hostileLabels[i%len(hostileLabels)]),
					Data: map[string][]byte{"blob": blob}}, metav1.CreateOptions{})
				return created("Secrets", err)
			}),
			rng("Jobs", func(ctx context.Context, i int) error {
				_, err := cs.BatchV1().Jobs(hostileNS).Create(ctx, hostileJob(meta("job", i, keys.LabelCreatedBy), string(blob[:o.bytes/2])), metav1.CreateOptions{})
				return created("Jobs", err)
			}),
			rng("ScheduledJobs", func(ctx context.Context, i int) error {
				sj := &v1alpha1.ScheduledJob{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScheduledJob"},
					ObjectMeta: crMeta("sj", i),
					Spec:       v1alpha1.ScheduledJobSpec{Schedule: "0 0 1 1 *", Suspend: ptr.To(true), JobTemplate: template}}
				return created("ScheduledJobs", createCR(ctx, sjGVR, sj))
			}),
			rng("Ats", func(ctx context.Context, i int) error {
				at := &v1alpha1.At{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "At"},
					ObjectMeta: crMeta("at", i),
					Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)), JobTemplate: template.DeepCopy()}}
				return created("Ats", createCR(ctx, atGVR, at))
			}),
			rng("CopyRequests", func(ctx context.Context, i int) error {
				m := crMeta("creq", i)
				m.Annotations = map[string]string{"hostile.example/pad": crAnnotation}
				cr := &v1alpha1.CopyRequest{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "CopyRequest"},
					ObjectMeta: m,
					Spec:       v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Kind: v1alpha1.CopyKindSecret, Namespace: hostileNS, Name: "not-offered"}}}
				return created("CopyRequests", createCR(ctx, copyRequestGVR, cr))
			}),
			rng("ServiceAccounts", func(ctx context.Context, i int) error {
				_, err := cs.CoreV1().ServiceAccounts(hostileNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: crMeta("sa", i), ImagePullSecrets: entries}, metav1.CreateOptions{})
				return created("ServiceAccounts", err)
			}),
		)
	}
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range res.created {
			n += c
		}
		return n
	}
	few := func(kind string) int { return min(o.few, o.count(kind)) }
	if o.few > 0 {
		// A few of each kind first, and a start with them in place: what the count of a
		// tenant's objects costs is the difference to the same reading with them all.
		if err := createRange(func(string) int { return 0 }, few); err != nil {
			return nil, fmt.Errorf("creating the first hostile objects: %w", err)
		}
		res.fewCreated = total()
		note := ""
		if err := start(); err != nil {
			note = revive("not ready after the restart: " + err.Error())
		} else {
			time.Sleep(20 * time.Second)
			if !alive() {
				note = revive("killed within 20 s of a ready start")
			}
		}
		res.fewRow = len(res.rows)
		read(fmt.Sprintf("with the first %d of each kind in place (%d admitted), after a restart", o.few, res.fewCreated), 0, note, probePhase())
	} else {
		few = func(string) int { return 0 }
	}

	// During: the tenant creates its objects while a sampler reads the manager's RSS and the
	// small tenant's copies are timed, one after the other.
	pid := e.manager.Cmd.Process.Pid
	var peak float64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss, hwm, err := procMemory(pid); err == nil {
				mu.Lock()
				peak = max(peak, rss, hwm)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	var during copyLatencies
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			probe.once(ctx, &during)
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	stopSampling := func() {
		close(stop)
		<-sampled
		<-probed
	}
	err = createRange(few, o.count)
	if err != nil {
		stopSampling()
		return nil, fmt.Errorf("creating the hostile objects: %w", err)
	}
	// Let the watches deliver and the manager settle (or die).
	time.Sleep(20 * time.Second)
	stopSampling()
	note := ""
	if !alive() {
		harvest()
		note = revive("killed while the objects were created")
	}
	mu.Lock()
	p := peak
	mu.Unlock()
	logf("hostile: created %v, refused at admission %v", res.created, res.refused)
	read(fmt.Sprintf("during: %s created, 20 s later", kindCounts(res.created, o)), p, note, during)

	// With them in place, a start lists them all.
	note = ""
	if err := start(); err != nil {
		note = revive("not ready after the restart: " + err.Error())
	} else {
		time.Sleep(20 * time.Second)
		if !alive() {
			note = revive("killed within 20 s of a ready start")
		}
	}
	res.fullCreated, res.fullRow = total(), len(res.rows)
	read(fmt.Sprintf("with them in place (%d admitted), after a restart", res.fullCreated), 0, note, probePhase())

	logf("hostile: deleting the tenant's objects")
	bg := metav1.DeletePropagationBackground
	dels := []func() error{
		func() error {
			return cs.BatchV1().Jobs(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg},
				metav1.ListOptions{LabelSelector: keys.LabelCreatedBy})
		},
		func() error {
			return cs.CoreV1().ServiceAccounts(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: hostileObjectLabel})
		},
	}
	for _, gvr := range []schema.GroupVersionResource{sjGVR, atGVR, copyRequestGVR} {
		dels = append(dels, func() error {
			return dyn.Resource(gvr).Namespace(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: hostileObjectLabel})
		})
	}
	for _, l := range hostileLabels {
		dels = append(dels,
			func() error {
				return cs.CoreV1().ConfigMaps(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: l})
			},
			func() error {
				return cs.CoreV1().Secrets(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: l})
			})
	}
	for _, del := range dels {
		if err := deleteCollection(ctx, del); err != nil {
			return nil, err
		}
	}
	note = ""
	if !alive() {
		note = revive("it was down")
	}
	deleted := time.Now()
	time.Sleep(30 * time.Second)
	read("after: the objects deleted, 30 s later", 0, note, probePhase())
	if o.late > 30*time.Second {
		logf("hostile: waiting until %s after the deletion", o.late)
		time.Sleep(time.Until(deleted.Add(o.late)))
		note = ""
		if !alive() {
			note = revive("it was down")
		}
		read(fmt.Sprintf("after: the objects deleted, %s later", o.late), 0, note, probePhase())
	}
	if err := dyn.Resource(secretSyncGVR).Delete(ctx, hostileSmallSync, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		logf("hostile: deleting SecretSync %s: %v", hostileSmallSync, err)
	}
	return res, nil
}

// kindCounts says n of each kind the options ask for: "100 ConfigMaps, 0 Secrets and 5 Jobs".
// The first three kinds are always named (the scenario's original kinds), the others when asked.
func kindCounts(n map[string]int, o hostileOptions) string {
	var parts []string
	for i, k := range hostileKinds {
		if i < 3 || o.count(k) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// hostileJobTemplate is a Job template of about size bytes: one environment variable.
func hostileJobTemplate(size int) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"},
				Env: []corev1.EnvVar{{Name: "PAD", Value: strings.Repeat("j", size)}}}},
		}},
	}}
}

// hostilePullSecrets are n imagePullSecrets entries, each naming a Secret that does not exist.
func hostilePullSecrets(n int) []corev1.LocalObjectReference {
	out := make([]corev1.LocalObjectReference, n)
	for i := range out {
		name := fmt.Sprintf("hostile-pull-%06d-", i)
		out[i].Name = name + strings.Repeat("p", max(hostilePullSecretNameBytes-len(name), 1))
	}
	return out
}

// summary is "p50 / max (n, floor p50), m missed" for the log and the table.
func (l copyLatencies) summary() string {
	if len(l.copies) == 0 && l.missed == 0 {
		return "not measured"
	}
	s := "none arrived"
	if len(l.copies) > 0 {
		s = fmt.Sprintf("%s / %s (%d; floor %s)", ms(percentile(l.copies, 0.5)), ms(percentile(l.copies, 1)), len(l.copies), ms(percentile(l.floors, 0.5)))
	}
	if l.missed > 0 {
		s += fmt.Sprintf(", **%d missed**", l.missed)
	}
	return s
}

// copyUnchanged is the target for the small tenant's copies: every probe of a later phase
// arrived, and that phase's median is at most twice the first phase's, or one second more than
// it, whichever is larger (the run restarts the manager between phases, and the flood loads the
// API server the floor shares).
func copyUnchanged(rows []hostileRow) (bool, string) {
	if len(rows) == 0 || len(rows[0].copy.copies) == 0 {
		return false, "no copy arrived before the flood"
	}
	base := percentile(rows[0].copy.copies, 0.5)
	allowed := max(2*base, base+time.Second)
	for _, r := range rows {
		if r.copy.missed > 0 {
			return false, fmt.Sprintf("%d copies did not arrive within %.0f s (%s)", r.copy.missed, hostileCopyTimeout.Seconds(), r.what)
		}
		if len(r.copy.copies) == 0 {
			continue
		}
		if p := percentile(r.copy.copies, 0.5); p > allowed {
			return false, fmt.Sprintf("median %s in %q, allowed %s (the first row's %s)", ms(p), r.what, ms(allowed), ms(base))
		}
	}
	return true, fmt.Sprintf("every copy arrived, medians at most %s (the first row's %s)", ms(allowed), ms(base))
}

// hostileJob is a suspended Job carrying the created-by label with a pod template of about
// len(pad) bytes (one environment variable).
func hostileJob(meta metav1.ObjectMeta, pad string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: meta.Annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox",
						Env: []corev1.EnvVar{{Name: "PAD", Value: pad}}}},
				},
			},
		},
	}
}

// oomKills is how often the kernel killed a process of the manager's memory cgroup at its limit
// (cgroup v1 memory.oom_control oom_kill, v2 memory.events oom_kill); 0 without a cgroup.
func oomKills(e *env) int {
	if e.manager == nil || e.manager.Cgroup == nil {
		return 0
	}
	file := "memory.oom_control"
	if e.manager.Cgroup.Version == 2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(e.manager.Cgroup.Dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// writeHostileReport writes section hostile.
func writeHostileReport(path string, r *hostileResult, o hostileOptions, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## A hostile tenant's objects and the manager's memory\n\n")
	fmt.Fprintf(&b, "%s. Command: `%s`.\n\n", measuredAsChart(), cmd)
	limit := "no memory limit (`-memory-limit=off`)"
	if r.limit > 0 {
		limit = fmt.Sprintf("the chart's `resources.limits.memory`, %s, enforced by a memory cgroup as the kubelet would", mib(r.limit))
	}
	fmt.Fprintf(&b, "A tenant with rights in its own namespace only creates %d ConfigMaps and %d Secrets of about %d KiB (%d KiB of data, a %d KiB annotation), each labelled with one of `%s` (value `x`), and %d suspended Jobs of about as much labelled `%s` (a %d KiB environment variable in the pod template, the annotation on the Job and on its template): every key the manager's caches select on.",
		o.configMaps, o.secrets, o.bytes/1024, o.bytes*3/4/1024, o.bytes/4/1024, strings.Join(hostileLabels, "`, `"), o.jobs, keys.LabelCreatedBy, o.bytes/2/1024)
	if o.scheduledJobs+o.ats+o.copyRequests+o.serviceAccounts > 0 {
		fmt.Fprintf(&b, " Beside them, the largest objects of the kinds the manager caches whatever their labels: %d suspended ScheduledJobs and %d Ats (scheduled in 2099) whose `jobTemplate` holds a %d KiB environment variable, %d CopyRequests (of a source not offered) with a %d KiB annotation, and %d ServiceAccounts with %d `imagePullSecrets` entries each (names of %d characters, about %d KiB per ServiceAccount).",
			o.scheduledJobs, o.ats, o.jobTemplateBytes/1024, o.copyRequests, o.copyRequestBytes/1024, o.serviceAccounts, o.pullSecretEntries, hostilePullSecretNameBytes, o.pullSecretEntries*(hostilePullSecretNameBytes+12)/1024)
	}
	fmt.Fprintf(&b, " The manager runs under %s; when the kernel kills it at that limit the bench restarts it, as the kubelet would (three times at most). Peak RSS is the process's high-water mark since it started (VmHWM, and the 500 ms samples while the objects are created). Target: RSS flat (within %d MiB of the first row) and under the limit, no kill.\n\n",
		limit, hostileFlatMiB)
	fmt.Fprintf(&b, "A small tenant beside it: a SecretSync fans every Secret labelled `%s` in namespace `%s` out to namespace `%s`. In each phase the bench creates such a Secret and times it until its copy is visible through a watch (%d per phase, one after the other; during the flood, one a second for as long as the objects are created and 20 s after); the floor beside each is a bare client's create of a Secret in `%s` until the same watch shows it. A copy not there within %.0f s is missed. Target: unchanged: every copy arrives, and each phase's median is at most twice the first row's (or one second more, whichever is larger).\n\n",
		hostileProbeLabel, hostileSmallSource, hostileSmallNS, o.copySamples, hostileSmallNS, hostileCopyTimeout.Seconds())
	if len(r.refused) > 0 {
		fmt.Fprintf(&b, "The API server refused %s of them at admission; the table is what the rest did. The first refusal of each kind:\n\n", kindCounts(r.refused, o))
		for _, k := range hostileKinds {
			if msg := r.refusals[k]; msg != "" {
				fmt.Fprintf(&b, "- %s: %q\n", k, msg)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| phase | RSS | peak RSS | Go heap in use | Go heap live after the last GC | OOM kills / restarts | | new copy in the small tenant's namespace: p50 / max (probes; floor p50) |\n|---|---|---|---|---|---|---|---|\n")
	killedOrDown, growth := false, 0.0
	for i, row := range r.rows {
		rss, peak, heap, live := "down", "", "", ""
		if !row.down {
			rss, peak, heap = fmt.Sprintf("%.1f MiB", row.rssMiB), fmt.Sprintf("%.1f MiB", row.peakMiB), fmt.Sprintf("%.1f MiB", row.heapMiB)
			live = "n/a"
			if row.liveMiB >= 0 {
				live = fmt.Sprintf("%.1f MiB", row.liveMiB)
			}
			if i > 0 {
				growth = max(growth, row.rssMiB-r.rows[0].rssMiB)
			}
		}
		killedOrDown = killedOrDown || row.down || row.killed > 0
		v := ""
		switch share := row.peakMiB * (1 << 20) / float64(max(r.limit, 1)); {
		case row.down || row.killed > 0 || (r.limit > 0 && share >= 0.98):
			v = "**limit reached**"
		case r.limit > 0 && share >= 0.9:
			v = fmt.Sprintf("**%.0f%% of the limit**", 100*share)
		}
		what := row.what
		if row.note != "" {
			what += " (" + row.note + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d / %d | %s | %s |\n", what, rss, peak, heap, live, row.killed, row.restarts, v, row.copy.summary())
	}
	switch {
	case killedOrDown:
		fmt.Fprintf(&b, "\nResult: **missed**: the tenant's objects took the manager to its memory limit and the kernel killed it.\n")
	case growth > hostileFlatMiB:
		fmt.Fprintf(&b, "\nResult: **missed**: RSS grew by %.1f MiB with the tenant's objects (flat: at most %d MiB over the first row).\n", growth, hostileFlatMiB)
	default:
		fmt.Fprintf(&b, "\nResult: met: RSS flat (at most %.1f MiB over the first row, allowed %d MiB) and no kill.\n", growth, hostileFlatMiB)
	}
	b.WriteString(hostileCount(r))
	if len(r.profiles) > 0 {
		fmt.Fprintf(&b, "\nHeap profiles of the manager, one per row in order, after a forced collection (`/debug/pprof/heap?gc=1` with `-profile-dir`): %s.\n", strings.Join(r.profiles, ", "))
	}
	if o.copySamples == 0 {
		// -hostile-copy-samples=0: the copies were timed during the flood only, if at all.
		return replaceSection(path, "hostile", b.String())
	}
	if ok, why := copyUnchanged(r.rows); ok {
		fmt.Fprintf(&b, "\nThe small tenant's copies: met: %s.\n", why)
	} else {
		fmt.Fprintf(&b, "\nThe small tenant's copies: **missed**: %s.\n", why)
	}
	return replaceSection(path, "hostile", b.String())
}

// hostileCount compares the reading with the first few objects of each kind in place to the one
// with them all (each after a restart): what the count of a tenant's objects costs the manager.
// The class property: the caches keep at most cachebounds.MaxObjectBytes of each object, whatever
// its size, and what the watches hold (their decode buffers) is per watch, not per object. Empty
// without -hostile-few.
func hostileCount(r *hostileResult) string {
	if r.fewRow < 0 || r.fullRow <= r.fewRow {
		return ""
	}
	f, a := r.rows[r.fewRow], r.rows[r.fullRow]
	if f.down || a.down || f.liveMiB < 0 || a.liveMiB < 0 {
		return "\nThe count of the tenant's objects: **not measured** (the manager was down or its live heap unread at one of the two readings).\n"
	}
	n := r.fullCreated - r.fewCreated
	bound := float64(n) * cachebounds.MaxObjectBytes / (1 << 20)
	dLive, dRSS := a.liveMiB-f.liveMiB, a.rssMiB-f.rssMiB
	verdict := "met"
	if dLive > bound || dRSS > hostileFlatMiB {
		verdict = "**missed**"
	}
	return fmt.Sprintf("\nThe count of the tenant's objects: %s. With %d objects admitted against %d, each reading after a restart, the live heap is %+.1f MiB and RSS %+.1f MiB apart (target: the live heap at most %d × %d KiB = %.1f MiB apart, what the caches may keep of each object whatever its size, and RSS within %d MiB).\n",
		verdict, r.fullCreated, r.fewCreated, dLive, dRSS, n, cachebounds.MaxObjectBytes/1024, bound, hostileFlatMiB)
}
