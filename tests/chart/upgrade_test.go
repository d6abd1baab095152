package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Upgrades with `helm upgrade --reuse-values`. Helm then renders the new chart with the old
// release's values only: the old chart's values.yaml coalesced with the user's values of that
// release, never the new values.yaml. testdata/upgrade holds the chart's values.yaml of the first
// release (0.1.0, bf4fc39) and of later commits that added values (one per set of keys), copied
// from git once: values-<version>-<commit>.yaml or values-<commit>.yaml.

// historicalValues are the fixtures' paths.
func historicalValues(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "upgrade", "values-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values fixtures in testdata/upgrade (%v)", err)
	}
	return files
}

// readValuesFile parses a values file as `helm -f` does.
func readValuesFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseValues(t, string(data))
}

// reuseValues is what `helm upgrade --reuse-values` (with no -f or --set) renders today's chart
// with, for a release installed with userValues from a chart whose values.yaml was oldDefaults
// (helm.sh/helm/v3/pkg/action.Upgrade.reuseValues): the chart's values are replaced by the old
// ones, coalesced with the release's user values, and those user values are the values given.
func reuseValues(t *testing.T, oldDefaults, userValues map[string]any) (*chart.Chart, map[string]any) {
	t.Helper()
	old := &chart.Chart{Metadata: &chart.Metadata{Name: "platform-operators"}, Values: oldDefaults}
	oldValues, err := chartutil.CoalesceValues(old, userValues)
	if err != nil {
		t.Fatal(err)
	}
	ch := loadChart(t)
	ch.Values = oldValues
	return ch, chartutil.CoalesceTables(map[string]any{}, userValues)
}

// upgradeUserValues are values a user of 0.1.0 could have installed with: every optional part of
// that chart on, so the templates that read values added since are rendered too.
const upgradeUserValues = `
podWatcher: {enabled: true}
networkPolicy: {enabled: true}
serviceMonitor: {enabled: true}
storageClass: {enabled: true, parameters: {fileSystemId: fs-0123456789abcdef0}}
pullSecret: {create: true, registry: harbor.example.com, username: robot$platform+ci, password: pw, sync: {enabled: true}}
tenants: [{namespace: team-a, tokenSecret: true}]
rbac: {aggregateToDefaultRoles: true}
`

// TestUpgradeWithReuseValuesRendersTodaysDefaults renders today's templates the way
// `helm upgrade --reuse-values` does from each historical values.yaml and checks that the render
// succeeds and gives exactly the objects of today's chart with the old release's values set by
// hand: a value the old chart had keeps its old value (Helm cannot tell a default from a choice,
// docs/upgrade.md), and every value added since takes today's default, not nil, not off.
func TestUpgradeWithReuseValuesRendersTodaysDefaults(t *testing.T) {
	apis := []string{serviceMonitorAPI, prometheusRuleAPI}
	type userValues struct{ name, values string }
	defaults, optional := userValues{"installed with the defaults", ""}, userValues{"installed with every optional part on", upgradeUserValues}
	for _, file := range historicalValues(t) {
		users := []userValues{optional}
		if strings.HasPrefix(filepath.Base(file), "values-0.1.0-") {
			// The release users run (0.1.0) also as most have it: the second render of each
			// fixture costs seconds and the optional parts' render reads every template.
			users = append(users, defaults)
		}
		for _, user := range users {
			t.Run(filepath.Base(file)+"/"+user.name, func(t *testing.T) {
				oldDefaults := readValuesFile(t, file)
				ch, vals := reuseValues(t, oldDefaults, parseValues(t, user.values))
				got, err := renderWith(t, ch, releaseName, vals, apis)
				if err != nil {
					t.Fatalf("helm upgrade --reuse-values from %s fails: %v", filepath.Base(file), err)
				}
				// Today's chart with every value of the old release given: what --reuse-values
				// should give, and what --reset-then-reuse-values gives a user who set them all.
				want, err := renderWith(t, loadChart(t), releaseName, chartutil.CoalesceTables(parseValues(t, user.values), oldDefaults), apis)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(byKindAndName(want.objects), byKindAndName(got.objects)); diff != "" {
					t.Errorf("objects differ from today's defaults (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(byKindAndName(want.hooks), byKindAndName(got.hooks)); diff != "" {
					t.Errorf("helm test hooks differ from today's defaults (-want +got):\n%s", diff)
				}
				if want.notes != got.notes {
					t.Errorf("NOTES differ from today's defaults:\n%s", cmp.Diff(want.notes, got.notes))
				}
				checkSecureDefaults(t, got, user.values != "")
			})
		}
	}
}

// checkSecureDefaults names the defaults added since 0.1.0 that keep the cluster safe, so a
// failure says which one an upgraded release lost.
func checkSecureDefaults(t *testing.T, r rendered, tenants bool) {
	t.Helper()
	p := podOf(t, r)
	if sc := p.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("manager pod securityContext = %+v, want runAsNonRoot and seccomp RuntimeDefault", sc)
	}
	if sc := p.Containers[0].SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("manager container securityContext = %+v, want no privilege escalation and a read-only root", sc)
	}
	if n := len(objectsOf[*admissionregistrationv1.ValidatingAdmissionPolicy](r)); n == 0 {
		t.Error("no ValidatingAdmissionPolicy rendered: admissionPolicies.enabled is on by default")
	}
	if n := len(objectsOf[*flowcontrolv1.FlowSchema](r)); n == 0 {
		t.Error("no FlowSchema rendered: flowControl.enabled is on by default")
	}
	if !tenants {
		return
	}
	ns := onlyNamed[*corev1.Namespace](t, r, "team-a")
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("tenant namespace enforces Pod Security %q, want restricted (tenantPodSecurity)", got)
	}
}

