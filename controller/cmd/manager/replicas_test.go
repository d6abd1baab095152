package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/leaderfence"
)

// informerLog is the manager's cache with a record of the kinds asked of it before and after it
// started: a kind first asked after the start is an informer started lazily, which the
// up-front list (the kinds of cacheInventory) missed.
type informerLog struct {
	cache.Cache
	scheme *runtime.Scheme

	mu      sync.Mutex
	started bool
	before  map[string]bool
	lazy    map[string]bool
}

func (c *informerLog) note(obj runtime.Object) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return
	}
	c.noteKind(gvk)
}

func (c *informerLog) noteKind(gvk schema.GroupVersionKind) {
	kind := strings.TrimSuffix(gvk.Kind, "List")
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.started:
		c.before[kind] = true
	case !c.before[kind]:
		c.lazy[kind] = true
	}
}

func (c *informerLog) lazyKinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.lazy {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *informerLog) Start(ctx context.Context) error {
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	return c.Cache.Start(ctx)
}

func (c *informerLog) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.note(obj)
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *informerLog) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.noteKind(gvk)
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c *informerLog) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.note(obj)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *informerLog) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.note(list)
	return c.Cache.List(ctx, list, opts...)
}

// replica is one manager of the test, as one pod of the chart's Deployment.
type replica struct {
	mgr       ctrl.Manager
	informers *informerLog
	readyz    string
	stop      context.CancelFunc
	done      chan struct{}
}

func (r *replica) ready() (bool, string) {
	resp, err := http.Get(r.readyz + "?verbose")
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, string(body)
}

