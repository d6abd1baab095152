// Package chart tests the Helm chart in charts/platform-operators: it renders the chart with the
// Helm Go library the way `helm template` / `helm upgrade -i --dry-run` do, for several values
// sets, decodes every manifest strictly into its typed Kubernetes object and asserts on those
// objects, and runs `helm lint --strict`.
package chart

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "../../charts/platform-operators"
	releaseName = "platform-operators"
	namespace   = "platform-operators-system"
	kubeVersion = "v1.36.3"
)

// chartVersion and appVersion are Chart.yaml's: what the chart's labels and default image tag carry.
var chartVersion, appVersion = func() (string, string) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		panic(err)
	}
	return ch.Metadata.Version, ch.Metadata.AppVersion
}()

// --- rendering helpers ---

// decoder decodes manifests strictly: a field the API type does not know (a typo in a template)
// is an error rather than silently dropped.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// rendered is the result of rendering the chart: the decoded objects and the NOTES.txt text.
type rendered struct {
	objects []runtime.Object
	// hooks are the hook manifests (helm test pods), decoded the same way.
	hooks []runtime.Object
	notes string
}

// loadChart loads the chart from disk. Each call returns a fresh copy, so a test may change its
// files (for example add a generated CRD) without affecting other tests.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return ch
}

// parseValues parses a values file's text the way `helm -f` reads it (numbers become float64,
// which is what makes large numbers render as 1e+06 in careless templates).
func parseValues(t *testing.T, text string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(text))
	if err != nil {
		t.Fatalf("parsing values %q: %v", text, err)
	}
	return vals
}

// valuesFile reads a values file relative to the chart directory.
func valuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return parseValues(t, string(data))
}

// render renders ch as release `release` in the test namespace, client-only, as
// `helm upgrade -i --dry-run` does against a v1.36.3 cluster, and decodes every manifest. The
// error is the one Helm returns (schema violations, `fail` in a template, bad YAML).
func render(t *testing.T, ch *chart.Chart, release string, vals map[string]any) (rendered, error) {
	t.Helper()
	return renderWith(t, ch, release, vals, nil)
}

// renderWith is render with the API versions the cluster serves (Capabilities.APIVersions).
func renderWith(t *testing.T, ch *chart.Chart, release string, vals map[string]any, apiVersions []string) (rendered, error) {
	t.Helper()
	return renderFor(t, kubeVersion, ch, release, vals, apiVersions)
}

// renderFor is renderWith against a cluster of Kubernetes version version (Capabilities.KubeVersion,
// which the chart's kubeVersion constraint and its version gates read).
func renderFor(t *testing.T, version string, ch *chart.Chart, release string, vals map[string]any, apiVersions []string) (rendered, error) {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = namespace
	install.KubeVersion = kv
	install.APIVersions = apiVersions
	rel, err := install.Run(ch, vals)
	if err != nil {
		return rendered{}, err
	}
	var out rendered
	out.notes = rel.Info.Notes
	docs := releaseutil.SplitManifests(rel.Manifest)
	keys := slices.Collect(maps.Keys(docs))
	// Keys are "manifest-N": decode in rendering order so failures read like `helm template`.
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, key := range keys {
		doc := docs[key]
		if strings.TrimSpace(doc) == "" {
			continue
		}
		out.objects = append(out.objects, decodeManifest(t, doc))
	}
	for _, h := range rel.Hooks {
		out.hooks = append(out.hooks, decodeManifest(t, h.Manifest))
	}
	return out, nil
}

// decodeManifest decodes one manifest strictly into its API type, or into Unstructured for kinds
// the scheme does not know (ServiceMonitor, PrometheusRule, extraObjects).
func decodeManifest(t *testing.T, doc string) runtime.Object {
	t.Helper()
	obj, _, err := decoder.Decode([]byte(doc), nil, nil)
	if runtime.IsNotRegisteredError(err) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("decoding a rendered manifest: %v\n%s", err, doc)
		}
		return u
	}
	if err != nil {
		t.Fatalf("decoding a rendered manifest: %v\n%s", err, doc)
	}
	return obj
}

