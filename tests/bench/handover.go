package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The handover cases. Each stops the leader at t0 and, at the same instant, creates a namespace
// the SecretSync targets; the handover is over when the copy in it is visible through a watch.
const (
	// caseGraceful: SIGTERM to the leader (it releases the Lease), a warm standby running.
	caseGraceful = "graceful"
	// caseKill: SIGKILL to the leader (the Lease runs out), a warm standby running.
	caseKill = "kill"
	// caseRollout: SIGTERM to the leader and a new replica started at t0, no standby.
	caseRollout = "rollout"
	// caseRolloutStandby: as caseRollout, with a warm standby running too: which one wins.
	caseRolloutStandby = "rollout-standby"
)

var handoverCases = []string{caseGraceful, caseKill, caseRollout, caseRolloutStandby}

type handoverOptions struct {
	namespaces, secrets, runs int
	cases                     []string
	// warm is how long a standby runs after it became ready before the leader is stopped, and the
	// quiet time before each stop when there is no standby.
	warm time.Duration
}

const (
	handoverSync   = "handover"
	handoverSource = "handover-source"
	handoverSecret = "shared"
	handoverLabel  = "bench.platform-operators.io/handover"
	// handoverTimeout bounds each wait of a run (a new leader, a copy, a replica's readiness).
	handoverTimeout = 3 * time.Minute
)

func hoNS(i int) string { return fmt.Sprintf("ho-%05d", i) }

// handoverRun is one stop of the leader. Durations are from t0, the signal to the leader;
// a negative one was not observed.
type handoverRun struct {
	kase string
	n    int
	// released: the Lease's holder became empty (the old leader released it).
	released time.Duration
	// acquired: the Lease named the new holder, as seen by the bench's watch.
	acquired time.Duration
	// copied: the copy in the namespace created at t0 was visible (the new leader's first write
	// the bench looks for).
	copied time.Duration
	// acquiredLog and workersLog are the new leader's own log lines "Successfully acquired
	// lease" and the SecretSync controller's "Starting workers" (its sources synced).
	acquiredLog, workersLog time.Duration
	// freshReady: the replica started at t0 answered /readyz (rollout cases); freshCampaign: it
	// logged that it campaigns for the Lease.
	freshReady, freshCampaign time.Duration
	// freshWon: the replica started at t0 took the Lease (rather than the standby).
	freshWon bool
	// standbyStart and standbyCampaign: how long the standby took from its start to /readyz and
	// to campaigning (a cold start on an otherwise idle cluster).
	standbyStart, standbyCampaign time.Duration
	// oldWrote: the copy was visible before the Lease changed hands, so the old leader wrote it.
	oldWrote bool
	cpu      string
}

type handoverResult struct {
	o                                        handoverOptions
	nsCreate, secretCreate, settled, initial time.Duration
	leaseSeconds                             int32
	runs                                     []handoverRun
}

// replica is one manager process.
type replica struct {
	name    string
	m       *testbed.Manager
	started time.Time
	exited  chan struct{}
	cancel  context.CancelFunc

	mu    sync.Mutex
	ready time.Time
}

func (r *replica) pid() int { return r.m.Cmd.Process.Pid }

func (r *replica) readyAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

// pollReady records when /readyz first answers 200, polling every 50 ms.
func (r *replica) pollReady(ctx context.Context) {
	// The replica exiting ends the polling as ctx ending does.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-r.exited:
			stop()
		case <-ctx.Done():
		}
	}()
	_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := testbed.HTTPGet(hctx, "http://"+r.m.ProbeAddr+"/readyz"); err != nil {
			return false, nil
		}
		r.mu.Lock()
		r.ready = time.Now()
		r.mu.Unlock()
		return true, nil
	})
}

// logMarks are the first times, at or after some instant, that a replica logged a step of its
// election (zero if it did not).
type logMarks struct {
	// campaigning: "Attempting to acquire leader lease...", logged once the caches have synced
	// and the runnables that need no leader have started.
	campaigning time.Time
	// acquired: "Successfully acquired lease".
	acquired time.Time
	// workers: the SecretSync controller's "Starting workers": its event sources have synced
	// (every cached object replayed to its handlers).
	workers time.Time
}

