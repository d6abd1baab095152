package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// otherNamespace is outside the pod watcher's namespace filter.
const otherNamespace = "e2e-podwatcher-other"

func testPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			// On real nodes the shell ends at SIGTERM, so a deleted pod goes Succeeded at once
			// (a bare sleep as PID 1 ignores SIGTERM and is killed after the grace period: Failed).
			Containers: []corev1.Container{{Name: "main", Image: chartJobImage,
				Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
		},
	}
}

func TestPodWatcher(t *testing.T) {
	f := features.New("the pod watcher reports pod lifecycles in its namespaces")
	f = withNamespace(f, podWatcherNamespace)
	f = withNamespace(f, otherNamespace)
	f = f.Assess("a pod created, running and deleted is logged as added, phase changed and deleted, and counted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		r := cfg.Client().Resources()
		// A pod outside the filter first, so that its absence from the log below means something.
		other := testPod(otherNamespace, "ignored")
		if err := r.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		before, _ := bed.ManagerMetrics(ctx, cfg)
		pod := testPod(podWatcherNamespace, "watched")
		if err := r.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*corev1.Pod{other, pod} {
			if err := wait.For(conditions.New(r).PodPhaseMatch(p, corev1.PodRunning), wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(waitTimeout)); err != nil {
				t.Fatalf("pod %s/%s never ran: %v", p.Namespace, p.Name, err)
			}
		}
		if err := r.Delete(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := wait.For(conditions.New(r).ResourceDeleted(pod), wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(waitTimeout)); err != nil {
			t.Fatalf("pod not deleted: %v", err)
		}

		want := []logLine{
			{Msg: "Pod added", OldPhase: "none", NewPhase: "Pending"},
			{Msg: "Pod phase changed", OldPhase: "Pending", NewPhase: "Running"},
			{Msg: "Pod deleted", OldPhase: "Running", NewPhase: "none"},
		}
		if isKind() {
			// A real container stops before the pod object goes: the phase changes once more.
			want = append(want[:2],
				logLine{Msg: "Pod phase changed", OldPhase: "Running", NewPhase: "Succeeded"},
				logLine{Msg: "Pod deleted", OldPhase: "Succeeded", NewPhase: "none"})
		}
		var got []logLine
		err := wait.For(func(ctx context.Context) (bool, error) {
			log, err := bed.ManagerLogs(ctx, cfg)
			if err != nil {
				return false, nil
			}
			got = nil
			for _, l := range parseLogLines(log) {
				if l.Pod.Name != "" {
					got = append(got, l)
				}
			}
			return containsInOrder(got, pod, want), nil
		}, wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(waitTimeout))
		if err != nil {
			t.Fatalf("log lacks the lifecycle of %s/%s in order %+v; pod lines: %+v", pod.Namespace, pod.Name, want, got)
		}
		for _, l := range got {
			if l.Pod.Namespace == otherNamespace {
				t.Errorf("pod outside the namespace filter was logged: %+v", l)
			}
		}

		after, err := bed.ManagerMetrics(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The same transitions as the log lines above, counted.
		var series []string
		for _, w := range want {
			event := map[string]string{"Pod added": "added", "Pod phase changed": "phaseChanged", "Pod deleted": "deleted"}[w.Msg]
			series = append(series, fmt.Sprintf(`platform_operators_pod_transitions_total{event=%q,from=%q,to=%q}`, event, w.OldPhase, w.NewPhase))
		}
		for _, series := range series {
			if d := counterDelta(before, after, series); d < 1 {
				t.Errorf("%s grew by %v, want at least 1", series, d)
			}
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}

// containsInOrder reports whether lines hold the wanted messages and phases for pod, in order.
func containsInOrder(lines []logLine, pod k8s.Object, want []logLine) bool {
	i := 0
	for _, l := range lines {
		if i == len(want) {
			break
		}
		w := want[i]
		if l.Pod.Name == pod.GetName() && l.Pod.Namespace == pod.GetNamespace() &&
			l.Msg == w.Msg && l.OldPhase == w.OldPhase && l.NewPhase == w.NewPhase {
			i++
		}
	}
	return i == len(want)
}

func counterDelta(before, after, series string) float64 {
	parse := func(text string) float64 {
		v, ok := metricValue(text, series)
		if !ok {
			return 0
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			panic(fmt.Sprintf("bad sample %q for %s", v, series))
		}
		return f
	}
	return parse(after) - parse(before)
}
