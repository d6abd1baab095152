package chart

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The values cert-manager's and external-secrets' charts taught users (issue 30): each one off by
// default renders nothing new, set renders where those charts put it, and missing (an older
// release's values under `helm upgrade --reuse-values`) renders as its default.

func serviceMonitorsOf(r rendered) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objectsOf[*unstructured.Unstructured](r) {
		if u.GetKind() == "ServiceMonitor" {
			out = append(out, u)
		}
	}
	return out
}

// crdAnnotationsByDefault are the annotations a CRD carries without crds.annotations.
var crdAnnotationsByDefault = []string{"controller-gen.kubebuilder.io/version", "helm.sh/resource-policy"}

func TestConventionValuesRenderNothingByDefault(t *testing.T) {
	r := mustRenderAll(t, "", serviceMonitorAPI)
	d := only[*appsv1.Deployment](t, r)
	if len(d.Annotations) != 0 {
		t.Errorf("Deployment annotations = %v, want none", d.Annotations)
	}
	if pod := d.Spec.Template.Spec; len(pod.InitContainers) != 0 || len(pod.Containers) != 1 {
		t.Errorf("pod has %d init containers and %d containers, want 0 and 1 (the manager)", len(pod.InitContainers), len(pod.Containers))
	}
	if svc := only[*corev1.Service](t, r); len(svc.Annotations) != 0 {
		t.Errorf("Service annotations = %v, want none", svc.Annotations)
	}
	if sa := only[*corev1.ServiceAccount](t, r); len(sa.Annotations) != 0 {
		t.Errorf("ServiceAccount annotations = %v, want none", sa.Annotations)
	}
	if n := len(serviceMonitorsOf(r)); n != 0 {
		t.Errorf("%d ServiceMonitors by default, want none", n)
	}
	crds := objectsOf[*apiextensionsv1.CustomResourceDefinition](r)
	if len(crds) == 0 {
		t.Fatal("no CRDs rendered")
	}
	for _, crd := range crds {
		for k := range crd.Annotations {
			if !slices.Contains(crdAnnotationsByDefault, k) {
				t.Errorf("CRD %s has annotation %s by default", crd.Name, k)
			}
		}
	}
}

