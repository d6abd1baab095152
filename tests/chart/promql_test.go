package chart

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// parsePromQL parses expr as Prometheus does (the parser of the Prometheus release pinned in
// go.mod), so a rule Prometheus would refuse fails here, not in a user's Prometheus Operator.
func parsePromQL(t *testing.T, what, expr string) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", what, err, expr)
	}
	return e
}

// TestEveryAlertAndPanelIsValidPromQL parses every expression of the rendered PrometheusRule and
// of the dashboard (its Grafana variables replaced by what Grafana substitutes).
func TestEveryAlertAndPanelIsValidPromQL(t *testing.T) {
	pr := prometheusRules(mustRenderAll(t, "prometheusRule:\n  enabled: true\n", prometheusRuleAPI))[0]
	alerts := alertsOf(t, pr)
	if len(alerts) < 9 {
		t.Fatalf("%d alerts, want at least 9", len(alerts))
	}
	for name, expr := range alerts {
		parsePromQL(t, name, expr)
	}
	var cms []*corev1.ConfigMap
	for _, c := range objectsOf[*corev1.ConfigMap](mustRenderAll(t, "grafanaDashboard:\n  enabled: true\n")) {
		if strings.HasSuffix(c.Name, "-dashboard") {
			cms = append(cms, c)
		}
	}
	var d grafanaDashboard
	if err := json.Unmarshal([]byte(cms[0].Data["platform-operators.json"]), &d); err != nil {
		t.Fatal(err)
	}
	grafana := strings.NewReplacer("$job", "platform-operators-metrics", "$namespace", "platform-operators-system", "$__range", "1h", "$__rate_interval", "1m")
	n := 0
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			parsePromQL(t, "panel "+p.Title, grafana.Replace(target.Expr))
			n++
		}
	}
	if n < 10 {
		t.Errorf("%d panel queries parsed, want at least 10", n)
	}
}

// TestScheduledJobNoSuccessAlert checks the per-object alert: its threshold is the schedule's
// period plus the grace value, or the object's annotation series; it skips suspended objects; its
// grace comes from values and has a default when the key is absent (values reused from a release
// that predates it: `helm upgrade --reuse-values`).
func TestScheduledJobNoSuccessAlert(t *testing.T) {
	const name = "PlatformOperatorsScheduledJobNoSuccess"
	for _, tc := range []struct{ values, grace string }{
		{"prometheusRule:\n  enabled: true\n", "3600"},
		{"prometheusRule:\n  enabled: true\n  scheduledJobNoSuccessGraceSeconds: 7200\n", "7200"},
		// null deletes the key, as values from before it existed lack it.
		{"prometheusRule:\n  enabled: true\n  scheduledJobNoSuccessGraceSeconds: null\n", "3600"},
	} {
		expr := alertsOf(t, prometheusRules(mustRenderAll(t, tc.values, prometheusRuleAPI))[0])[name]
		e := parsePromQL(t, name, expr)
		if e == nil {
			continue
		}
		// The shape: (age > threshold) unless suspended, each side matched per object.
		unless, ok := e.(*parser.BinaryExpr)
		if !ok || unless.Op != parser.LUNLESS || !strings.Contains(unless.RHS.String(), "platform_operators_scheduledjob_suspended") {
			t.Errorf("values %q: not (…) unless suspended: %s", tc.values, e)
			continue
		}
		cmp, ok := unless.LHS.(*parser.BinaryExpr)
		if !ok || cmp.Op != parser.GTR || cmp.VectorMatching == nil || strings.Join(cmp.VectorMatching.MatchingLabels, ",") != "namespace,exported_namespace,name" {
			t.Errorf("values %q: the comparison is not matched on the object: %s", tc.values, unless.LHS)
			continue
		}
		age, threshold := cmp.LHS.String(), cmp.RHS.String()
		for _, want := range []string{"time()", "platform_operators_scheduledjob_last_successful_timestamp_seconds", "or platform_operators_scheduledjob_created_timestamp_seconds"} {
			if !strings.Contains(age, want) {
				t.Errorf("values %q: the age %s does not use %s", tc.values, age, want)
			}
		}
		for _, want := range []string{"platform_operators_scheduledjob_no_success_alert_after_seconds", "platform_operators_scheduledjob_schedule_interval_seconds", "+ " + tc.grace} {
			if !strings.Contains(threshold, want) {
				t.Errorf("values %q: the threshold %s does not contain %q", tc.values, threshold, want)
			}
		}
		if strings.Contains(expr, "__GRACE__") || !strings.Contains(expr, `job="platform-operators-metrics",namespace="platform-operators-system"`) {
			t.Errorf("values %q: placeholders left or not scoped to the release: %s", tc.values, expr)
		}
	}
	wantRenderError(t, "prometheusRule:\n  enabled: true\n  scheduledJobNoSuccessGraceSeconds: -1\n", "scheduledJobNoSuccessGraceSeconds")
}

// TestScheduledJobStoppedAfterFailuresAlert checks the stop alert reads the per-object series the
// manager serves (controller/scheduledjob/reconciler.go, NewObjectMetrics) and fires per object.
func TestScheduledJobStoppedAfterFailuresAlert(t *testing.T) {
	const name = "PlatformOperatorsScheduledJobStoppedAfterFailures"
	expr := alertsOf(t, prometheusRules(mustRenderAll(t, "prometheusRule:\n  enabled: true\n", prometheusRuleAPI))[0])[name]
	e := parsePromQL(t, name, expr)
	cmp, ok := e.(*parser.BinaryExpr)
	if !ok || cmp.Op != parser.EQLC || !strings.Contains(cmp.LHS.String(), "platform_operators_scheduledjob_stopped_after_failures") ||
		!strings.Contains(cmp.LHS.String(), "max by (namespace, exported_namespace, name)") {
		t.Errorf("%s = %s: want max by object of the stopped series == 1", name, expr)
	}
	if !strings.Contains(expr, `job="platform-operators-metrics",namespace="platform-operators-system"`) {
		t.Errorf("not scoped to the release: %s", expr)
	}
}

// TestPerObjectValuesMissingFromAnOlderRelease renders as `helm upgrade --reuse-values` does for
// a release from before metrics.perObjectLimit and prometheusRule.scheduledJobNoSuccessGraceSeconds:
// the keys are absent (not defaulted), and the chart falls back to their defaults.
func TestPerObjectValuesMissingFromAnOlderRelease(t *testing.T) {
	ch := loadChart(t)
	old := valuesFile(t, "values.yaml")
	delete(old["metrics"].(map[string]any), "perObjectLimit")
	delete(old["prometheusRule"].(map[string]any), "scheduledJobNoSuccessGraceSeconds")
	ch.Values = old
	r, err := renderWith(t, ch, releaseName, parseValues(t, "prometheusRule:\n  enabled: true\n"), []string{prometheusRuleAPI})
	if err != nil {
		t.Fatalf("rendering without the new keys: %v", err)
	}
	if args := only[*appsv1.Deployment](t, r).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--per-object-metrics-limit=1000") {
		t.Errorf("args %v: want the default --per-object-metrics-limit=1000", args)
	}
	if expr := alertsOf(t, prometheusRules(r)[0])["PlatformOperatorsScheduledJobNoSuccess"]; !strings.Contains(expr, "+ 3600)") {
		t.Errorf("the no-success alert without the grace key: %s, want the default 3600", expr)
	}
}
