package chart

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The conventions of issue 36: the chart as a dependency of an umbrella chart, renderMode for every
// optional monitoring object, the PDB's unhealthyPodEvictionPolicy and `helm test` with metrics off.

// umbrella returns a parent chart that includes this chart as a dependency switched by
// `condition: platform-operators.enabled`, as a platform team's umbrella chart does.
func umbrella(t *testing.T) *chart.Chart {
	t.Helper()
	parent := &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2,
			Name:       "platform",
			Version:    "1.0.0",
			Dependencies: []*chart.Dependency{{
				Name:       "platform-operators",
				Version:    ">=0.0.0-0",
				Repository: "file://../platform-operators",
				Condition:  "platform-operators.enabled",
			}},
		},
		Values: map[string]any{},
	}
	parent.AddDependency(loadChart(t))
	return parent
}

func TestAnUmbrellaChartCanSwitchItOnAndOff(t *testing.T) {
	cases := []struct {
		name, values string
		// wantManager: the subchart's Deployment is rendered.
		wantManager bool
	}{
		{name: "enabled: true with a global of the parent's own", values: "platform-operators:\n  enabled: true\nglobal:\n  foo: bar\n", wantManager: true},
		{name: "enabled: false leaves the chart out", values: "platform-operators:\n  enabled: false\nglobal:\n  foo: bar\n"},
		{name: "no condition value: the subchart's own default (true)", values: "", wantManager: true},
		{name: "enabled with values of the subchart", values: "platform-operators:\n  enabled: true\n  replicaCount: 3\n", wantManager: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renderWith(t, umbrella(t), "platform", parseValues(t, tc.values), nil)
			if err != nil {
				t.Fatalf("the umbrella chart does not render: %v", err)
			}
			deployments := objectsOf[*appsv1.Deployment](r)
			if got := len(deployments) == 1; got != tc.wantManager {
				t.Fatalf("%d Deployments rendered, want the manager: %v", len(deployments), tc.wantManager)
			}
			if !tc.wantManager && len(r.objects)+len(r.hooks) != 0 {
				t.Errorf("a disabled subchart rendered %d objects and %d hooks", len(r.objects), len(r.hooks))
			}
		})
	}
	// The schema still refuses a misspelt key next to enabled.
	if _, err := renderWith(t, umbrella(t), "platform", parseValues(t, "platform-operators:\n  enabled: true\n  replicaCont: 3\n"), nil); err == nil || !strings.Contains(err.Error(), "replicaCont") {
		t.Errorf("a misspelt key beside enabled: err = %v, want the schema to name replicaCont", err)
	}
}

// TestEnabledAndGlobalOnTheCommandLine is `helm template --set enabled=true --set global.foo=bar`.
func TestEnabledAndGlobalOnTheCommandLine(t *testing.T) {
	r := mustRenderAll(t, "enabled: true\nglobal:\n  foo: bar\n")
	if n := len(objectsOf[*appsv1.Deployment](r)); n != 1 {
		t.Errorf("%d Deployments, want 1", n)
	}
	wantRenderError(t, "enabled: yes-please\n", "enabled")
}

func TestPrometheusRuleRenderMode(t *testing.T) {
	const on = "prometheusRule:\n  enabled: true\n"
	cases := []struct {
		name, values string
		served       bool
		want         int
		wantErr      string
	}{
		{name: "skipIfMissing (the default) renders none without the CRD", values: on},
		{name: "skipIfMissing renders it with the CRD", values: on, served: true, want: 1},
		{name: "alwaysRender renders it without the CRD (helm template in a GitOps pipeline)", values: on + "  renderMode: alwaysRender\n", want: 1},
		{name: "failIfMissing fails without the CRD", values: on + "  renderMode: failIfMissing\n", wantErr: "does not serve monitoring.coreos.com/v1/PrometheusRule"},
		{name: "failIfMissing renders it with the CRD", values: on + "  renderMode: failIfMissing\n", served: true, want: 1},
		{name: "alwaysRender still needs metrics", values: on + "  renderMode: alwaysRender\nmetrics:\n  enabled: false\n"},
		{name: "alwaysRender with the rule off renders none", values: "prometheusRule:\n  renderMode: alwaysRender\n"},
		{name: "an unknown mode is refused", values: on + "  renderMode: always\n", wantErr: "renderMode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := renderModeCase(t, tc.values, tc.served, prometheusRuleAPI, tc.wantErr)
			if !ok {
				return
			}
			if got := len(prometheusRules(r)); got != tc.want {
				t.Fatalf("%d PrometheusRules, want %d", got, tc.want)
			}
		})
	}
}

