package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

type secretSyncOptions struct {
	namespaces, samples, workers int
	unrelated                    []int
}

// memPoint is the manager's memory with a number of unrelated Secrets in the cluster.
type memPoint struct {
	unrelated int
	rssMiB    float64
	peakMiB   float64
}

type secretSyncResult struct {
	floorCreate, oursCreate, floorUpdate, oursUpdate time.Duration
	// floorFirst is when the kept floor's first new-source copy was visible, from its first
	// write.
	floorFirst           time.Duration
	newNamespace, repair []time.Duration
	mem                  []memPoint
	resyncWrites         map[string]int
	managerWrites        float64
}

const (
	benchSync    = "bench"
	sourceNS     = "bench-source"
	sourceName   = "shared-tls"
	targetLabel  = "bench.platform-operators.io/tenant"
	floorLabel   = "bench.platform-operators.io/floor"
	versionKey   = "version"
	payloadBytes = 2048
)

func nsName(i int) string { return fmt.Sprintf("bench-%04d", i) }

// observer watches Secrets matching a label selector and records when each (namespace, version)
// was first seen, so the floor and the manager are timed the same way: until the last object is
// visible through a watch.
type observer struct {
	mu    sync.Mutex
	first map[string]map[string]time.Time // version -> namespace -> first seen
	byNS  map[string][]seen               // namespace -> events in order
	stop  chan struct{}
}

type seen struct {
	version string
	rv      int64
	at      time.Time
}

func newObserver(ctx context.Context, cs kubernetes.Interface, selector string) (*observer, error) {
	o := &observer{first: map[string]map[string]time.Time{}, byNS: map[string][]seen{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = selector }))
	inf := f.Core().V1().Secrets().Informer()
	record := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		now := time.Now()
		v := string(s.Data[versionKey])
		rv, _ := strconv.ParseInt(s.ResourceVersion, 10, 64)
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.first[v] == nil {
			o.first[v] = map[string]time.Time{}
		}
		if _, ok := o.first[v][s.Namespace]; !ok {
			o.first[v][s.Namespace] = now
		}
		o.byNS[s.Namespace] = append(o.byNS[s.Namespace], seen{version: v, rv: rv, at: now})
	}
	if err := runRecording(ctx, inf, o.stop, record); err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	return o, nil
}

func (o *observer) close() { close(o.stop) }

// runRecording calls record with every object the informer adds or updates, runs it until stop
// closes, and waits until it has synced.
func runRecording(ctx context.Context, inf toolscache.SharedIndexInformer, stop <-chan struct{}, record func(any)) error {
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, n any) { record(n) }}); err != nil {
		return err
	}
	go inf.Run(stop)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("did not sync")
	}
	return nil
}

// spread says when the objects of version were seen, from t0: p50, p90, p99 and the last.
func (o *observer) spread(version string, t0 time.Time) string {
	o.mu.Lock()
	ds := make([]time.Duration, 0, len(o.first[version]))
	for _, t := range o.first[version] {
		ds = append(ds, t.Sub(t0))
	}
	o.mu.Unlock()
	return fmt.Sprintf("seen p50 %s, p90 %s, p99 %s, last %s", ms(percentile(ds, 0.5)), ms(percentile(ds, 0.9)), ms(percentile(ds, 0.99)), ms(slices.Max(append(ds, 0))))
}

// earliest is when the first object of version was seen (zero when none was).
func (o *observer) earliest(version string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var first time.Time
	for _, t := range o.first[version] {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// waitAll waits until version was seen in n namespaces and returns when the last one was seen.
func (o *observer) waitAll(ctx context.Context, version string, n int, timeout time.Duration) (time.Time, error) {
	var got int
	var last time.Time
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		got = len(o.first[version])
		if got < n {
			return false, nil
		}
		for _, t := range o.first[version] {
			if t.After(last) {
				last = t
			}
		}
		return true, nil
	}); err != nil {
		return time.Time{}, fmt.Errorf("version %q seen in %d of %d namespaces after %s", version, got, n, timeout)
	}
	return last, nil
}