// objectsOf returns the rendered objects of type T.
func objectsOf[T runtime.Object](r rendered) []T {
	var out []T
	for _, o := range r.objects {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// only returns the single rendered object of type T and fails the test unless there is exactly one.
func only[T runtime.Object](t *testing.T, r rendered) T {
	t.Helper()
	found := objectsOf[T](r)
	if len(found) != 1 {
		var zero T
		t.Fatalf("rendered %d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

// onlyNamed returns the rendered object of type T called name and fails the test unless there is exactly one.
func onlyNamed[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, r rendered, name string) T {
	t.Helper()
	var found []T
	for _, o := range objectsOf[T](r) {
		if o.GetName() == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("rendered %d objects of type %T named %s, want 1", len(found), zero, name)
	}
	return found[0]
}

// manager returns the manager container of the only Deployment.
func manager(t *testing.T, r rendered) corev1.Container {
	t.Helper()
	d := only[*appsv1.Deployment](t, r)
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("the Deployment has no container named manager: %+v", d.Spec.Template.Spec.Containers)
	return corev1.Container{}
}

// hasArg reports whether args holds want exactly.
func hasArg(args []string, want string) bool { return slices.Contains(args, want) }

// argWithPrefix returns the first arg starting with prefix, or "".
func argWithPrefix(args []string, prefix string) string {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return a
		}
	}
	return ""
}

// roleFileRules reads the rules controller-gen wrote to files/rbac/role.yaml.
func roleFileRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "files/rbac/role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("parsing files/rbac/role.yaml: %v", err)
	}
	return role.Rules
}

// withoutGeneratedCRDs returns ch without the CRDs `make manifests` wrote, so a test can put
// its own in files/crds and count exactly those.
func withoutGeneratedCRDs(ch *chart.Chart) *chart.Chart {
	ch.Files = slices.DeleteFunc(ch.Files, func(f *chart.File) bool { return strings.HasPrefix(f.Name, "files/crds/") })
	return ch
}

// controllersArg returns the words of the manager's --controllers flag.
func controllersArg(args []string) []string {
	return strings.Split(strings.TrimPrefix(argWithPrefix(args, "--controllers="), "--controllers="), ",")
}

// withFile returns ch with the file name set to data (replaced if present, added otherwise),
// the way controller-gen would have written it.
func withFile(ch *chart.Chart, name, data string) *chart.Chart {
	for _, f := range ch.Files {
		if f.Name == name {
			f.Data = []byte(data)
			return ch
		}
	}
	ch.Files = append(ch.Files, &chart.File{Name: name, Data: []byte(data)})
	return ch
}

// crdFile is a CRD as controller-gen writes it: a leading "---" and its own annotation.
const crdFile = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.20.0
  name: ats.ops.platform-operators.io
spec:
  group: ops.platform-operators.io
  names:
    kind: At
    listKind: AtList
    plural: ats
    singular: at
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              schedule:
                type: string
                maxLength: 1000000
    subresources:
      status: {}
`

// secondCRD is a second CRD in the same file, to check that multi-document files work.
const secondCRD = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: secretsyncs.ops.platform-operators.io
spec:
  group: ops.platform-operators.io
  names:
    kind: SecretSync
    listKind: SecretSyncList
    plural: secretsyncs
    singular: secretsync
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
`

// --- tests ---

func TestRender(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		name    string
		release string // defaults to releaseName
		values  string
		check   func(t *testing.T, r rendered)
	}{
		{
			name: "default values run the manager with exactly the documented flags",
			check: func(t *testing.T, r rendered) {
				c := manager(t, r)
				wantArgs := []string{
					"--metrics-bind-address=:8080",
					"--metrics-secure=true",
					"--health-probe-bind-address=:8081",
					"--leader-elect=true",
					"--leader-election-id=platform-operators",
					"--leader-election-namespace=platform-operators-system",
					"--leader-elect-lease-duration=90s",
					"--leader-elect-renew-deadline=70s",
					"--leader-elect-retry-period=2s",
					"--graceful-shutdown-timeout=30s",
					"--controllers=" + strings.Join(controllersArg(c.Args), ","),
					"--secretsync-workers=32",
					"--ownership-policy=platform-operators-ownership-keys",
					"--default-secretsync-name=secretsync-default",
					"--default-secretsync-source-namespace=secretsync",
					"--default-secretsync-type=platform-operators.io/secretsync",
					"--job-image=docker.io/library/busybox:1.37",
					"--job-pods-stuck-after=2m",
					"--per-object-metrics-limit=1000",
					"--log-format=json",
					"--log-level=info",
					"--kube-api-qps=1000",
					"--kube-api-burst=2000",
					"--api-server-wait-timeout=120s",
				}
				if !reflect.DeepEqual(c.Args, wantArgs) {
					t.Errorf("args = %q, want %q", c.Args, wantArgs)
				}
				if !reflect.DeepEqual(c.Command, []string{"/manager"}) {
					t.Errorf("command = %q, want [/manager]", c.Command)
				}
				if c.Env != nil {
					t.Errorf("env = %+v, want none", c.Env)
				}
			},
		},
		{
			name: "default values pull the appVersion image from ghcr.io",
			check: func(t *testing.T, r rendered) {
				c := manager(t, r)
				if want := "ghcr.io/platform-operators/manager:" + appVersion; c.Image != want {
					t.Errorf("image = %q, want %q", c.Image, want)
				}
				if c.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("imagePullPolicy = %q, want IfNotPresent", c.ImagePullPolicy)
				}
			},
		},
		{
			name: "default values give the pod the restricted security context",
			check: func(t *testing.T, r rendered) {
				spec := only[*appsv1.Deployment](t, r).Spec.Template.Spec
				wantPod := &corev1.PodSecurityContext{
					RunAsNonRoot:   ptr.To(true),
					RunAsUser:      ptr.To[int64](65532),
					RunAsGroup:     ptr.To[int64](65532),
					FSGroup:        ptr.To[int64](65532),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				}
				if !reflect.DeepEqual(spec.SecurityContext, wantPod) {
					t.Errorf("pod securityContext = %+v, want %+v", spec.SecurityContext, wantPod)
				}
				wantContainer := &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Privileged:               ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}
				if got := manager(t, r).SecurityContext; !reflect.DeepEqual(got, wantContainer) {
					t.Errorf("container securityContext = %+v, want %+v", got, wantContainer)
				}
				if got := ptr.Deref(spec.TerminationGracePeriodSeconds, 0); got != 45 {
					t.Errorf("terminationGracePeriodSeconds = %d, want 45", got)
				}
			},
		},
		{
			name: "default values run two replicas (a leader and a warm standby) with probes on the health port and the default resources",
			check: func(t *testing.T, r rendered) {
				d := only[*appsv1.Deployment](t, r)
				if got := ptr.Deref(d.Spec.Replicas, -1); got != 2 {
					t.Errorf("replicas = %d, want 2", got)
				}
				c := manager(t, r)
				wantPorts := []corev1.ContainerPort{
					{Name: "metrics", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
				}
				if !reflect.DeepEqual(c.Ports, wantPorts) {
					t.Errorf("ports = %+v, want %+v", c.Ports, wantPorts)
				}
				for _, p := range []struct {
					name  string
					probe *corev1.Probe
					path  string
				}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
					if p.probe == nil || p.probe.HTTPGet == nil {
						t.Errorf("%s probe = %+v, want an httpGet probe", p.name, p.probe)
						continue
					}
					if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "health" {
						t.Errorf("%s probe = %s on port %s, want %s on port health", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
					}
				}
				wantResources := corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				}
				if !equalResources(c.Resources, wantResources) {
					t.Errorf("resources = %+v, want %+v", c.Resources, wantResources)
				}
			},
		},
		{
			name: "default values create a ServiceAccount the Deployment runs as",
			check: func(t *testing.T, r rendered) {
				sa := only[*corev1.ServiceAccount](t, r)
				if sa.Name != "platform-operators" || sa.Namespace != namespace {
					t.Errorf("ServiceAccount = %s/%s, want %s/platform-operators", sa.Namespace, sa.Name, namespace)
				}
				if !ptr.Deref(sa.AutomountServiceAccountToken, false) {
					t.Errorf("automountServiceAccountToken = %v, want true", sa.AutomountServiceAccountToken)
				}
				if got := only[*appsv1.Deployment](t, r).Spec.Template.Spec.ServiceAccountName; got != sa.Name {
					t.Errorf("serviceAccountName = %q, want %q", got, sa.Name)
				}
			},
		},
		{
			name: "default values grant the ClusterRole exactly the generated rules of the controllers that are on",
			check: func(t *testing.T, r rendered) {
				cr := onlyNamed[*rbacv1.ClusterRole](t, r, "platform-operators-manager")
				if cr.Name != "platform-operators-manager" {
					t.Errorf("ClusterRole name = %q, want platform-operators-manager", cr.Name)
				}
				if want := enabledControllerRules(t, "secretsync", "at", "scheduledjob"); !reflect.DeepEqual(cr.Rules, want) {
					t.Errorf("ClusterRole rules = %+v, want %+v", cr.Rules, want)
				}
				crb := onlyNamed[*rbacv1.ClusterRoleBinding](t, r, "platform-operators-manager")
				wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "platform-operators", Namespace: namespace}}
				if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != cr.Name || !reflect.DeepEqual(crb.Subjects, wantSubjects) {
					t.Errorf("ClusterRoleBinding = %+v -> %+v, want ClusterRole %s -> %+v", crb.RoleRef, crb.Subjects, cr.Name, wantSubjects)
				}
			},
		},
		{
			name: "default values let the manager hold its leader election Lease in the release namespace",
			check: func(t *testing.T, r rendered) {
				role := only[*rbacv1.Role](t, r)
				if role.Namespace != namespace {
					t.Errorf("Role namespace = %q, want %q", role.Namespace, namespace)
				}
				wantLeases := rbacv1.PolicyRule{
					APIGroups: []string{"coordination.k8s.io"},
					Resources: []string{"leases"},
					Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
				}
				if !slices.ContainsFunc(role.Rules, func(p rbacv1.PolicyRule) bool { return reflect.DeepEqual(p, wantLeases) }) {
					t.Errorf("Role rules = %+v, want one of them %+v", role.Rules, wantLeases)
				}
				rb := only[*rbacv1.RoleBinding](t, r)
				wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "platform-operators", Namespace: namespace}}
				if rb.Namespace != namespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !reflect.DeepEqual(rb.Subjects, wantSubjects) {
					t.Errorf("RoleBinding %s/%s = %+v -> %+v, want Role %s -> %+v", rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects, role.Name, wantSubjects)
				}
			},
		},
		{
			name: "default values expose the metrics port through a ClusterIP Service that selects the manager pods",
			check: func(t *testing.T, r rendered) {
				svc := only[*corev1.Service](t, r)
				if svc.Spec.Type != corev1.ServiceTypeClusterIP {
					t.Errorf("Service type = %q, want ClusterIP", svc.Spec.Type)
				}
				// The health port is what `helm test` asks (TestHelmTestPod).
				if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
					t.Errorf("Service ports = %+v, want metrics 8080 -> metrics, then health", svc.Spec.Ports)
				}
				d := only[*appsv1.Deployment](t, r)
				// The Deployment's selector and the component, which only the manager's pods carry
				// (TestEverySelectorSelectsOnlyTheManager).
				wantSelector := maps.Clone(d.Spec.Selector.MatchLabels)
				wantSelector["app.kubernetes.io/component"] = "manager"
				if !reflect.DeepEqual(svc.Spec.Selector, wantSelector) {
					t.Errorf("Service selector = %v, want %v", svc.Spec.Selector, wantSelector)
				}
				for k, v := range svc.Spec.Selector {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("pod label %s = %q, want %q (the Deployment selector)", k, d.Spec.Template.Labels[k], v)
					}
				}
			},
		},
		{
			name: "default values run every controller but the pod watcher",
			check: func(t *testing.T, r rendered) {
				words := controllersArg(manager(t, r).Args)
				if want := []string{"*", "-podwatcher", "secretsync", "at", "scheduledjob"}; !slices.Equal(words, want) {
					t.Errorf("--controllers words = %q, want %q", words, want)
				}
			},
		},
		{
			name: "default values render one CRD per generated file in files/crds",
			check: func(t *testing.T, r rendered) {
				files, err := filepath.Glob(filepath.Join(chartDir, "files", "crds", "*.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if crds := objectsOf[*apiextensionsv1.CustomResourceDefinition](r); len(crds) != len(files) || len(files) == 0 {
					t.Errorf("rendered %d CRDs, want %d (the files in files/crds)", len(crds), len(files))
				}
			},
		},
		{
			name: "default values print NOTES that tell how to check the rollout",
			check: func(t *testing.T, r rendered) {
				for _, want := range []string{
					"kubectl -n platform-operators-system rollout status deploy/platform-operators",
					"kubectl -n platform-operators-system logs deploy/platform-operators",
					"podWatcher.enabled=true",
					"platform-operators-metrics.platform-operators-system.svc:8080/metrics",
				} {
					if !strings.Contains(r.notes, want) {
						t.Errorf("NOTES do not contain %q:\n%s", want, r.notes)
					}
				}
			},
		},
		{
			name:   "the podwatcher ci values turn the pod watcher on for the listed namespaces",
			values: "crds:\n  keep: false\npodWatcher:\n  enabled: true\n  namespaces: [default]\n",
			check: func(t *testing.T, r rendered) {
				args := manager(t, r).Args
				if !slices.Contains(controllersArg(args), "podwatcher") || !hasArg(args, "--podwatcher-namespaces=default") {
					t.Errorf("args = %q, want podwatcher in --controllers and --podwatcher-namespaces=default", args)
				}
			},
		},
		{
			name: "default values create the default SecretSync's source namespace and keep it on uninstall",
			check: func(t *testing.T, r rendered) {
				ns := only[*corev1.Namespace](t, r)
				if ns.Name != "secretsync" || ns.Annotations["helm.sh/resource-policy"] != "keep" {
					t.Errorf("namespace %s with annotations %v, want secretsync kept", ns.Name, ns.Annotations)
				}
			},
		},
		{
			name:   "the default SecretSync can be aimed at another namespace and type without creating it",
			values: "secretSync:\n  default:\n    sourceNamespace: platform\n    type: kubernetes.io/dockerconfigjson\n    createSourceNamespace: false\n",
			check: func(t *testing.T, r rendered) {
				args := manager(t, r).Args
				for _, want := range []string{"--default-secretsync-source-namespace=platform", "--default-secretsync-type=kubernetes.io/dockerconfigjson"} {
					if !hasArg(args, want) {
						t.Errorf("args = %q, want %q", args, want)
					}
				}
				if nss := objectsOf[*corev1.Namespace](r); len(nss) != 0 {
					t.Errorf("rendered %d namespaces, want none", len(nss))
				}
			},
		},
		{
			name:   "secretSync.enabled=false turns the controller off and renders no default SecretSync",
			values: "secretSync:\n  enabled: false\n",
			check: func(t *testing.T, r rendered) {
				args := manager(t, r).Args
				if !slices.Contains(controllersArg(args), "-secretsync") {
					t.Errorf("args = %q, want -secretsync in --controllers", args)
				}
				for _, prefix := range []string{"--default-secretsync-name", "--secretsync-workers"} {
					if a := argWithPrefix(args, prefix); a != "" {
						t.Errorf("args hold %q, want none", a)
					}
				}
				if nss := objectsOf[*corev1.Namespace](r); len(nss) != 0 {
					t.Errorf("rendered %d namespaces, want none", len(nss))
				}
			},
		},
		{
			name:   "at.enabled=false and scheduledJob.enabled=false turn both job controllers off and drop --job-image",
			values: "at:\n  enabled: false\nscheduledJob:\n  enabled: false\n",
			check: func(t *testing.T, r rendered) {
				args := manager(t, r).Args
				words := controllersArg(args)
				if !slices.Contains(words, "-at") || !slices.Contains(words, "-scheduledjob") {
					t.Errorf("--controllers words = %q, want -at and -scheduledjob", words)
				}
				if a := argWithPrefix(args, "--job-image"); a != "" {
					t.Errorf("args hold %q, want no --job-image", a)
				}
				if a := argWithPrefix(args, "--job-pods-stuck-after"); a != "" {
					t.Errorf("args hold %q, want no --job-pods-stuck-after", a)
				}
			},
		},
		{
			name:   "the job image comes from jobImage, and global.imageRegistry points it at Harbor",
			values: "global:\n  imageRegistry: harbor.example.com/proxy/\njobImage:\n  repository: library/alpine\n  tag: \"3.22\"\n",
			check: func(t *testing.T, r rendered) {
				if args := manager(t, r).Args; !hasArg(args, "--job-image=harbor.example.com/proxy/library/alpine:3.22") {
					t.Errorf("args = %q, want --job-image=harbor.example.com/proxy/library/alpine:3.22", args)
				}
			},
		},
		{
			name:   "jobs.podsStuckAfter sets --job-pods-stuck-after, also with the At controller off",
			values: "at:\n  enabled: false\njobs:\n  podsStuckAfter: 30s\n",
			check: func(t *testing.T, r rendered) {
				if args := manager(t, r).Args; !hasArg(args, "--job-pods-stuck-after=30s") {
					t.Errorf("args = %q, want --job-pods-stuck-after=30s", args)
				}
			},
		},
		{
			name:   "an empty job image registry means no prefix",
			values: "jobImage:\n  registry: \"\"\n",
			check: func(t *testing.T, r rendered) {
				if args := manager(t, r).Args; !hasArg(args, "--job-image=library/busybox:1.37") {
					t.Errorf("args = %q, want --job-image=library/busybox:1.37", args)
				}
			},
		},
		{
			name:   "the pod watcher without namespaces watches all namespaces",
			values: "podWatcher:\n  enabled: true\n",
			check: func(t *testing.T, r rendered) {
				args := manager(t, r).Args
				if !slices.Contains(controllersArg(args), "podwatcher") {
					t.Errorf("args = %q, want podwatcher in --controllers", args)
				}
				if a := argWithPrefix(args, "--podwatcher-namespaces"); a != "" {
					t.Errorf("args hold %q, want no --podwatcher-namespaces", a)
				}
			},
		},
		{
			name:   "namespaces are ignored while the pod watcher is off",
			values: "podWatcher:\n  namespaces: [default, team-a]\n",
			check: func(t *testing.T, r rendered) {
				if a := argWithPrefix(manager(t, r).Args, "--podwatcher-namespaces"); a != "" {
					t.Errorf("args hold %q, want no --podwatcher-namespaces", a)
				}
			},
		},
		{
			name:   "a digest pins the image instead of the tag",
			values: "image:\n  tag: v9.9.9\n  digest: " + digest + "\n",
			check: func(t *testing.T, r rendered) {
				if got, want := manager(t, r).Image, "ghcr.io/platform-operators/manager@"+digest; got != want {
					t.Errorf("image = %q, want %q", got, want)
				}
			},
		},
		{
			name:   "global.imageRegistry overrides image.registry",
			values: "global:\n  imageRegistry: harbor.example.com/platform\nimage:\n  registry: registry.example.org\n  tag: v1.2.3\n",
			check: func(t *testing.T, r rendered) {
				if got, want := manager(t, r).Image, "harbor.example.com/platform/platform-operators/manager:v1.2.3"; got != want {
					t.Errorf("image = %q, want %q", got, want)
				}
			},
		},
		{
			name:   "an empty registry leaves the repository unprefixed",
			values: "image:\n  registry: \"\"\n",
			check: func(t *testing.T, r rendered) {
				if got, want := manager(t, r).Image, "platform-operators/manager:"+appVersion; got != want {
					t.Errorf("image = %q, want %q", got, want)
				}
			},
		},
		{
			name:   "imagePullSecrets reach the pod",
			values: "imagePullSecrets:\n  - name: harbor-pull\n",
			check: func(t *testing.T, r rendered) {
				got := only[*appsv1.Deployment](t, r).Spec.Template.Spec.ImagePullSecrets
				if want := []corev1.LocalObjectReference{{Name: "harbor-pull"}}; !reflect.DeepEqual(got, want) {
					t.Errorf("imagePullSecrets = %+v, want %+v", got, want)
				}
			},
		},
		{
			name:   "metrics.enabled=false turns the endpoint off and leaves the Service only its health port (for helm test)",
			values: "metrics:\n  enabled: false\n",
			check: func(t *testing.T, r rendered) {
				if svcs := objectsOf[*corev1.Service](r); len(svcs) != 1 || len(svcs[0].Spec.Ports) != 1 || svcs[0].Spec.Ports[0].Name != "health" {
					t.Errorf("rendered Services %+v, want one with only the health port", svcs)
				}
				c := manager(t, r)
				if !hasArg(c.Args, "--metrics-bind-address=0") {
					t.Errorf("args = %q, want --metrics-bind-address=0", c.Args)
				}
				for _, p := range c.Ports {
					if p.Name == "metrics" {
						t.Errorf("ports = %+v, want no metrics port", c.Ports)
					}
				}
			},
		},
		{
			name:   "ports, logging, leader election and API limits come from values",
			values: "metrics:\n  port: 9090\nhealthProbe:\n  port: 9091\nleaderElection:\n  enabled: false\nlogging:\n  format: text\n  level: \"4\"\nkubeAPI:\n  qps: 20.5\n  burst: 1000000\n",
			check: func(t *testing.T, r rendered) {
				args := manager(t, r).Args
				for _, want := range []string{
					"--metrics-bind-address=:9090",
					"--health-probe-bind-address=:9091",
					"--leader-elect=false",
					"--log-format=text",
					"--log-level=4",
					"--kube-api-qps=20.5",
					// A float64 value must not render in scientific notation (1e+06).
					"--kube-api-burst=1000000",
				} {
					if !hasArg(args, want) {
						t.Errorf("args = %q, want %q among them", args, want)
					}
				}
				if got := only[*corev1.Service](t, r).Spec.Ports[0].Port; got != 9090 {
					t.Errorf("Service port = %d, want 9090", got)
				}
			},
		},
		{
			name:    "a release name without the chart name prefixes the resource names and the leader election ID",
			release: "po",
			check: func(t *testing.T, r rendered) {
				d := only[*appsv1.Deployment](t, r)
				if d.Name != "po-platform-operators" {
					t.Errorf("Deployment name = %q, want po-platform-operators", d.Name)
				}
				if args := manager(t, r).Args; !hasArg(args, "--leader-election-id=po-platform-operators") {
					t.Errorf("args = %q, want --leader-election-id=po-platform-operators", args)
				}
			},
		},
		{
			name:   "extraArgs follow the chart's flags and extraEnv is the only env",
			values: "extraArgs: [--graceful-shutdown-timeout=10s]\nextraEnv:\n  - name: GOMAXPROCS\n    value: \"2\"\n",
			check: func(t *testing.T, r rendered) {
				c := manager(t, r)
				if last := c.Args[len(c.Args)-1]; last != "--graceful-shutdown-timeout=10s" {
					t.Errorf("last arg = %q, want --graceful-shutdown-timeout=10s", last)
				}
				if want := []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "2"}}; !reflect.DeepEqual(c.Env, want) {
					t.Errorf("env = %+v, want %+v", c.Env, want)
				}
			},
		},
		{
			name:   "replicaCount 0 scales the manager down rather than falling back to the default",
			values: "replicaCount: 0\n",
			check: func(t *testing.T, r rendered) {
				if got := ptr.Deref(only[*appsv1.Deployment](t, r).Spec.Replicas, -1); got != 0 {
					t.Errorf("replicas = %d, want 0", got)
				}
			},
		},
		{
			name:   "pod placement and metadata come from values",
			values: "podAnnotations: {a: b}\npodLabels: {team: platform}\nnodeSelector: {kubernetes.io/os: linux}\ntolerations: [{key: k, operator: Exists}]\npriorityClassName: system-cluster-critical\ntopologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]\naffinity: {nodeAffinity: {}}\n",
			check: func(t *testing.T, r rendered) {
				tpl := only[*appsv1.Deployment](t, r).Spec.Template
				if tpl.Annotations["a"] != "b" || tpl.Labels["team"] != "platform" {
					t.Errorf("pod annotations %v, labels %v, want a=b and team=platform", tpl.Annotations, tpl.Labels)
				}
				s := tpl.Spec
				if s.NodeSelector["kubernetes.io/os"] != "linux" || len(s.Tolerations) != 1 || s.PriorityClassName != "system-cluster-critical" ||
					len(s.TopologySpreadConstraints) != 1 || s.Affinity == nil || s.Affinity.NodeAffinity == nil {
					t.Errorf("pod spec = nodeSelector %v, tolerations %v, priorityClassName %q, topologySpreadConstraints %v, affinity %+v; want the values",
						s.NodeSelector, s.Tolerations, s.PriorityClassName, s.TopologySpreadConstraints, s.Affinity)
				}
			},
		},
		{
			name:   "two replicas are spread over nodes by default, softly, per rollout",
			values: "replicaCount: 2\n",
			check: func(t *testing.T, r rendered) {
				tpl := only[*appsv1.Deployment](t, r).Spec.Template
				c := tpl.Spec.TopologySpreadConstraints
				if len(c) != 1 || c[0].TopologyKey != "kubernetes.io/hostname" || c[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
					!slices.Equal(c[0].MatchLabelKeys, []string{"pod-template-hash"}) || c[0].LabelSelector == nil {
					t.Fatalf("topologySpreadConstraints = %+v, want one soft hostname spread", c)
				}
				sel, err := metav1.LabelSelectorAsSelector(c[0].LabelSelector)
				if err != nil || !sel.Matches(labels.Set(tpl.Labels)) {
					t.Errorf("spread selector %v does not select the manager pods (%v): %v", c[0].LabelSelector, tpl.Labels, err)
				}
			},
		},
		{
			name:   "one replica, or spreadAcrossNodes=false, renders no spread",
			values: "replicaCount: 3\nspreadAcrossNodes: false\n",
			check: func(t *testing.T, r rendered) {
				if c := only[*appsv1.Deployment](t, r).Spec.Template.Spec.TopologySpreadConstraints; len(c) != 0 {
					t.Errorf("topologySpreadConstraints = %+v, want none", c)
				}
			},
		},
		{
			name:   "rbac.create=false and serviceAccount.create=false leave RBAC and the ServiceAccount to the user",
			values: "rbac:\n  create: false\nserviceAccount:\n  create: false\n  name: managed-elsewhere\n",
			check: func(t *testing.T, r rendered) {
				if n := len(objectsOf[*rbacv1.ClusterRole](r)) + len(objectsOf[*rbacv1.Role](r)) + len(objectsOf[*rbacv1.ClusterRoleBinding](r)) + len(objectsOf[*rbacv1.RoleBinding](r)); n != 0 {
					t.Errorf("rendered %d RBAC objects, want none", n)
				}
				if sas := objectsOf[*corev1.ServiceAccount](r); len(sas) != 0 {
					t.Errorf("rendered %d ServiceAccounts, want none", len(sas))
				}
				if got := only[*appsv1.Deployment](t, r).Spec.Template.Spec.ServiceAccountName; got != "managed-elsewhere" {
					t.Errorf("serviceAccountName = %q, want managed-elsewhere", got)
				}
			},
		},
		{
			name:   "parent charts may add their own global values",
			values: "global:\n  storageClass: efs\n  anything: {nested: true}\n",
			check: func(t *testing.T, r rendered) {
				if got, want := manager(t, r).Image, "ghcr.io/platform-operators/manager:"+appVersion; got != want {
					t.Errorf("image = %q, want %q", got, want)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := tc.release
			if release == "" {
				release = releaseName
			}
			r, err := render(t, loadChart(t), release, parseValues(t, tc.values))
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			tc.check(t, r)
		})
	}
}

