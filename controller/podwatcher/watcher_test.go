package podwatcher

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// lines collects log lines from a funcr logger.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, prefix+" "+args)
}

func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

func TestWatcherAgainstAPIServer(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{"watched", "other"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	newPod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	// A pod that exists before the watcher starts is not reported as added.
	early := newPod("watched", "early")
	if err := c.Create(ctx, early); err != nil {
		t.Fatal(err)
	}

	log := &lines{}
	opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}}
	if err := cachebounds.ManagerOptions(cachebounds.Inventory{Name: "podwatcher-test", Kinds: []cachebounds.Kind{CacheKind([]string{"watched"})}}, cache.Options{}, &opts); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(&Watcher{Informers: mgr.GetCache(), Log: funcr.New(log.add, funcr.Options{}), Metrics: metrics}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	waitFor(t, func() bool { return contains(log.snapshot(), `"msg"="Pod watcher started"`) })
	// Events reach a handler in order, so once the delete of "web" is logged below, any report
	// about "early" (initial list) would be in the log too: the exact comparison catches it.

	pod := newPod("watched", "web")
	ignored := newPod("other", "ignored")
	for _, p := range []*corev1.Pod{pod, ignored} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// A status update that does not change the phase is not news; one that does is.
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	pod.Status.Phase = corev1.PodPending
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{pod, ignored} {
		// Unscheduled pods are removed at once, without a kubelet.
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	want := []string{
		`"msg"="Pod added" "pod"={"name"="web" "namespace"="watched"} "oldPhase"="none" "newPhase"="Pending"`,
		`"msg"="Pod phase changed" "pod"={"name"="web" "namespace"="watched"} "oldPhase"="Pending" "newPhase"="Running"`,
		`"msg"="Pod deleted" "pod"={"name"="web" "namespace"="watched"} "oldPhase"="Running" "newPhase"="none"`,
	}
	waitFor(t, func() bool { return contains(log.snapshot(), want[2]) })
	got := log.snapshot()
	var podLines []string
	for _, l := range got {
		if contains([]string{l}, `"pod"=`) {
			podLines = append(podLines, l)
		}
	}
	if fmt.Sprint(podLines) != fmt.Sprint(prefixed(want)) {
		t.Fatalf("pod log lines:\n%q\nwant exactly:\n%q", podLines, prefixed(want))
	}
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"added", "none", "Pending"}, 1},
		{[]string{"phaseChanged", "Pending", "Running"}, 1},
		{[]string{"deleted", "Running", "none"}, 1},
	} {
		if got := testutil.ToFloat64(metrics.Transitions.WithLabelValues(tc.labels...)); got != tc.want {
			t.Errorf("transitions%v = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

func prefixed(want []string) []string {
	out := make([]string, len(want))
	for i, w := range want {
		out[i] = ` "level"=0 ` + w
	}
	return out
}

func contains(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}) != nil {
		t.Fatal("condition not met within 30s")
	}
}
