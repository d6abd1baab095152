package chart

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const prometheusRuleAPI = "monitoring.coreos.com/v1/PrometheusRule"

func prometheusRules(r rendered) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objectsOf[*unstructured.Unstructured](r) {
		if u.GetKind() == "PrometheusRule" {
			out = append(out, u)
		}
	}
	return out
}

// alertsOf returns alert name → expression of a PrometheusRule.
func alertsOf(t *testing.T, u *unstructured.Unstructured) map[string]string {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
	out := map[string]string{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			m := r.(map[string]any)
			name, _ := m["alert"].(string)
			if name == "" {
				name, _ = m["record"].(string)
			}
			out[name], _ = m["expr"].(string)
		}
	}
	return out
}

func TestPrometheusRule(t *testing.T) {
	if n := len(prometheusRules(mustRenderAll(t, "prometheusRule:\n  enabled: true\n"))); n != 0 {
		t.Errorf("a PrometheusRule without its CRD in the cluster would fail the install: %d rendered", n)
	}
	if n := len(prometheusRules(mustRenderAll(t, "", prometheusRuleAPI))); n != 0 {
		t.Errorf("%d PrometheusRules rendered by default, want none (off by default)", n)
	}
	rules := prometheusRules(mustRenderAll(t, "prometheusRule:\n  enabled: true\n  labels: {release: kube-prometheus-stack}\n", prometheusRuleAPI))
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	pr := rules[0]
	if pr.GetNamespace() != namespace || pr.GetLabels()["release"] != "kube-prometheus-stack" || pr.GetLabels()["app.kubernetes.io/instance"] != releaseName {
		t.Errorf("PrometheusRule %s/%s labels %v", pr.GetNamespace(), pr.GetName(), pr.GetLabels())
	}
	alerts := alertsOf(t, pr)
	for _, name := range []string{"PlatformOperatorsLeaderAbsent", "PlatformOperatorsReconcileErrors", "PlatformOperatorsWorkqueueDepth",
		"PlatformOperatorsCopiesOutOfSync", "PlatformOperatorsSecretSyncWriteFailures", "PlatformOperatorsScheduledRunsMissed",
		"PlatformOperatorsScheduledRunsFailed", "PlatformOperatorsScheduledRunsLate"} {
		expr, ok := alerts[name]
		if !ok {
			t.Errorf("alert %s missing", name)
			continue
		}
		// Every series the alert reads is this release's: the selector replaced the placeholder.
		if strings.Contains(expr, "__SELECTOR__") || !strings.Contains(expr, `job="platform-operators-metrics",namespace="platform-operators-system"`) {
			t.Errorf("%s: expr %q is not scoped to this release's metrics", name, expr)
		}
	}
	// The runbook of each alert is its section of docs/troubleshooting.md.
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	for _, r := range groups[0].(map[string]any)["rules"].([]any) {
		m := r.(map[string]any)
		url, _, _ := unstructured.NestedString(m, "annotations", "runbook_url")
		if !strings.HasSuffix(url, "docs/troubleshooting.md#alert-"+strings.ToLower(m["alert"].(string))) {
			t.Errorf("%s: runbook_url %q", m["alert"], url)
		}
	}

	custom := prometheusRules(mustRenderAll(t, "prometheusRule:\n  enabled: true\n  namespace: monitoring\n  selector: 'cluster=\"prod\",service=\"po\"'\n  disabledAlerts: [PlatformOperatorsScheduledRunsFailed]\n  additionalRules: [{name: mine, rules: [{record: po:writes:rate5m, expr: 'sum(rate(platform_operators_secretsync_writes_total[5m]))'}]}]\n", prometheusRuleAPI))[0]
	alerts = alertsOf(t, custom)
	if _, ok := alerts["PlatformOperatorsScheduledRunsFailed"]; ok {
		t.Error("a disabled alert was rendered")
	}
	if custom.GetNamespace() != "monitoring" || !strings.Contains(alerts["PlatformOperatorsReconcileErrors"], `{cluster="prod",service="po"}`) || alerts["po:writes:rate5m"] == "" {
		t.Errorf("namespace %s, alerts %v: want the namespace, the selector and the additional rule", custom.GetNamespace(), alerts)
	}
	wantRenderError(t, "prometheusRule:\n  enabled: true\n  disabledAlerts: [NoSuchAlert]\n", "disabledAlerts")
}

func TestGrafanaDashboard(t *testing.T) {
	dashboards := func(r rendered) []*corev1.ConfigMap {
		var out []*corev1.ConfigMap
		for _, c := range objectsOf[*corev1.ConfigMap](r) {
			if strings.HasSuffix(c.Name, "-dashboard") {
				out = append(out, c)
			}
		}
		return out
	}
	if n := len(dashboards(mustRenderAll(t, ""))); n != 0 {
		t.Errorf("%d dashboards by default, want none", n)
	}
	cm := dashboards(mustRenderAll(t, "grafanaDashboard:\n  enabled: true\n"))
	if len(cm) != 1 || cm[0].Labels["grafana_dashboard"] != "1" {
		t.Fatalf("dashboards = %+v, want one with the sidecar label grafana_dashboard=1", cm)
	}
	var d grafanaDashboard
	if err := json.Unmarshal([]byte(cm[0].Data["platform-operators.json"]), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.UID == "" || len(d.Panels) < 8 {
		t.Errorf("dashboard %q uid %q with %d panels", d.Title, d.UID, len(d.Panels))
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 || p.Targets[0].Expr == "" {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	cm = dashboards(mustRenderAll(t, "grafanaDashboard:\n  enabled: true\n  namespace: grafana\n  labelKey: dashboards\n  labelValue: platform\n  folder: Platform\n"))
	if cm[0].Namespace != "grafana" || cm[0].Labels["dashboards"] != "platform" || cm[0].Annotations["grafana_folder"] != "Platform" {
		t.Errorf("dashboard ConfigMap %s/%s labels %v annotations %v", cm[0].Namespace, cm[0].Name, cm[0].Labels, cm[0].Annotations)
	}
}

// grafanaDashboard is the part of the chart's Grafana dashboard JSON the tests read.
type grafanaDashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}