// logTimes reads the replica's JSON log for its logMarks at or after since.
func (r *replica) logTimes(since time.Time) (m logMarks) {
	f, err := os.Open(r.m.LogPath)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			TS         string `json:"ts"`
			Msg        string `json:"msg"`
			Controller string `json:"controller"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, line.TS)
		if err != nil || ts.Before(since) {
			continue
		}
		switch {
		case m.campaigning.IsZero() && line.Msg == "Attempting to acquire leader lease...":
			m.campaigning = ts
		case m.acquired.IsZero() && line.Msg == "Successfully acquired lease":
			m.acquired = ts
		case m.workers.IsZero() && line.Msg == "Starting workers" && line.Controller == "secretsync":
			m.workers = ts
		}
	}
	return
}

// leads reports whether the replica's leader_election_master_status metric is 1.
func (r *replica) leads(ctx context.Context) bool {
	body, err := testbed.HTTPGet(ctx, "http://"+r.m.MetricsAddr+"/metrics")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
			return true
		}
	}
	return false
}

// campaigned returns when the replica logged that it campaigns for the Lease, at or after since,
// waiting up to 5 s for the line: it follows /readyz by a little (zero if it never came).
func (r *replica) campaigned(since time.Time) time.Time {
	var c time.Time
	// Running out of time leaves c zero, which is the answer then.
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		c = r.logTimes(since).campaigning
		return !c.IsZero(), nil
	})
	return c
}

// holderChange is the Lease naming a new holder ("" once released), as the bench's watch saw it.
type holderChange struct {
	holder string
	at     time.Time
}

// leaseWatch follows the manager's leader election Lease.
type leaseWatch struct {
	mu       sync.Mutex
	changes  []holderChange
	duration int32
	stop     chan struct{}
}

func watchLease(ctx context.Context, cs kubernetes.Interface, namespace, name string) (*leaseWatch, error) {
	w := &leaseWatch{stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = "metadata.name=" + name }))
	inf := f.Coordination().V1().Leases().Informer()
	record := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return
		}
		now := time.Now()
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if holder != "" && l.Spec.LeaseDurationSeconds != nil {
			w.duration = *l.Spec.LeaseDurationSeconds
		}
		if n := len(w.changes); n == 0 || w.changes[n-1].holder != holder {
			w.changes = append(w.changes, holderChange{holder: holder, at: now})
		}
	}
	if err := runRecording(ctx, inf, w.stop, record); err != nil {
		return nil, fmt.Errorf("the Lease watch: %w", err)
	}
	return w, nil
}

func (w *leaseWatch) close() { close(w.stop) }

func (w *leaseWatch) holder() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) == 0 {
		return ""
	}
	return w.changes[len(w.changes)-1].holder
}

// find returns the first change after since whose holder matches.
func (w *leaseWatch) find(since time.Time, match func(string) bool) (holderChange, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.changes {
		if !c.at.Before(since) && match(c.holder) {
			return c, true
		}
	}
	return holderChange{}, false
}

// wait waits for find to succeed.
func (w *leaseWatch) wait(ctx context.Context, since time.Time, match func(string) bool, timeout time.Duration) (holderChange, error) {
	var c holderChange
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, timeout, true, func(context.Context) (ok bool, _ error) {
		c, ok = w.find(since, match)
		return ok, nil
	}); err != nil {
		return holderChange{}, fmt.Errorf("the Lease did not change as expected within %s (holder now %q)", timeout, w.holder())
	}
	return c, nil
}

// handover runs the manager replicas of the benchmark.
type handover struct {
	e          *env
	o          handoverOptions
	spec       testbed.ManagerSpec
	kubeconfig string
	lease      *leaseWatch
	copies     *observer
	live       []*replica
	leader     *replica
	started    int
}

func (h *handover) start(ctx context.Context) (*replica, error) {
	h.started++
	name := fmt.Sprintf("replica-%02d", h.started)
	t := time.Now()
	m, err := testbed.StartManager(h.e.binary, h.spec, h.kubeconfig, filepath.Join(h.e.dir, name+".log"), testbed.StartOptions{})
	if err != nil {
		return nil, err
	}
	r := &replica{name: name, m: m, started: t, exited: make(chan struct{})}
	go func() { _ = m.Cmd.Wait(); close(r.exited) }()
	pctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go r.pollReady(pctx)
	h.live = append(h.live, r)
	return r, nil
}

func (h *handover) waitReady(ctx context.Context, r *replica) error {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, handoverTimeout, true, func(context.Context) (bool, error) {
		if !r.readyAt().IsZero() {
			return true, nil
		}
		select {
		case <-r.exited:
			return false, fmt.Errorf("%s exited before it became ready; see %s", r.name, r.m.LogPath)
		default:
			return false, nil
		}
	})
	switch {
	case err == nil || !wait.Interrupted(err):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return fmt.Errorf("%s not ready after %s; see %s", r.name, handoverTimeout, r.m.LogPath)
	}
}

// stop stops r (SIGTERM, SIGKILL after 45 s: more than the 30 s graceful shutdown) and forgets it.
func (h *handover) stop(r *replica) {
	select {
	case <-r.exited:
		// Reaped already: its pid may belong to another process by now.
	default:
		_ = testbed.StopPID(r.pid(), 45*time.Second)
		select {
		case <-r.exited:
		case <-time.After(5 * time.Second):
		}
	}
	r.cancel()
	h.live = slices.DeleteFunc(h.live, func(x *replica) bool { return x == r })
}

func (h *handover) stopAll() {
	for len(h.live) > 0 {
		h.stop(h.live[0])
	}
}

// runHandover measures leader handovers (issue 18 §4): it fills the cluster, starts a first
// leader that copies the SecretSync's source everywhere, then stops the leader o.runs times per
// case, each time timing the Lease's change of holder and the new leader's first copy.
func runHandover(ctx context.Context, e *env, o handoverOptions) (*handoverResult, error) {
	res := &handoverResult{o: o}
	// The replicas below are the only managers: the one setup started would be a third.
	e.stopManager()
	spec, err := testbed.ReadManagerSpec(ctx, e.cs, releaseNamespace, releaseName, "manager")
	if err != nil {
		return nil, err
	}
	// The chart's default log level (setup turns it down to error): the new leader's log lines
	// date its steps.
	spec.Args = setArg(spec.Args, "--log-level", "info")
	leaseName, leaseNS := argValue(spec.Args, "--leader-election-id"), argValue(spec.Args, "--leader-election-namespace")
	if leaseName == "" || leaseNS == "" {
		return nil, fmt.Errorf("the chart's args name no leader election Lease: %q", spec.Args)
	}
	kc, err := testbed.ServiceAccountKubeconfig(ctx, e.cs, e.admin, spec.Namespace, spec.ServiceAccount, 12*time.Hour)
	if err != nil {
		return nil, err
	}
	h := &handover{e: e, o: o, spec: spec, kubeconfig: filepath.Join(e.dir, "handover.kubeconfig")}
	if err := os.WriteFile(h.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	defer h.stopAll()

	if err := populate(ctx, e.cs, o, res); err != nil {
		return nil, err
	}
	if err := createHandoverSync(ctx, e); err != nil {
		return nil, err
	}
	if h.copies, err = newObserver(ctx, e.cs, keys.LabelSecretSync+"="+handoverSync); err != nil {
		return nil, err
	}
	defer h.copies.close()
	if h.lease, err = watchLease(ctx, e.cs, leaseNS, leaseName); err != nil {
		return nil, err
	}
	defer h.lease.close()

	logf("handover: starting the first leader; it copies the source into %d namespaces", o.namespaces)
	t := time.Now()
	if h.leader, err = h.start(ctx); err != nil {
		return nil, err
	}
	if err := h.waitReady(ctx, h.leader); err != nil {
		return nil, err
	}
	if _, err := h.lease.wait(ctx, t, func(s string) bool { return s != "" }, handoverTimeout); err != nil {
		return nil, err
	}
	if _, err := h.copies.waitAll(ctx, "v1", o.namespaces, 15*time.Minute); err != nil {
		return nil, err
	}
	res.initial = time.Since(t)
	logf("handover: first leader ready in %s, all %d copies in %s", h.leader.readyAt().Sub(t).Round(time.Millisecond), o.namespaces, res.initial.Round(time.Millisecond))

	for _, kase := range o.cases {
		for i := 1; i <= o.runs; i++ {
			run, err := h.once(ctx, kase, i)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", kase, i, err)
			}
			res.runs = append(res.runs, run)
		}
	}
	h.lease.mu.Lock()
	res.leaseSeconds = h.lease.duration
	h.lease.mu.Unlock()
	return res, nil
}

// once stops the leader once, as kase says, and times the handover.
func (h *handover) once(ctx context.Context, kase string, i int) (handoverRun, error) {
	run := handoverRun{kase: kase, n: i, released: -1, acquiredLog: -1, workersLog: -1, freshReady: -1, freshCampaign: -1, standbyStart: -1, standbyCampaign: -1}
	// Every run starts from one leader and, when the case has one, one fresh standby.
	for _, r := range slices.Clone(h.live) {
		if r != h.leader {
			h.stop(r)
		}
	}
	var standby *replica
	if kase != caseRollout {
		var err error
		if standby, err = h.start(ctx); err != nil {
			return run, err
		}
		if err := h.waitReady(ctx, standby); err != nil {
			return run, err
		}
		run.standbyStart = standby.readyAt().Sub(standby.started)
	}
	if !sleepUntil(ctx, time.Now().Add(h.o.warm)) {
		return run, ctx.Err()
	}
	if standby != nil {
		if c := standby.campaigned(standby.started); !c.IsZero() {
			run.standbyCampaign = c.Sub(standby.started)
		}
	}
	old := h.leader
	oldHolder := h.lease.holder()
	if oldHolder == "" {
		return run, fmt.Errorf("no replica holds the Lease before the stop")
	}
	ns := fmt.Sprintf("ho-new-%s-%d", kase, i)
	sig := syscall.SIGTERM
	if kase == caseKill {
		sig = syscall.SIGKILL
	}

	cpu0 := sampleCPU()
	t0 := time.Now()
	if err := syscall.Kill(old.pid(), sig); err != nil {
		return run, err
	}
	var fresh *replica
	if kase == caseRollout || kase == caseRolloutStandby {
		var err error
		if fresh, err = h.start(ctx); err != nil {
			return run, err
		}
	}
	if _, err := h.e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{handoverLabel: "true"},
	}}, metav1.CreateOptions{}); err != nil {
		return run, err
	}

	acq, err := h.lease.wait(ctx, t0, func(s string) bool { return s != "" && s != oldHolder }, handoverTimeout)
	if err != nil {
		return run, err
	}
	run.acquired = acq.at.Sub(t0)
	if rel, ok := h.lease.find(t0, func(s string) bool { return s == "" }); ok && rel.at.Before(acq.at) {
		run.released = rel.at.Sub(t0)
	}
	copied, err := h.copies.waitNS(ctx, ns, "v1", 0, handoverTimeout)
	if err != nil {
		return run, err
	}
	run.cpu = cpuSummary(cpu0, sampleCPU(), runtime.NumCPU())
	run.copied = copied.Sub(t0)
	run.oldWrote = copied.Before(acq.at)

	// The winner is the replica whose log says it acquired the Lease after t0.
	var winner *replica
	// Running out of time (or ctx ending) leaves winner nil: the metrics below are asked then.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, r := range h.live {
			if r == old {
				continue
			}
			if m := r.logTimes(t0); !m.acquired.IsZero() {
				winner = r
				run.acquiredLog = m.acquired.Sub(t0)
				if !m.workers.IsZero() {
					run.workersLog = m.workers.Sub(t0)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if winner == nil {
		// No log line (a changed message?): ask each replica's leader election metric instead.
		for _, r := range h.live {
			if r != old && r.leads(ctx) {
				winner = r
				logf("handover %s #%d: no %q line in %s; the leader is named by its metrics", kase, i, "Successfully acquired lease", r.m.LogPath)
			}
		}
	}
	if winner == nil {
		return run, fmt.Errorf("no replica says it leads, in its log or its metrics")
	}
	run.freshWon = winner == fresh
	if fresh != nil {
		if err := h.waitReady(ctx, fresh); err != nil {
			return run, err
		}
		run.freshReady = fresh.readyAt().Sub(t0)
		if c := fresh.campaigned(t0); !c.IsZero() {
			run.freshCampaign = c.Sub(t0)
		}
	}
	// The old leader must be gone before the next run (SIGTERM: it finishes its shutdown).
	select {
	case <-old.exited:
	case <-time.After(45 * time.Second):
	}
	h.stop(old)
	h.leader = winner
	who := "standby"
	if run.freshWon {
		who = "new replica"
	}
	logf("handover %s #%d: released %s, new holder %s (%s), copy %s; winner log: acquired %s, workers %s; new replica campaigns %s, ready %s; old wrote: %v; CPU t0→copy: %s",
		kase, i, dur(run.released), dur(run.acquired), who, dur(run.copied), dur(run.acquiredLog), dur(run.workersLog), dur(run.freshCampaign), dur(run.freshReady), run.oldWrote, run.cpu)
	return run, nil
}

func dur(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

// populate creates the namespaces (each targeted by the SecretSync) and the unrelated Secrets,
// and waits for kube-controller-manager to give every namespace its default ServiceAccount and
// root CA ConfigMap, so the runs do not compete with that.
func populate(ctx context.Context, cs kubernetes.Interface, o handoverOptions, res *handoverResult) error {
	logf("handover: creating %d namespaces", o.namespaces)
	t := time.Now()
	if err := parallel(ctx, o.namespaces, 64, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: hoNS(i), Labels: map[string]string{handoverLabel: "true"},
		}}, metav1.CreateOptions{})
		return ignoreExists(err)
	}); err != nil {
		return err
	}
	res.nsCreate = time.Since(t)
	logf("handover: %d namespaces in %s; creating %d unrelated 2 KiB Secrets", o.namespaces, res.nsCreate.Round(time.Millisecond), o.secrets)
	t = time.Now()
	var done atomic.Int64
	step := int64(max(1, o.secrets/10))
	if err := parallel(ctx, o.secrets, 64, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Secrets(hoNS(i%o.namespaces)).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%06d", i)}, Data: map[string][]byte{"blob": unrelatedBlob()},
		}, metav1.CreateOptions{})
		if n := done.Add(1); n%step == 0 {
			logf("handover: %d Secrets (%s)", n, time.Since(t).Round(time.Second))
		}
		return ignoreExists(err)
	}); err != nil {
		return err
	}
	res.secretCreate = time.Since(t)
	logf("handover: %d Secrets in %s; waiting for kube-controller-manager's ServiceAccounts and ConfigMaps", o.secrets, res.secretCreate.Round(time.Millisecond))
	if err := waitPerNamespace(ctx, o.namespaces, "ServiceAccounts default", func(ctx context.Context) ([]string, error) {
		return namespacesOf(cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"}))
	}); err != nil {
		return err
	}
	// The root CA publisher runs only when kube-controller-manager has a root CA file.
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err == nil {
		if err := waitPerNamespace(ctx, o.namespaces, "ConfigMaps kube-root-ca.crt", func(ctx context.Context) ([]string, error) {
			return namespacesOf(cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-root-ca.crt"}))
		}); err != nil {
			return err
		}
	}
	res.settled = time.Since(t)
	time.Sleep(10 * time.Second)
	return nil
}

// waitPerNamespace waits until list names every benchmark namespace.
func waitPerNamespace(ctx context.Context, namespaces int, what string, list func(context.Context) ([]string, error)) error {
	last := time.Now()
	n := 0
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, 45*time.Minute, true, func(ctx context.Context) (bool, error) {
		nss, err := list(ctx)
		if err != nil {
			return false, err
		}
		n = 0
		for _, ns := range nss {
			if strings.HasPrefix(ns, "ho-") {
				n++
			}
		}
		if n >= namespaces {
			return true, nil
		}
		if time.Since(last) > 30*time.Second {
			logf("handover: %s in %d of %d namespaces", what, n, namespaces)
			last = time.Now()
		}
		return false, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%s in only %d of %d namespaces after 45m", what, n, namespaces)
	}
	return err
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createHandoverSync creates the source namespace and Secret and the SecretSync that copies it
// into every benchmark namespace.
func createHandoverSync(ctx context.Context, e *env) error {
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: handoverSource}}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: handoverSource, Name: handoverSecret}, Type: corev1.SecretTypeOpaque, Data: payload("v1")}
	if _, err := e.cs.CoreV1().Secrets(handoverSource).Create(ctx, src, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return err
	}
	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
		"metadata": map[string]any{"name": handoverSync},
		"spec": map[string]any{
			"source": map[string]any{"namespace": handoverSource, "name": handoverSecret},
			"target": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{handoverLabel: "true"}}},
		},
	}}
	gvr := schema.GroupVersionResource{Group: "ops.platform-operators.io", Version: "v1alpha1", Resource: "secretsyncs"}
	_, err = dyn.Resource(gvr).Create(ctx, ss, metav1.CreateOptions{})
	return ignoreExists(err)
}

// setArg sets --name=value in args, replacing it if present.
func setArg(args []string, name, value string) []string {
	out := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, name+"=") })
	return append(out, name+"="+value)
}

// argValue returns the value of --name=value in args ("" if absent).
func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// spread is "min / median / max" of the observed durations in seconds, with how many were
// observed when that is not all runs.
func spread(ds []time.Duration, runs int) string {
	var seen []time.Duration
	for _, d := range ds {
		if d >= 0 {
			seen = append(seen, d)
		}
	}
	if len(seen) == 0 {
		return "–"
	}
	slices.Sort(seen)
	s := fmt.Sprintf("%.2f / %.2f / %.2f s", seen[0].Seconds(), percentile(seen, 0.5).Seconds(), seen[len(seen)-1].Seconds())
	if len(seen) < runs {
		s += fmt.Sprintf(" (%d of %d runs)", len(seen), runs)
	}
	return s
}

// writeHandoverReport replaces the handover section of path (docs/reliability.md).
func writeHandoverReport(path string, r *handoverResult, cmd string) error {
	var b strings.Builder
	o := r.o
	fmt.Fprintf(&b, "## Handover figures\n\n")
	fmt.Fprintf(&b, "Measured %s on %d cores (%s/%s), kwok cluster with Kubernetes v1.36.3 binaries; the replicas are local "+
		"processes with the chart's default args (log level info) and a token of its ServiceAccount. Command: `%s`.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, cmd)
	fmt.Fprintf(&b, "Cluster: %d namespaces, each targeted by one SecretSync (so %d copies), and %d unrelated 2 KiB Secrets spread over them. "+
		"Creating the namespaces took %s and the Secrets %s; kube-controller-manager's ServiceAccount and root CA ConfigMap in every "+
		"namespace were in place %s after the Secrets started. The first leader made all copies %s after it started. "+
		"Lease: %d s duration (controller-runtime's defaults: renew deadline 10 s, retry period 2 s, jitter up to 1.2×).\n\n",
		o.namespaces, o.namespaces, o.secrets, secs(r.nsCreate), secs(r.secretCreate), secs(r.settled), secs(r.initial), r.leaseSeconds)
	fmt.Fprintf(&b, "At t0 the bench signals the leader and creates a namespace the SecretSync targets; times are from t0 (min / median / max of %d runs per case). "+
		"The Lease and the copy are seen through client-go watches; \"acquired\" and \"workers\" are the new leader's own log lines "+
		"(`Successfully acquired lease`, the SecretSync controller's `Starting workers`). A standby runs %s after it became ready before t0.\n\n", o.runs, o.warm)
	fmt.Fprintf(&b, "| case | Lease released | new holder in the Lease | copy in the new namespace (first write) | Lease → copy | new leader: acquired → workers (log) | new replica campaigns (log) / ready | Lease won by |\n|---|---|---|---|---|---|---|---|\n")
	titles := map[string]string{
		caseGraceful:       "(a) SIGTERM, warm standby",
		caseKill:           "(b) SIGKILL, warm standby",
		caseRollout:        "(c) SIGTERM + new replica, no standby",
		caseRolloutStandby: "(d) SIGTERM + new replica, warm standby",
	}
	var standby, standbyCampaign []time.Duration
	for _, kase := range o.cases {
		var rel, acq, cp, lc, aw, fc, fr []time.Duration
		fresh, wrote := 0, 0
		for _, run := range r.runs {
			if run.kase != kase {
				continue
			}
			rel, acq, cp = append(rel, run.released), append(acq, run.acquired), append(cp, run.copied)
			lc = append(lc, run.copied-run.acquired)
			if run.acquiredLog >= 0 && run.workersLog >= 0 {
				aw = append(aw, run.workersLog-run.acquiredLog)
			}
			fc, fr = append(fc, run.freshCampaign), append(fr, run.freshReady)
			if run.freshWon {
				fresh++
			}
			if run.oldWrote {
				wrote++
			}
			if run.standbyStart >= 0 {
				standby = append(standby, run.standbyStart)
			}
			if run.standbyCampaign >= 0 {
				standbyCampaign = append(standbyCampaign, run.standbyCampaign)
			}
		}
		won := fmt.Sprintf("standby %d/%d", len(acq)-fresh, len(acq))
		if kase == caseRollout {
			won = fmt.Sprintf("new replica %d/%d", fresh, len(acq))
		} else if fresh > 0 {
			won += fmt.Sprintf(", new replica %d/%d", fresh, len(acq))
		}
		if wrote > 0 {
			won += fmt.Sprintf(" (old leader wrote the copy %d×)", wrote)
		}
		freshCol := "–"
		if kase == caseRollout || kase == caseRolloutStandby {
			freshCol = spread(fc, len(acq)) + "; " + spread(fr, len(acq))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", titles[kase], spread(rel, len(acq)), spread(acq, len(acq)), spread(cp, len(acq)),
			spread(lc, len(acq)), spread(aw, len(acq)), freshCol, won)
	}
	if len(standby) > 0 {
		fmt.Fprintf(&b, "\nA standby's cold start on the otherwise idle cluster, from the process start: campaigning (log) %s, `/readyz` %s (%d starts).\n",
			spread(standbyCampaign, len(standby)), spread(standby, len(standby)), len(standby))
	}
	fmt.Fprintf(&b, "\nEach run (CPU from t0 until the copy was seen):\n\n")
	for _, run := range r.runs {
		fmt.Fprintf(&b, "- %s #%d: released %s, holder %s, copy %s; acquired %s, workers %s (log); new replica campaigns %s, ready %s; %s\n",
			run.kase, run.n, dur(run.released), dur(run.acquired), dur(run.copied), dur(run.acquiredLog), dur(run.workersLog), dur(run.freshCampaign), dur(run.freshReady), run.cpu)
	}
	return replaceSection(path, "handover", b.String())
}

// namespacesOf returns the namespaces of the items of a list call's result.
func namespacesOf(list k8sruntime.Object, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	var out []string
	err = meta.EachListItem(list, func(o k8sruntime.Object) error {
		a, err := meta.Accessor(o)
		if err == nil {
			out = append(out, a.GetNamespace())
		}
		return err
	})
	return out, err
}