func TestConventionValues(t *testing.T) {
	cases := []struct {
		name   string
		values string
		check  func(t *testing.T, r rendered)
	}{
		{
			name:   "deploymentAnnotations annotate the Deployment, not its pods",
			values: "deploymentAnnotations:\n  reloader.stakater.com/auto: \"true\"\n",
			check: func(t *testing.T, r rendered) {
				d := only[*appsv1.Deployment](t, r)
				if d.Annotations["reloader.stakater.com/auto"] != "true" {
					t.Errorf("Deployment annotations = %v", d.Annotations)
				}
				if _, ok := d.Spec.Template.Annotations["reloader.stakater.com/auto"]; ok {
					t.Errorf("the pod template got the Deployment's annotation: %v", d.Spec.Template.Annotations)
				}
			},
		},
		{
			name:   "serviceAnnotations annotate the metrics Service",
			values: "serviceAnnotations:\n  prometheus.io/scrape: \"false\"\n",
			check: func(t *testing.T, r rendered) {
				if svc := only[*corev1.Service](t, r); svc.Annotations["prometheus.io/scrape"] != "false" {
					t.Errorf("Service annotations = %v", svc.Annotations)
				}
			},
		},
		{
			name:   "serviceAccount.annotations annotate the ServiceAccount",
			values: "serviceAccount:\n  annotations:\n    eks.amazonaws.com/role-arn: arn:aws:iam::1:role/po\n",
			check: func(t *testing.T, r rendered) {
				if sa := only[*corev1.ServiceAccount](t, r); sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::1:role/po" {
					t.Errorf("ServiceAccount annotations = %v", sa.Annotations)
				}
			},
		},
		{
			name: "extraContainers and extraInitContainers are added to the pod, rendered as templates",
			values: `extraContainers:
  - name: proxy
    image: "registry.example.com/proxy:{{ .Release.Name }}"
    args: ['--format={{ "{{" }}.Name}}']
extraInitContainers:
  - name: wait
    image: busybox
    command: [sh, -c, "echo {{ .Release.Namespace }}"]
`,
			check: func(t *testing.T, r rendered) {
				pod := only[*appsv1.Deployment](t, r).Spec.Template.Spec
				if len(pod.Containers) != 2 || pod.Containers[0].Name != "manager" || pod.Containers[1].Name != "proxy" {
					t.Fatalf("containers = %v, want manager then proxy", containerNames(pod.Containers))
				}
				if got := pod.Containers[1].Image; got != "registry.example.com/proxy:"+releaseName {
					t.Errorf("sidecar image = %s, want the release name templated in", got)
				}
				if got := pod.Containers[1].Args; !slices.Equal(got, []string{"--format={{.Name}}"}) {
					t.Errorf("sidecar args = %q, want the escaped braces literal", got)
				}
				if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "wait" || pod.InitContainers[0].Command[2] != "echo "+namespace {
					t.Errorf("init containers = %+v", pod.InitContainers)
				}
			},
		},
		{
			name:   "crds.annotations annotate every CRD, and keep still wins",
			values: "crds:\n  annotations:\n    argocd.argoproj.io/sync-options: ServerSideApply=true\n    helm.sh/resource-policy: delete\n",
			check: func(t *testing.T, r rendered) {
				crds := objectsOf[*apiextensionsv1.CustomResourceDefinition](r)
				if len(crds) == 0 {
					t.Fatal("no CRDs rendered")
				}
				for _, crd := range crds {
					if crd.Annotations["argocd.argoproj.io/sync-options"] != "ServerSideApply=true" || crd.Annotations["helm.sh/resource-policy"] != "keep" {
						t.Errorf("CRD %s annotations = %v", crd.Name, crd.Annotations)
					}
					if crd.Annotations["controller-gen.kubebuilder.io/version"] == "" {
						t.Errorf("CRD %s lost controller-gen's annotation: %v", crd.Name, crd.Annotations)
					}
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustRenderAll(t, tc.values))
		})
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestServiceMonitorRenderModeAndNamespace(t *testing.T) {
	const on = "serviceMonitor:\n  enabled: true\n"
	cases := []struct {
		name, values string
		served       bool
		// want is the namespace of the one ServiceMonitor rendered ("": none).
		want    string
		wantErr string
	}{
		{name: "skipIfMissing (the default) renders none without the CRD", values: on},
		{name: "skipIfMissing renders it with the CRD", values: on, served: true, want: namespace},
		{name: "alwaysRender renders it without the CRD", values: on + "  renderMode: alwaysRender\n", want: namespace},
		{name: "failIfMissing fails without the CRD", values: on + "  renderMode: failIfMissing\n", wantErr: "does not serve monitoring.coreos.com/v1 ServiceMonitor"},
		{name: "failIfMissing renders it with the CRD", values: on + "  renderMode: failIfMissing\n", served: true, want: namespace},
		{name: "alwaysRender still needs metrics", values: on + "  renderMode: alwaysRender\nmetrics:\n  enabled: false\n"},
		{name: "an unknown mode is refused", values: on + "  renderMode: always\n", wantErr: "renderMode"},
		{name: "namespace puts it elsewhere", values: on + "  namespace: monitoring\n", served: true, want: "monitoring"},
		{name: "a namespace that is not a name is refused", values: on + "  namespace: Monitoring\n", wantErr: "namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := renderModeCase(t, tc.values, tc.served, serviceMonitorAPI, tc.wantErr)
			if !ok {
				return
			}
			sms := serviceMonitorsOf(r)
			if tc.want == "" {
				if len(sms) != 0 {
					t.Fatalf("%d ServiceMonitors, want none", len(sms))
				}
				return
			}
			if len(sms) != 1 {
				t.Fatalf("%d ServiceMonitors, want 1", len(sms))
			}
			if got := sms[0].GetNamespace(); got != tc.want {
				t.Errorf("namespace = %s, want %s", got, tc.want)
			}
			// Wherever it lives, it scrapes the Service in the release's namespace.
			if got, _, _ := unstructured.NestedStringSlice(sms[0].Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(got, []string{namespace}) {
				t.Errorf("namespaceSelector.matchNames = %v, want [%s]", got, namespace)
			}
		})
	}
}

// TestNewValuesMissingFromAnOlderRelease renders the chart as `helm upgrade --reuse-values` does
// for a release made before these values existed: Helm then replaces the chart's defaults with
// the old release's values, so the keys are absent, not set to their defaults.
func TestNewValuesMissingFromAnOlderRelease(t *testing.T) {
	ch := loadChart(t)
	old := valuesFile(t, "values.yaml")
	for _, k := range []string{"deploymentAnnotations", "serviceAnnotations", "extraContainers", "extraInitContainers"} {
		delete(old, k)
	}
	delete(old["crds"].(map[string]any), "annotations")
	delete(old["serviceMonitor"].(map[string]any), "renderMode")
	delete(old["serviceMonitor"].(map[string]any), "namespace")
	delete(old["rbac"].(map[string]any), "aggregateToDefaultRoles")
	ch.Values = old
	r, err := renderWith(t, ch, releaseName, parseValues(t, "serviceMonitor:\n  enabled: true\n"), []string{serviceMonitorAPI})
	if err != nil {
		t.Fatalf("rendering without the new keys: %v", err)
	}
	if sms := serviceMonitorsOf(r); len(sms) != 1 || sms[0].GetNamespace() != namespace {
		t.Errorf("ServiceMonitors = %d, want 1 in %s", len(sms), namespace)
	}
	if pod := only[*appsv1.Deployment](t, r).Spec.Template.Spec; len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Errorf("containers %v, init containers %v: want the manager only", containerNames(pod.Containers), containerNames(pod.InitContainers))
	}
	roles := clusterRBACNames(r)
	if !slices.Contains(roles, "ClusterRole/platform-operators-view") || !slices.Contains(roles, "ClusterRole/platform-operators-edit") {
		t.Errorf("cluster RBAC %v: without the key, aggregation takes its default (on)", roles)
	}
}