func TestGrafanaDashboardRenderMode(t *testing.T) {
	const on = "grafanaDashboard:\n  enabled: true\n"
	dashboards := func(r rendered) int {
		n := 0
		for _, c := range objectsOf[*corev1.ConfigMap](r) {
			if strings.HasSuffix(c.Name, "-dashboard") {
				n++
			}
		}
		return n
	}
	cases := []struct {
		name, values string
		served       bool
		want         int
		wantErr      string
	}{
		{name: "alwaysRender (the default) renders it without the Prometheus Operator: a ConfigMap needs no CRD", values: on, want: 1},
		{name: "skipIfMissing renders none without the Prometheus Operator", values: on + "  renderMode: skipIfMissing\n"},
		{name: "skipIfMissing renders it with the Prometheus Operator", values: on + "  renderMode: skipIfMissing\n", served: true, want: 1},
		{name: "failIfMissing fails without the Prometheus Operator", values: on + "  renderMode: failIfMissing\n", wantErr: "does not serve monitoring.coreos.com/v1/ServiceMonitor"},
		{name: "failIfMissing renders it with the Prometheus Operator", values: on + "  renderMode: failIfMissing\n", served: true, want: 1},
		{name: "off renders none whatever the mode", values: "grafanaDashboard:\n  renderMode: failIfMissing\n"},
		{name: "an unknown mode is refused", values: on + "  renderMode: never\n", wantErr: "renderMode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := renderModeCase(t, tc.values, tc.served, serviceMonitorAPI, tc.wantErr)
			if !ok {
				return
			}
			if got := dashboards(r); got != tc.want {
				t.Fatalf("%d dashboards, want %d", got, tc.want)
			}
		})
	}
}

func TestPodDisruptionBudgetUnhealthyPodEvictionPolicy(t *testing.T) {
	cases := []struct {
		name, values string
		want         *policyv1.UnhealthyPodEvictionPolicyType
		wantErr      string
	}{
		{name: "AlwaysAllow by default: a broken replica never blocks a drain", want: ptrTo(policyv1.AlwaysAllow)},
		{name: "IfHealthyBudget when asked", values: "podDisruptionBudget:\n  unhealthyPodEvictionPolicy: IfHealthyBudget\n", want: ptrTo(policyv1.IfHealthyBudget)},
		{name: "empty leaves it to the API server", values: "podDisruptionBudget:\n  unhealthyPodEvictionPolicy: \"\"\n"},
		{name: "anything else is refused by the schema", values: "podDisruptionBudget:\n  unhealthyPodEvictionPolicy: Always\n", wantErr: "unhealthyPodEvictionPolicy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantErr != "" {
				wantRenderError(t, tc.values, tc.wantErr)
				return
			}
			got := only[*policyv1.PodDisruptionBudget](t, mustRenderAll(t, tc.values)).Spec.UnhealthyPodEvictionPolicy
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("unhealthyPodEvictionPolicy = %v, want %v", deref(got), deref(tc.want))
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestHelmTestWithMetricsOff(t *testing.T) {
	r := mustRenderAll(t, "metrics:\n  enabled: false\n")
	var test *corev1.Pod
	for _, p := range objectsOf[*corev1.Pod](r) {
		if p.Annotations["helm.sh/hook"] == "test" {
			test = p
		}
	}
	if test == nil {
		t.Fatal("no helm test pod with metrics.enabled=false")
	}
	url := test.Spec.Containers[0].Args[1]
	svc := only[*corev1.Service](t, r)
	if want := "http://" + svc.Name + "." + svc.Namespace + ".svc:8081/readyz"; url != want {
		t.Errorf("the test asks %s, want %s (the Service's health port)", url, want)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "health" || svc.Spec.Ports[0].Port != 8081 {
		t.Errorf("Service ports %+v, want only health 8081 (no metrics port with metrics off)", svc.Spec.Ports)
	}
	if !strings.Contains(r.notes, "helm test") {
		t.Errorf("NOTES do not mention helm test with metrics off:\n%s", r.notes)
	}
	// Nothing scrapes a Service without a metrics port.
	for _, u := range objectsOf[*unstructured.Unstructured](mustRenderAll(t, "metrics:\n  enabled: false\nserviceMonitor:\n  enabled: true\n  renderMode: alwaysRender\n")) {
		if u.GetKind() == "ServiceMonitor" {
			t.Errorf("a ServiceMonitor with metrics off")
		}
	}
	// With the test off too, no Service at all.
	if got := objectsOf[*corev1.Service](mustRenderAll(t, "metrics:\n  enabled: false\ntests:\n  enabled: false\n")); len(got) != 0 {
		t.Errorf("%d Services with metrics and tests off, want none", len(got))
	}
}

// renderModeCase renders values, with api served when served (a renderMode's trigger). With
// wantErr it checks the render failed saying so and returns false; otherwise a failure is fatal.
func renderModeCase(t *testing.T, values string, served bool, api, wantErr string) (rendered, bool) {
	t.Helper()
	var apis []string
	if served {
		apis = []string{api}
	}
	r, err := renderAll(t, values, apis...)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one mentioning %q", err, wantErr)
		}
		return rendered{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}
