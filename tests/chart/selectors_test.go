package chart

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Which pods each selector of the chart selects: the manager's and no other (the `helm test`
// pod behind the metrics Service was scraped, and the Deployment's ReplicaSet could adopt it).

// serviceMonitorAPI makes the chart render its ServiceMonitor.
const serviceMonitorAPI = "monitoring.coreos.com/v1/ServiceMonitor"

// podTemplate is a pod, or the pod template of a workload, the chart renders.
type podTemplate struct {
	owner  string // kind/name of the object that holds it
	labels labels.Set
}

// podTemplates collects every pod and pod template of the rendered objects, whatever their kind:
// a Pod's metadata, spec.template (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job) and
// spec.jobTemplate.spec.template (CronJob).
func podTemplates(t *testing.T, r rendered) []podTemplate {
	t.Helper()
	var out []podTemplate
	for _, obj := range r.objects {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		name, _, _ := unstructured.NestedString(u, "metadata", "name")
		owner := kind + "/" + name
		if kind == "Pod" {
			l, _, _ := unstructured.NestedStringMap(u, "metadata", "labels")
			out = append(out, podTemplate{owner: owner, labels: l})
			continue
		}
		for _, path := range [][]string{{"spec", "template"}, {"spec", "jobTemplate", "spec", "template"}} {
			if _, found, _ := unstructured.NestedMap(u, path...); found {
				l, _, _ := unstructured.NestedStringMap(u, append(path, "metadata", "labels")...)
				out = append(out, podTemplate{owner: owner, labels: l})
			}
		}
	}
	return out
}

// selector is a label selector of the chart and the kind of object it selects.
type selector struct {
	owner    string
	selects  string // "pods" or "services"
	selector labels.Selector
}

// selectors collects the selectors of the Services, Deployments, PodDisruptionBudgets and
// ServiceMonitors. A Service without a selector selects nothing (its endpoints are managed by
// hand), which would be a bug here, so it fails the test.
func selectors(t *testing.T, r rendered) []selector {
	t.Helper()
	var out []selector
	fromLabelSelector := func(owner string, ls *metav1.LabelSelector) selector {
		if ls == nil {
			t.Fatalf("%s has no selector", owner)
		}
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		if s.Empty() {
			t.Fatalf("%s has an empty selector, which selects every pod of the namespace", owner)
		}
		return selector{owner: owner, selects: "pods", selector: s}
	}
	for _, obj := range r.objects {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		owner := fmt.Sprintf("%s/%s", obj.GetObjectKind().GroupVersionKind().Kind, m.GetName())
		switch o := obj.(type) {
		case *corev1.Service:
			if len(o.Spec.Selector) == 0 {
				t.Fatalf("%s has no selector", owner)
			}
			out = append(out, selector{owner: owner, selects: "pods", selector: labels.SelectorFromSet(o.Spec.Selector)})
		case *appsv1.Deployment:
			out = append(out, fromLabelSelector(owner, o.Spec.Selector))
		case *appsv1.StatefulSet, *appsv1.DaemonSet, *appsv1.ReplicaSet:
			t.Fatalf("%s: a new kind of workload; give it its own component label and check its selector here", owner)
		case *unstructured.Unstructured:
			if o.GetKind() != "ServiceMonitor" {
				continue
			}
			raw, _, _ := unstructured.NestedMap(o.Object, "spec", "selector")
			var ls metav1.LabelSelector
			data, _ := yaml.Marshal(raw)
			if err := yaml.UnmarshalStrict(data, &ls); err != nil {
				t.Fatalf("%s: selector: %v", owner, err)
			}
			s := fromLabelSelector(owner, &ls)
			s.selects = "services"
			out = append(out, s)
		case *policyv1.PodDisruptionBudget:
			out = append(out, fromLabelSelector(owner, o.Spec.Selector))
		}
	}
	return out
}

