package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// The chart's alerts and dashboard (charts/platform-operators/files/monitoring).
var monitoringFiles = []string{
	"../../../charts/platform-operators/files/monitoring/alerts.yaml",
	"../../../charts/platform-operators/files/monitoring/dashboard.json",
}

// metricRef is a metric name in a PromQL expression: every metric the chart's queries use is
// followed by its label matchers.
var metricRef = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// metricNames returns the metric families text refers to: series names with a histogram's or
// summary's _bucket/_sum/_count suffix stripped.
func metricNames(text string) []string {
	seen := map[string]bool{}
	for _, m := range metricRef.FindAllStringSubmatch(text, -1) {
		name := m[1]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		seen[name] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum by (controller) (rate(controller_runtime_reconcile_errors_total{__SELECTOR__}[5m])) > 0`, "controller_runtime_reconcile_errors_total"},
		{`histogram_quantile(0.99, sum by (le) (rate(platform_operators_scheduledjob_job_creation_skew_seconds_bucket{job=~\"$job\"}[15m])))`, "platform_operators_scheduledjob_job_creation_skew_seconds"},
		{`(max(leader_election_master_status{a="b"}) or vector(0)) < 1`, "leader_election_master_status"},
		{`a{x="y"} - b_count{x="y"}`, "a b"},
		{`rate(no_selector[5m])`, ""},
	} {
		if got := strings.Join(metricNames(tc.expr), " "); got != tc.want {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// missingMetrics lists the names that are not families of the scrape.
func missingMetrics(names []string, families map[string]bool) []string {
	var missing []string
	for _, n := range names {
		if !families[n] {
			missing = append(missing, n)
		}
	}
	return missing
}

func TestMissingMetricsNamesATypo(t *testing.T) {
	families := map[string]bool{"controller_runtime_reconcile_errors_total": true}
	if got := missingMetrics([]string{"controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_erors_total"}, families); len(got) != 1 || got[0] != "controller_runtime_reconcile_erors_total" {
		t.Errorf("missingMetrics = %v, want the misspelt name", got)
	}
}

// TestEveryMetricTheAlertsAndDashboardUseExists starts the manager with every controller against
// a real API server, gives each controller something to do, scrapes its /metrics as Prometheus
// does, and checks every metric the chart's PrometheusRule and Grafana dashboard name.
func TestEveryMetricTheAlertsAndDashboardUseExists(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddress(t)
	o, err := parseFlags([]string{"--metrics-bind-address=" + addr, "--metrics-secure=false", "--health-probe-bind-address=0",
		"--leader-elect=true", "--leader-election-namespace=default", "--controllers=*,podwatcher"})
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	// As in production (run): the manager's own metrics go into controller-runtime's registry,
	// which the metrics endpoint serves. No other test of this package uses that registry.
	startTestManager(t, ctx, o, enabled, cfg, crmetrics.Registry, nil)

	// Work for each controller: a SecretSync with a copy, a ScheduledJob, an At, a pod.
	for _, ns := range []string{"mon-src", "mon-a"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mon-src", Name: "creds"}, StringData: map[string]string{"k": "v"}},
		&v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "mon"}, Spec: v1alpha1.SecretSyncSpec{Source: v1alpha1.SecretSyncSource{Namespace: "mon-src", Name: "creds"}}},
		// The annotation gives it the series of its own alert threshold.
		&v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Namespace: "mon-a", Name: "nightly", Annotations: map[string]string{keys.AnnotationAlertNoSuccessAfter: "26h"}}, Spec: v1alpha1.ScheduledJobSpec{Schedule: "0 2 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}}},
		&v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Namespace: "mon-a", Name: "later"}, Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now().Add(time.Hour)), Command: "echo hi"}},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}

	// A success, as the controller records one (a Job envtest cannot run): the last-success series.
	sj := objs[2].(*v1alpha1.ScheduledJob)
	eventually(t, func() string { return "recording a success on the ScheduledJob" }, func() bool {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sj), sj); err != nil {
			return false
		}
		patch := client.MergeFrom(sj.DeepCopy())
		sj.Status.LastSuccessfulTime = &metav1.Time{Time: time.Now().Add(-time.Hour).Truncate(time.Second)}
		return c.Status().Patch(ctx, sj, patch) == nil
	})

	var want []string
	for _, f := range monitoringFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names := metricNames(string(b))
		if len(names) < 5 {
			t.Fatalf("%s: only %d metric names found (%v): the extraction is broken", f, len(names), names)
		}
		want = append(want, names...)
	}
	for _, n := range []string{"leader_election_master_status", "workqueue_depth", "platform_operators_secretsync_copies_desired", "platform_operators_scheduledjob_runs_finished_total", "platform_operators_pod_transitions_total",
		"platform_operators_scheduledjob_last_successful_timestamp_seconds", "platform_operators_scheduledjob_no_success_alert_after_seconds", "platform_operators_object_metrics_untracked_objects"} {
		if !slices.Contains(want, n) {
			t.Errorf("%s is not among the names read from the chart's files: %v", n, want)
		}
	}
	var missing []string
	// The pod watcher counts pods added after its informer's initial list (one present before is
	// not news): a pod created while the manager was still starting (two shared cores under load)
	// never showed in the counter. So a new pod every 2 s until the counter is served.
	pods := 0
	var lastPod time.Time
	eventually(t, func() string {
		return "metrics the chart's alerts and dashboard use are not served: " + strings.Join(missing, ", ")
	}, func() bool {
		if pods == 0 || (time.Since(lastPod) > 2*time.Second && slices.Contains(missing, "platform_operators_pod_transitions_total")) {
			pods++
			lastPod = time.Now()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mon-a", Name: fmt.Sprintf("p-%d", pods)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			if err := c.Create(ctx, pod); err != nil {
				t.Fatalf("creating pod %s: %v", pod.Name, err)
			}
		}
		families, err := scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			missing = []string{err.Error()}
			return false
		}
		missing = missingMetrics(want, families)
		return len(missing) == 0
	})
}

// scrape reads a Prometheus text exposition and returns its metric family names.
func scrape(ctx context.Context, url string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name, f := range fams {
		if len(f.GetMetric()) > 0 {
			out[name] = true
		}
	}
	return out, nil
}