// byKindAndName sorts rendered objects so two renders compare object by object.
func byKindAndName(objs []runtime.Object) []runtime.Object {
	key := func(o runtime.Object) string {
		gvk := o.GetObjectKind().GroupVersionKind()
		name := ""
		if m, ok := o.(interface{ GetNamespace() string }); ok {
			name = m.GetNamespace() + "/"
		}
		if m, ok := o.(interface{ GetName() string }); ok {
			name += m.GetName()
		}
		return gvk.String() + " " + name
	}
	out := slices.Clone(objs)
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// TestUpgradeWithReuseValuesKeepsOldDefaults shows why docs/upgrade.md recommends
// --reset-then-reuse-values: a default that changed (kubeAPI.qps, unbounded -1 at 5fde16c, 1000
// now) stays the old one under --reuse-values, while --reset-then-reuse-values, which reuses only
// what the user set, takes today's.
func TestUpgradeWithReuseValuesKeepsOldDefaults(t *testing.T) {
	ch, vals := reuseValues(t, readValuesFile(t, filepath.Join("testdata", "upgrade", "values-5fde16c.yaml")), map[string]any{})
	reused, err := render(t, ch, releaseName, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := argWithPrefix(manager(t, reused).Args, "--kube-api-qps="); got != "--kube-api-qps=-1" {
		t.Errorf("--reuse-values from 5fde16c: %s, want the old default --kube-api-qps=-1", got)
	}
	reset, err := render(t, loadChart(t), releaseName, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := argWithPrefix(manager(t, reset).Args, "--kube-api-qps="); got != "--kube-api-qps=1000" {
		t.Errorf("--reset-then-reuse-values: %s, want today's default --kube-api-qps=1000", got)
	}
}

// addedValuesDefine matches the body of the addedValues helper in _helpers.tpl.
var addedValuesDefine = regexp.MustCompile(`(?s)\{\{- define "platform-operators.addedValues" -\}\}\n(.*?)\n\{\{- end \}\}`)

// TestAddedValuesListEveryValueAddedSinceTheFirstRelease checks the addedValues helper against
// the fixtures and values.yaml: it names every path today's values.yaml has and a historical one
// lacks (the shallowest such path), no other, each with values.yaml's default. A value added
// without a line there fails here.
func TestAddedValuesListEveryValueAddedSinceTheFirstRelease(t *testing.T) {
	m := addedValuesDefine.FindStringSubmatch(mustReadFile(t, filepath.Join(chartDir, "templates", "_helpers.tpl")))
	if m == nil {
		t.Fatal(`no {{- define "platform-operators.addedValues" -}} ... {{- end }} in _helpers.tpl`)
	}
	listed := parseValues(t, m[1])
	today := valuesFile(t, "values.yaml")
	want := map[string]bool{}
	for _, file := range historicalValues(t) {
		for _, p := range absentPaths(readValuesFile(t, file), today, "") {
			want[p] = true
		}
	}
	for p := range want {
		if _, ok := listed[p]; !ok {
			t.Errorf("values.yaml has %s, which %s lacks: add it to addedValues in _helpers.tpl", p, "a historical values.yaml")
		}
	}
	for p, def := range listed {
		if !want[p] {
			t.Errorf("addedValues lists %s, which every historical values.yaml has (a listed path comes back when a user sets it to null)", p)
			continue
		}
		if got := valueAt(today, p); !reflect.DeepEqual(got, def) {
			t.Errorf("addedValues gives %s the default %#v, values.yaml %#v", p, def, got)
		}
	}
}

// absentPaths returns the paths (a.b.c) of today that old lacks, stopping at the first missing key.
func absentPaths(old, today map[string]any, prefix string) []string {
	var out []string
	for k, v := range today {
		path := prefix + k
		ov, ok := old[k]
		if !ok {
			out = append(out, path)
			continue
		}
		nm, isMap := v.(map[string]any)
		om, wasMap := ov.(map[string]any)
		if isMap && wasMap && len(nm) > 0 {
			out = append(out, absentPaths(om, nm, path+".")...)
		}
	}
	return out
}

// valueAt returns the value at a dotted path of vals, nil when it is not there.
func valueAt(vals map[string]any, path string) any {
	var cur any = vals
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// TestEveryTemplateFillsAddedValuesFirst: a template that reads .Values before the
// "platform-operators.values" helper ran would see a reused old release without the values
// added since (a nil pointer error, or a new default off).
func TestEveryTemplateFillsAddedValuesFirst(t *testing.T) {
	const first = `{{- include "platform-operators.values" . }}`
	ch := loadChart(t)
	for _, tpl := range ch.Templates {
		if strings.HasPrefix(filepath.Base(tpl.Name), "_") {
			continue
		}
		if line, _, _ := strings.Cut(string(tpl.Data), "\n"); line != first {
			t.Errorf("%s starts with %q, want %s", tpl.Name, line, first)
		}
	}
}