// equalResources compares resource lists by quantity value, not by their string form.
func equalResources(a, b corev1.ResourceRequirements) bool {
	eq := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, q := range x {
			if p, ok := y[k]; !ok || q.Cmp(p) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}

func TestSchemaRejectsBadValues(t *testing.T) {
	cases := []struct {
		name   string
		values string
		// wantInError are substrings the error must hold: the field it is about.
		wantInError []string
	}{
		{"a misspelt top-level key is rejected", "replicaCont: 2\n", []string{"replicaCont"}},
		{"a misspelt nested key is rejected", "image:\n  tagg: v1\n", []string{"tagg"}},
		{"an unknown log format is rejected", "logging:\n  format: xml\n", []string{"/logging/format"}},
		{"an unknown log level is rejected", "logging:\n  level: verbose\n", []string{"/logging/level"}},
		{"zero queries per second are rejected", "kubeAPI:\n  qps: 0\n", []string{"/kubeAPI/qps"}},
		{"a negative qps other than -1 is rejected", "kubeAPI:\n  qps: -2\n", []string{"/kubeAPI/qps"}},
		{"a zero burst is rejected", "kubeAPI:\n  burst: 0\n", []string{"/kubeAPI/burst"}},
		{"a port above 65535 is rejected", "metrics:\n  port: 70000\n", []string{"/metrics/port"}},
		{"a negative replica count is rejected", "replicaCount: -1\n", []string{"/replicaCount"}},
		{"a digest without an algorithm is rejected", "image:\n  digest: latest\n", []string{"/image/digest"}},
		{"a pull secret given as a string is rejected", "imagePullSecrets: [harbor-pull]\n", []string{"/imagePullSecrets/0"}},
		{"a string for the pod watcher switch is rejected", "podWatcher:\n  enabled: \"yes\"\n", []string{"/podWatcher/enabled"}},
		{"a string for the At switch is rejected", "at:\n  enabled: \"yes\"\n", []string{"/at/enabled"}},
		{"a misspelt scheduledJob key is rejected", "scheduledJob:\n  enable: true\n", []string{"enable"}},
		{"an empty job image tag is rejected", "jobImage:\n  tag: \"\"\n", []string{"/jobImage/tag"}},
		{"a negative jobs.podsStuckAfter is rejected", "jobs:\n  podsStuckAfter: -1m\n", []string{"/jobs/podsStuckAfter"}},
		{"a jobs.podsStuckAfter without a unit is rejected", "jobs:\n  podsStuckAfter: 120\n", []string{"/jobs/podsStuckAfter"}},
		{"a star beside a name in pullSecret.sync.serviceAccounts is rejected", "pullSecret:\n  sync:\n    serviceAccounts: [default, \"*\"]\n", []string{"/pullSecret/sync/serviceAccounts"}},
		{"a glob in pullSecret.sync.serviceAccounts is rejected", "pullSecret:\n  sync:\n    serviceAccounts: [\"builder-*\"]\n", []string{"/pullSecret/sync/serviceAccounts/0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, loadChart(t), releaseName, parseValues(t, tc.values))
			if err == nil {
				t.Fatalf("rendering with %q succeeded, want a schema error", tc.values)
			}
			for _, want := range tc.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error = %q, want it to mention %q", err, want)
				}
			}
		})
	}
}