// healthzChecks lists the checks /healthz?verbose reports, one "[+]name ok" or "[-]name ..." each.
func (r *replica) healthzChecks(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(r.readyz, "/readyz") + "/healthz?verbose")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	var checks []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[+]") || strings.HasPrefix(line, "[-]") {
			checks = append(checks, line)
		}
	}
	return checks
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// freeAddress returns a loopback address nothing listens on (the manager binds it right after).
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func startReplica(t *testing.T, cfg *rest.Config, args []string) *replica {
	t.Helper()
	probeAddr := freeAddress(t)
	o, err := parseFlags(append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=" + probeAddr}, args...))
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{readyz: "http://" + probeAddr + "/readyz", done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	mgr, err := newManager(ctx, o, enabled, cfg, logr.Discard(), prometheus.NewRegistry(), func(opts *ctrl.Options) {
		// Two replicas in one process register the same controller names.
		opts.Controller.SkipNameValidation = ptr.To(true)
		bounded := opts.NewCache // the manager's own (cachebounds.ManagerOptions)
		opts.NewCache = func(cfg *rest.Config, co cache.Options) (cache.Cache, error) {
			c, err := bounded(cfg, co)
			r.informers = &informerLog{Cache: c, scheme: co.Scheme, before: map[string]bool{}, lazy: map[string]bool{}}
			return r.informers, err
		}
		// A quick handover; the chart's defaults are 90s/70s/2s (defaultLeaseDuration).
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = ptr.To(3*time.Second), ptr.To(2*time.Second), ptr.To(200*time.Millisecond)
	})
	if err != nil {
		t.Fatal(err)
	}
	r.mgr = mgr
	go func() {
		defer close(r.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// eventually polls cond every 100ms for up to a minute (two shared cores start two managers).
func eventually(t *testing.T, msg func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", msg())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two replicas, as the chart runs with replicaCount 2: both become ready while only one leads
// (the standby holds the same synced caches), the leader's controllers start no informer of their
// own (the up-front list is complete), and when the leader goes the standby takes over without
// ever reporting unready.
func TestReplicasAreReadyWithWarmCachesAndHandOver(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	// Something for every controller to work on, so each one reads what it reads.
	k8s, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "source"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"tenant": "yes"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "source"}, StringData: map[string]string{"k": "v"}},
		&v1alpha1.SecretSync{
			ObjectMeta: metav1.ObjectMeta{Name: "sync"},
			Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "source", Name: "shared"},
				Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}},
			},
		},
		&v1alpha1.At{
			ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "tenant"},
			Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now().Add(-time.Minute)), Command: "true"},
		},
		&v1alpha1.ScheduledJob{
			ObjectMeta: metav1.ObjectMeta{Name: "often", Namespace: "tenant"},
			Spec: v1alpha1.ScheduledJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}},
				}},
			}}},
		},
	} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}

	args := []string{"--controllers=*,podwatcher", "--leader-elect", "--leader-election-namespace=default", "--leader-election-id=replicas-test"}
	a := startReplica(t, cfg, args)
	b := startReplica(t, cfg, args)
	replicas := []*replica{a, b}

	state := func() string {
		var out []string
		for i, r := range replicas {
			ok, body := r.ready()
			out = append(out, fmt.Sprintf("replica %d: elected=%t ready=%t %q", i, r.elected(), ok, body))
		}
		return strings.Join(out, "; ")
	}
	eventually(t, state, func() bool {
		okA, _ := a.ready()
		okB, _ := b.ready()
		return okA && okB && (a.elected() || b.elected())
	})
	leader, standby := a, b
	if b.elected() {
		leader, standby = b, a
	}
	if standby.elected() {
		t.Fatalf("both replicas lead: %s", state())
	}
	// Liveness restarts the pod, so /healthz holds only what a restart cures: the ping (a process
	// that cannot answer). Anything that can fail for slowness or for the cluster's state belongs
	// on /readyz (issue 46, docs/reliability.md "Probes").
	for i, r := range replicas {
		if checks := r.healthzChecks(t); !slices.Equal(checks, []string{"[+]ping ok"}) {
			t.Errorf("replica %d: /healthz checks %q, want only [+]ping ok", i, checks)
		}
	}
	// The standby's client writes nothing (controller/leaderfence): it has never held the Lease.
	probe := func(r *replica, name string) error {
		return r.mgr.GetClient().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	if err := probe(standby, "from-the-standby"); !errors.Is(err, leaderfence.ErrLeaseLost) {
		t.Errorf("a write through the standby's client: %v, want %v", err, leaderfence.ErrLeaseLost)
	}
	if err := probe(leader, "from-the-leader"); err != nil {
		t.Errorf("a write through the leader's client: %v", err)
	}
	// The Lease lock records "<id> became leader" on the Lease, as controller-runtime's does.
	eventually(t, func() string { return "no LeaderElection Event on the Lease" }, func() bool {
		var evs corev1.EventList
		if err := k8s.List(ctx, &evs, client.InNamespace("default")); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" && strings.Contains(e.Message, "became leader") {
				return true
			}
		}
		return false
	})

	// The leader's controllers have done their work: the SecretSync copied its Secret, the At
	// started its Job.
	eventually(t, func() string { return "the SecretSync copy never appeared; " + state() }, func() bool {
		return k8s.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "shared"}, &corev1.Secret{}) == nil
	})
	eventually(t, func() string { return "the At never started its Job; " + state() }, func() bool {
		var at v1alpha1.At
		return k8s.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "once"}, &at) == nil && at.Status.JobName != ""
	})
	for i, r := range replicas {
		if lazy := r.informers.lazyKinds(); len(lazy) > 0 {
			t.Errorf("replica %d started informers after its start for %q: declare them in the controller's CacheKind(s)", i, lazy)
		}
	}

	// Handover: the leader stops (and releases the Lease); the standby, ready all along, leads.
	leader.stop()
	deadline := time.Now().Add(time.Minute)
	for !standby.elected() {
		if ok, body := standby.ready(); !ok {
			t.Fatalf("the standby reported unready during the handover: %s", body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby never took over: %s", state())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ok, body := standby.ready(); !ok {
		t.Errorf("the new leader is not ready: %s", body)
	}
	if err := probe(standby, "from-the-new-leader"); err != nil {
		t.Errorf("a write through the new leader's client: %v", err)
	}
}