// waitNS waits for namespace to show version at a resourceVersion above after.
func (o *observer) waitNS(ctx context.Context, namespace, version string, after int64, timeout time.Duration) (time.Time, error) {
	var at time.Time
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, s := range o.byNS[namespace] {
			if s.rv > after && s.version == version {
				at = s.at
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return time.Time{}, fmt.Errorf("namespace %s never showed version %q after rv %d", namespace, version, after)
	}
	return at, nil
}

func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := 0; i < n; i++ {
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}

func payload(version string) map[string][]byte {
	b := make([]byte, payloadBytes)
	_, _ = rand.Read(b)
	return map[string][]byte{versionKey: []byte(version), "tls.crt": b[:payloadBytes/2], "tls.key": b[payloadBytes/2:]}
}

func runSecretSync(ctx context.Context, e *env, o secretSyncOptions) (*secretSyncResult, error) {
	res := &secretSyncResult{}
	cs := e.cs
	logf("creating %d target namespaces and the source namespace", o.namespaces)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sourceNS}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if err := parallel(ctx, o.namespaces, 64, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{targetLabel: "true"}}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}

	// kube-controller-manager answers 1000 new namespaces with a ServiceAccount and a ConfigMap
	// each: let that settle, or the first measurement pays for it.
	if err := settle(ctx, cs, o.namespaces); err != nil {
		return nil, err
	}
	// The floor, measured before and after the manager (the faster of the two is kept, which
	// is the stricter comparison).
	if err := runFloor(ctx, cs, o, "floor-a", res, nil); err != nil {
		return nil, err
	}

	// The manager: one SecretSync from bench-source to every namespace labelled as a tenant.
	obs, err := newObserver(ctx, cs, keys.LabelSecretSync+"="+benchSync)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	if err := createSecretSync(ctx, dyn, benchSync, sourceName, targetLabel); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // let the first (empty) reconcile settle, so the clock below times the copy only
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sourceNS, Name: sourceName}, Type: corev1.SecretTypeOpaque, Data: payload("v1")}
	logf("manager: creating the source Secret")
	t0 := time.Now()
	if _, err := cs.CoreV1().Secrets(sourceNS).Create(ctx, src, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	last, err := obs.waitAll(ctx, "v1", o.namespaces, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	res.oursCreate = last.Sub(t0)
	logf("manager: updating the source Secret")
	src.Data = payload("v2")
	t0 = time.Now()
	if _, err := cs.CoreV1().Secrets(sourceNS).Update(ctx, src, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	if last, err = obs.waitAll(ctx, "v2", o.namespaces, 5*time.Minute); err != nil {
		return nil, err
	}
	res.oursUpdate = last.Sub(t0)
	logf("manager: create %s, update %s", res.oursCreate.Round(time.Millisecond), res.oursUpdate.Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	if err := runFloor(ctx, cs, o, "floor-b", res, nil); err != nil {
		return nil, err
	}

	logf("new-namespace latency, %d samples", o.samples)
	for i := 0; i < o.samples; i++ {
		name := fmt.Sprintf("bench-new-%03d", i)
		t0 := time.Now()
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{targetLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		at, err := obs.waitNS(ctx, name, "v2", 0, 30*time.Second)
		if err != nil {
			return nil, err
		}
		res.newNamespace = append(res.newNamespace, at.Sub(t0))
	}
	logf("copy-repair latency, %d samples (half edited, half deleted)", o.samples)
	for i := 0; i < o.samples; i++ {
		ns := nsName(i * (o.namespaces / o.samples))
		var t0 time.Time
		var after int64
		if i%2 == 0 {
			cur, err := cs.CoreV1().Secrets(ns).Get(ctx, sourceName, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			cur.Data = payload("tampered")
			t0 = time.Now()
			upd, err := cs.CoreV1().Secrets(ns).Update(ctx, cur, metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			after, _ = strconv.ParseInt(upd.ResourceVersion, 10, 64)
		} else {
			cur, err := cs.CoreV1().Secrets(ns).Get(ctx, sourceName, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			after, _ = strconv.ParseInt(cur.ResourceVersion, 10, 64)
			t0 = time.Now()
			if err := cs.CoreV1().Secrets(ns).Delete(ctx, sourceName, metav1.DeleteOptions{}); err != nil {
				return nil, err
			}
		}
		at, err := obs.waitNS(ctx, ns, "v2", after, 30*time.Second)
		if err != nil {
			return nil, err
		}
		res.repair = append(res.repair, at.Sub(t0))
	}

	for _, n := range o.unrelated {
		if err := ensureUnrelated(ctx, cs, o.namespaces, n); err != nil {
			return nil, err
		}
		p, err := measureResync(ctx, e, n)
		if err != nil {
			return nil, err
		}
		res.mem = append(res.mem, p)
		if n == o.unrelated[len(o.unrelated)-1] {
			res.resyncWrites, res.managerWrites, err = resyncWrites(ctx, e)
			if err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// unrelatedCount is how many unrelated Secrets exist so far.
var unrelatedCount int

// ensureUnrelated grows the unrelated 2 KiB Secrets (spread over the target namespaces) to n.
func ensureUnrelated(ctx context.Context, cs kubernetes.Interface, namespaces, n int) error {
	if n <= unrelatedCount {
		return nil
	}
	logf("creating unrelated Secrets %d..%d", unrelatedCount, n)
	from := unrelatedCount
	err := parallel(ctx, n-from, 64, func(ctx context.Context, i int) error {
		k := from + i
		_, err := cs.CoreV1().Secrets(nsName(k%namespaces)).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", k)}, Data: map[string][]byte{"blob": unrelatedBlob()},
		}, metav1.CreateOptions{})
		return err
	})
	if err == nil {
		unrelatedCount = n
	}
	return err
}

// measureResync restarts the manager (a cold start lists and reconciles everything) and reads
// its memory once it is idle again.
func measureResync(ctx context.Context, e *env, unrelated int) (memPoint, error) {
	e.stopManager()
	if err := e.startManager(ctx); err != nil {
		return memPoint{}, err
	}
	// Idle: every SecretSync reconciled (the watch events of the restart have drained).
	time.Sleep(10 * time.Second)
	rss, peak, err := procMemory(e.manager.Cmd.Process.Pid)
	if err != nil {
		return memPoint{}, err
	}
	logf("manager memory with %d unrelated Secrets: RSS %.1f MiB (peak %.1f MiB)", unrelated, rss, peak)
	return memPoint{unrelated: unrelated, rssMiB: rss, peakMiB: peak}, nil
}

func procMemory(pid int) (rss, peak float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak, sc.Err()
}

// writeResources are the resources the manager writes. Only the manager (and, outside the
// measured window, the bench) writes secrets and secretsyncs here; serviceaccounts and events are
// also written by kube-controller-manager, so for those the manager's own counter is the measure.
// serviceaccounts/token is apart: TokenRequests, the bench's own when it (re)starts the manager.
var writeResources = []string{"secrets", "secretsyncs", "serviceaccounts", "serviceaccounts/token", "events"}

// resyncWrites counts API writes (apiserver_request_total, mutating verbs) to the manager's
// resources while the manager restarts and every SecretSync is enqueued again by a namespace
// label change, with nothing to do.
func resyncWrites(ctx context.Context, e *env) (map[string]int, float64, error) {
	before, err := apiserverWrites(ctx, e.cs)
	if err != nil {
		return nil, 0, err
	}
	e.stopManager()
	if err := e.startManager(ctx); err != nil {
		return nil, 0, err
	}
	time.Sleep(5 * time.Second)
	// A namespace label change enqueues every SecretSync.
	patch := []byte(`{"metadata":{"labels":{"bench.platform-operators.io/touched":"yes"}}}`)
	if _, err := e.cs.CoreV1().Namespaces().Patch(ctx, nsName(0), "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		return nil, 0, err
	}
	time.Sleep(5 * time.Second)
	after, err := apiserverWrites(ctx, e.cs)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int{}
	for _, r := range writeResources {
		out[r] = after[r] - before[r]
	}
	metrics, err := testbed.HTTPGet(ctx, "http://"+e.manager.MetricsAddr+"/metrics")
	if err != nil {
		return nil, 0, err
	}
	var mw float64
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "platform_operators_secretsync_writes_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			mw += v
		}
	}
	logf("writes during a resync with nothing to do: %v (manager's own counter since restart: %v)", out, mw)
	return out, mw, nil
}

// apiserverWrites reads apiserver_request_total and sums mutating requests per resource.
func apiserverWrites(ctx context.Context, cs kubernetes.Interface) (map[string]int, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := line[strings.Index(line, "{")+1 : strings.LastIndex(line, "}")]
		var resource, verb, sub string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "resource":
				resource = v
			case "verb":
				verb = v
			case "subresource":
				sub = v
			}
		}
		if verb != "POST" && verb != "PUT" && verb != "PATCH" && verb != "DELETE" && verb != "APPLY" {
			continue
		}
		if resource == "serviceaccounts" && sub == "token" {
			// A TokenRequest, not a ServiceAccount write: the bench's own each time it starts the
			// manager (testbed.RunAsChart; see benchTokenRequest).
			resource = "serviceaccounts/token"
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		out[resource] += int(v)
	}
	return out, nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	// Nearest rank: the smallest sample with at least p of the samples at or below it.
	idx := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, idx)]
}

func unrelatedBlob() []byte {
	b := make([]byte, payloadBytes)
	_, _ = rand.Read(b)
	return b
}

// settle waits until every target namespace has its default ServiceAccount and its
// kube-root-ca.crt ConfigMap, and the cluster has had a few quiet seconds. kube-controller-manager's ServiceAccount controller writes at its
// client's default 20 requests/s, so the wait allows a tenth of a second per namespace (at least
// two minutes).
func settle(ctx context.Context, cs kubernetes.Interface, namespaces int) error {
	limit := max(2*time.Minute, time.Duration(namespaces)*time.Second/10)
	var sas, cms int
	err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		sa, err := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
		if err != nil {
			return false, err
		}
		// kube-controller-manager also publishes the cluster's CA into every new namespace:
		// until it has, its creates share the API server with whatever is measured next.
		cm, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-root-ca.crt"})
		if err != nil {
			return false, err
		}
		sas, cms = len(sa.Items), len(cm.Items)
		return sas >= namespaces && cms >= namespaces, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("only %d default ServiceAccounts and %d kube-root-ca.crt ConfigMaps of %d after %s", sas, cms, namespaces, limit)
	}
	if err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	return nil
}

// runFloor has a bare client create, then update, one Secret per target namespace with the
// floor's concurrency, timed like the manager (until the last one is visible through a watch),
// keeps the faster time of each in res, and deletes the Secrets again. profile, unless nil, is
// called right before the first create and what it returns after the last copy is visible: it
// profiles the create window.
func runFloor(ctx context.Context, cs kubernetes.Interface, o secretSyncOptions, name string, res *secretSyncResult, profile func() (wait func())) error {
	obs, err := newObserver(ctx, cs, floorLabel+"="+name)
	if err != nil {
		return err
	}
	defer obs.close()
	secret := func(i int, version string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsName(i), Name: name, Labels: map[string]string{floorLabel: name}}, Type: corev1.SecretTypeOpaque, Data: payload(version)}
	}
	var createFirst time.Duration
	timed := func(version string, profile func() (wait func()), write func(ctx context.Context, i int) error) (time.Duration, error) {
		wait := func() {}
		if profile != nil {
			wait = profile()
		}
		c0 := sampleCPU()
		t0 := time.Now()
		if err := parallel(ctx, o.namespaces, o.workers, write); err != nil {
			return 0, err
		}
		last, err := obs.waitAll(ctx, version, o.namespaces, 5*time.Minute)
		first := obs.earliest(version).Sub(t0)
		if version == name+"-1" {
			createFirst = first
		}
		logf("floor (%s) %s: first visible after %s, %s; %s", name, version, first.Round(time.Millisecond), obs.spread(version, t0), cpuSummary(c0, sampleCPU(), runtime.NumCPU()))
		wait()
		return last.Sub(t0), err
	}
	create, err := timed(name+"-1", profile, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Secrets(nsName(i)).Create(ctx, secret(i, name+"-1"), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	update, err := timed(name+"-2", nil, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Secrets(nsName(i)).Update(ctx, secret(i, name+"-2"), metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	logf("floor (%s): create %s, update %s", name, create.Round(time.Millisecond), update.Round(time.Millisecond))
	if res.floorCreate == 0 || create < res.floorCreate {
		res.floorCreate, res.floorFirst = create, createFirst
	}
	if res.floorUpdate == 0 || update < res.floorUpdate {
		res.floorUpdate = update
	}
	return parallel(ctx, o.namespaces, o.workers, func(ctx context.Context, i int) error {
		return cs.CoreV1().Secrets(nsName(i)).Delete(ctx, name, metav1.DeleteOptions{})
	})
}