func TestSchemaAcceptsValidValues(t *testing.T) {
	cases := []struct {
		name   string
		values string
	}{
		{"an integer log level is accepted", "logging:\n  level: 3\n"},
		{"a numeric log level string is accepted", "logging:\n  level: \"10\"\n"},
		{"debug logging is accepted", "logging:\n  level: debug\n"},
		{"warn logging is accepted", "logging:\n  level: warn\n"},
		{"a fractional qps of at least one is accepted", "kubeAPI:\n  qps: 1.5\n"},
		{"qps -1 (no client-side limit) is accepted", "kubeAPI:\n  qps: -1\n"},
		{"every ServiceAccount for the pull secret is accepted", "secretSync:\n  enabled: true\npullSecret:\n  sync:\n    enabled: true\n    serviceAccounts: [\"*\"]\n"},
		{"the default ci values are accepted", mustReadFile(t, "ci/default-values.yaml")},
		{"the podwatcher ci values are accepted", mustReadFile(t, "ci/podwatcher-values.yaml")},
		{"the platform ci values are accepted", mustReadFile(t, "ci/platform-values.yaml")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := render(t, loadChart(t), releaseName, parseValues(t, tc.values)); err != nil {
				t.Errorf("rendering with %q: %v", tc.values, err)
			}
		})
	}
}

func mustReadFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestGeneratedFiles(t *testing.T) {
	cases := []struct {
		name   string
		files  map[string]string // chart files to write, as `make manifests` would
		values string
		// check runs on the rendered objects; wantErr, when set, is a substring of the expected error.
		check   func(t *testing.T, r rendered)
		wantErr string
	}{
		{
			name:  "a generated CRD is installed with the chart's labels and kept on uninstall",
			files: map[string]string{"files/crds/ops.platform-operators.io_ats.yaml": crdFile},
			check: func(t *testing.T, r rendered) {
				crd := only[*apiextensionsv1.CustomResourceDefinition](t, r)
				if crd.Name != "ats.ops.platform-operators.io" || crd.Spec.Names.Kind != "At" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
					t.Errorf("CRD = %s (kind %s, scope %s), want ats.ops.platform-operators.io (At, Namespaced)", crd.Name, crd.Spec.Names.Kind, crd.Spec.Scope)
				}
				if got := crd.Annotations["helm.sh/resource-policy"]; got != "keep" {
					t.Errorf("annotation helm.sh/resource-policy = %q, want keep", got)
				}
				if got := crd.Annotations["controller-gen.kubebuilder.io/version"]; got != "v0.20.0" {
					t.Errorf("controller-gen annotation = %q, want it kept (v0.20.0)", got)
				}
				if got := crd.Labels["app.kubernetes.io/managed-by"]; got != "Helm" {
					t.Errorf("label app.kubernetes.io/managed-by = %q, want Helm", got)
				}
				maxLen := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["schedule"].MaxLength
				if ptr.Deref(maxLen, 0) != 1000000 {
					t.Errorf("maxLength = %v, want 1000000 to survive the round trip through the template", maxLen)
				}
			},
		},
		{
			name:   "crds.keep=false lets Helm delete the CRDs on uninstall",
			files:  map[string]string{"files/crds/ops.platform-operators.io_ats.yaml": crdFile},
			values: "crds:\n  keep: false\n",
			check: func(t *testing.T, r rendered) {
				crd := only[*apiextensionsv1.CustomResourceDefinition](t, r)
				if got, ok := crd.Annotations["helm.sh/resource-policy"]; ok {
					t.Errorf("annotation helm.sh/resource-policy = %q, want none", got)
				}
			},
		},
		{
			name:   "crds.enabled=false installs no CRD",
			files:  map[string]string{"files/crds/ops.platform-operators.io_ats.yaml": crdFile},
			values: "crds:\n  enabled: false\n",
			check: func(t *testing.T, r rendered) {
				if crds := objectsOf[*apiextensionsv1.CustomResourceDefinition](r); len(crds) != 0 {
					t.Errorf("rendered %d CRDs, want none", len(crds))
				}
			},
		},
		{
			name: "every document of every CRD file is installed",
			files: map[string]string{
				"files/crds/ops.platform-operators.io_ats.yaml":   crdFile + secondCRD,
				"files/crds/ops.platform-operators.io_empty.yaml": "---\n# nothing generated yet\n",
			},
			check: func(t *testing.T, r rendered) {
				var names []string
				for _, crd := range objectsOf[*apiextensionsv1.CustomResourceDefinition](r) {
					names = append(names, crd.Name)
				}
				slices.Sort(names)
				if want := []string{"ats.ops.platform-operators.io", "secretsyncs.ops.platform-operators.io"}; !reflect.DeepEqual(names, want) {
					t.Errorf("CRDs = %q, want %q", names, want)
				}
			},
		},
		{
			name:    "a CRD file that is not YAML fails rendering and names the file",
			files:   map[string]string{"files/crds/broken.yaml": "kind: [unclosed\n"},
			wantErr: "files/crds/broken.yaml",
		},
		{
			name:    "a role.yaml without rules fails rendering with a hint to run make manifests",
			files:   map[string]string{"files/rbac/role.yaml": "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: manager-role\n"},
			wantErr: "files/rbac/role.yaml has no rules",
		},
		{
			name:    "an empty role.yaml fails rendering",
			files:   map[string]string{"files/rbac/role.yaml": ""},
			wantErr: "make manifests",
		},
		{
			name:   "a role.yaml without rules is fine when the chart creates no RBAC",
			files:  map[string]string{"files/rbac/role.yaml": ""},
			values: "rbac:\n  create: false\n",
			check: func(t *testing.T, r rendered) {
				only[*appsv1.Deployment](t, r)
			},
		},
		{
			name: "the ClusterRole follows a regenerated controller role",
			files: map[string]string{"files/rbac/controllers/at.yaml": `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: at
rules:
- apiGroups:
  - ops.platform-operators.io
  resources:
  - ats
  verbs:
  - get
`},
			check: func(t *testing.T, r rendered) {
				want := append([]rbacv1.PolicyRule{{APIGroups: []string{"ops.platform-operators.io"}, Resources: []string{"ats"}, Verbs: []string{"get"}}},
					enabledControllerRules(t, "scheduledjob", "secretsync")...)
				if got := onlyNamed[*rbacv1.ClusterRole](t, r, "platform-operators-manager").Rules; !reflect.DeepEqual(got, want) {
					t.Errorf("ClusterRole rules = %+v, want %+v", got, want)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := withoutGeneratedCRDs(loadChart(t))
			for name, data := range tc.files {
				ch = withFile(ch, name, data)
			}
			r, err := render(t, ch, releaseName, parseValues(t, tc.values))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			tc.check(t, r)
		})
	}
}