// valueSets are the chart's defaults and every ci/*-values.yaml (what chart-testing installs).
func valueSets(t *testing.T) map[string]string {
	t.Helper()
	sets := map[string]string{"the default values": ""}
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci values files: %v", err)
	}
	for _, f := range files {
		sets[filepath.Join("ci", filepath.Base(f))] = mustReadFile(t, filepath.Join("ci", filepath.Base(f)))
	}
	return sets
}

func TestEverySelectorSelectsOnlyTheManager(t *testing.T) {
	sets := valueSets(t)
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		t.Run("with "+name, func(t *testing.T) {
			r := mustRenderAll(t, sets[name], serviceMonitorAPI)
			d := only[*appsv1.Deployment](t, r)
			managerOwner := "Deployment/" + d.Name
			pods := podTemplates(t, r)
			if !slices.ContainsFunc(pods, func(p podTemplate) bool { return p.owner == managerOwner }) {
				t.Fatalf("no manager pod template among %v", pods)
			}
			// The defaults render the helm test pod too, so the check below has a pod to keep out.
			if sets[name] == "" && len(pods) < 2 {
				t.Fatalf("the defaults render no pod but the manager's: %v", pods)
			}
			services := objectsOf[*corev1.Service](r)
			sels := selectors(t, r)
			if len(sels) < 2 {
				t.Fatalf("found %d selectors, want at least the Deployment's and the Service's", len(sels))
			}
			for _, s := range sels {
				var matched []string
				switch s.selects {
				case "pods":
					for _, p := range pods {
						if s.selector.Matches(p.labels) {
							matched = append(matched, p.owner)
						}
					}
					if !reflect.DeepEqual(matched, []string{managerOwner}) {
						t.Errorf("%s (%s) selects %q, want only the manager's pods (%s)", s.owner, s.selector, matched, managerOwner)
					}
				case "services":
					for _, svc := range services {
						if s.selector.Matches(labels.Set(svc.Labels)) {
							matched = append(matched, "Service/"+svc.Name)
						}
					}
					// The metrics Service, which itself selects only the manager (checked above).
					if want := []string{"Service/" + d.Name + "-metrics"}; !reflect.DeepEqual(matched, want) {
						t.Errorf("%s (%s) selects %q, want %q", s.owner, s.selector, matched, want)
					}
				}
			}
		})
	}
}

// The Deployment's spec.selector is immutable: if a chart version renders other keys than the
// one before, `helm upgrade` of a release fails ("field is immutable"). These are the keys and
// values chart version 0.1.0 rendered; never change them.
func TestTheDeploymentSelectorIsThePreviousVersions(t *testing.T) {
	cases := []struct {
		name   string
		values string
		want   map[string]string
	}{
		{"with the default values", "", map[string]string{
			"app.kubernetes.io/name":     "platform-operators",
			"app.kubernetes.io/instance": releaseName,
		}},
		{"with a name override", "nameOverride: po\n", map[string]string{
			"app.kubernetes.io/name":     "po",
			"app.kubernetes.io/instance": releaseName,
		}},
		{"with the platform ci values", mustReadFile(t, "ci/platform-values.yaml"), map[string]string{
			"app.kubernetes.io/name":     "platform-operators",
			"app.kubernetes.io/instance": releaseName,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := only[*appsv1.Deployment](t, mustRenderAll(t, tc.values))
			if !reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{MatchLabels: tc.want}) {
				t.Errorf("selector = %+v, want matchLabels %v and nothing else", d.Spec.Selector, tc.want)
			}
		})
	}
}

func TestPodLabelsCannotTakeTheSelectorLabels(t *testing.T) {
	for _, key := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"} {
		t.Run("podLabels with "+key+" is refused", func(t *testing.T) {
			_, err := renderAll(t, "podLabels:\n  "+key+": other\n")
			if err == nil || !strings.Contains(err.Error(), "podLabels must not set "+key) {
				t.Fatalf("err = %v, want one naming podLabels.%s (it would change which pods the selectors match)", err, key)
			}
		})
	}
	if _, err := renderAll(t, "podLabels:\n  team: platform\n"); err != nil {
		t.Errorf("an ordinary pod label is refused: %v", err)
	}
}