// crdKinds reads the CRDs `make manifests` generated into the chart: plural resource name by
// scope.
func crdKinds(t *testing.T) (namespaced, clusterScoped []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "files/crds/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated CRDs in files/crds (%v): run make manifests", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if crd.Spec.Group != "ops.platform-operators.io" {
			t.Fatalf("%s: group %s", f, crd.Spec.Group)
		}
		if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			namespaced = append(namespaced, crd.Spec.Names.Plural)
		} else {
			clusterScoped = append(clusterScoped, crd.Spec.Names.Plural)
		}
	}
	return namespaced, clusterScoped
}

// TestEveryNamespacedKindIsGrantedToTenants fails when a kind is added to the API without the
// tenant Role and the aggregated roles granting it (as CopyRequest was once left out of the
// tenant Role), or when a cluster-scoped kind (SecretSync) would reach a tenant.
func TestEveryNamespacedKindIsGrantedToTenants(t *testing.T) {
	const group = "ops.platform-operators.io"
	namespaced, clusterScoped := crdKinds(t)
	if !slices.Contains(namespaced, "copyrequests") || !slices.Contains(clusterScoped, "secretsyncs") {
		t.Fatalf("CRDs: namespaced %v, cluster-scoped %v", namespaced, clusterScoped)
	}
	// Aggregation is on by default: these are the roles a plain install gets.
	r := mustRenderAll(t, "tenants:\n  - namespace: team-a\n")
	tenant := onlyNamed[*rbacv1.Role](t, r, "team-a-sa")
	roles := map[string][]rbacv1.PolicyRule{}
	for _, cr := range objectsOf[*rbacv1.ClusterRole](r) {
		roles[cr.Name] = cr.Rules
	}
	view, edit := roles["platform-operators-view"], roles["platform-operators-edit"]
	if view == nil || edit == nil {
		t.Fatalf("the aggregated roles are not rendered by default: %v", clusterRBACNames(r))
	}
	for _, res := range namespaced {
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			if !grants(tenant.Rules, group, res, verb) {
				t.Errorf("the tenant Role does not grant %s %s", verb, res)
			}
		}
		for _, verb := range []string{"get", "list", "watch"} {
			if !grants(view, group, res, verb) || !grants(view, group, res+"/status", verb) {
				t.Errorf("the view role does not grant %s %s (and its status)", verb, res)
			}
		}
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			if !grants(edit, group, res, verb) {
				t.Errorf("the edit role does not grant %s %s", verb, res)
			}
		}
	}
	for _, res := range clusterScoped {
		for name, rules := range map[string][]rbacv1.PolicyRule{"tenant Role": tenant.Rules, "view": view, "edit": edit} {
			if grants(rules, group, res, "get") || grants(rules, group, res, "create") {
				t.Errorf("the %s grants the cluster-scoped %s", name, res)
			}
		}
	}
	if names := clusterRBACNames(mustRenderAll(t, "rbac:\n  aggregateToDefaultRoles: false\n")); slices.Contains(names, "ClusterRole/platform-operators-view") {
		t.Errorf("aggregateToDefaultRoles=false still renders %v", names)
	}
}