func TestEveryObjectCarriesTheStandardLabels(t *testing.T) {
	want := map[string]string{
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "platform-operators",
		"app.kubernetes.io/name":       "platform-operators",
		"app.kubernetes.io/instance":   releaseName,
		"app.kubernetes.io/version":    appVersion,
		"app.kubernetes.io/component":  "manager",
		"helm.sh/chart":                "platform-operators-" + chartVersion,
	}
	cases := []struct {
		name   string
		values string
	}{
		{"with the default values", ""},
		{"with the pod watcher on and metrics off", "podWatcher:\n  enabled: true\nmetrics:\n  enabled: false\n"},
		{"with CRDs kept", "crds:\n  keep: true\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := withFile(loadChart(t), "files/crds/ops.platform-operators.io_ats.yaml", crdFile)
			r, err := render(t, ch, releaseName, parseValues(t, tc.values))
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			if len(r.objects) < 7 {
				t.Fatalf("rendered %d objects, want at least 7", len(r.objects))
			}
			for _, obj := range r.objects {
				m, err := meta.Accessor(obj)
				if err != nil {
					t.Fatal(err)
				}
				labels := m.GetLabels()
				if d, ok := obj.(*appsv1.Deployment); ok {
					// The pods are what users select on (kubectl -l, PodMonitors): they carry them too.
					labels = d.Spec.Template.Labels
				}
				for k, v := range want {
					if labels[k] != v {
						t.Errorf("%T %s: label %s = %q, want %q", obj, m.GetName(), k, labels[k], v)
					}
				}
			}
		})
	}
}

func TestHelmLintStrict(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		values map[string]any
	}{
		{"the chart passes helm lint --strict with its default values", nil},
		{"the chart passes helm lint --strict with the default ci values", valuesFile(t, "ci/default-values.yaml")},
		{"the chart passes helm lint --strict with the podwatcher ci values", valuesFile(t, "ci/podwatcher-values.yaml")},
		{"the chart passes helm lint --strict with the platform ci values", valuesFile(t, "ci/platform-values.yaml")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = namespace
			lint.KubeVersion = kv
			result := lint.Run([]string{chartDir}, tc.values)
			if result.TotalChartsLinted != 1 {
				t.Errorf("linted %d charts, want 1", result.TotalChartsLinted)
			}
			for _, err := range result.Errors {
				t.Errorf("lint: %v", err)
			}
		})
	}
}
