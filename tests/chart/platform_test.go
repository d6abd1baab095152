package chart

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The platform pieces of the chart: StorageClass, pull secret, PDB, ServiceMonitor, `helm test`,
// and what an Argo Rollouts workloadRef needs from the Deployment's pod template.

const fsID = "fs-0123456789abcdef0"

// renderAll renders like render, with the API versions the cluster would serve
// (Capabilities.APIVersions), and returns the hooks (the `helm test` pod) among the objects.
func renderAll(t *testing.T, valuesText string, apiVersions ...string) (rendered, error) {
	t.Helper()
	out, err := renderWith(t, loadChart(t), releaseName, parseValues(t, valuesText), apiVersions)
	out.objects = append(out.objects, out.hooks...)
	return out, err
}

func mustRenderAll(t *testing.T, valuesText string, apiVersions ...string) rendered {
	t.Helper()
	r, err := renderAll(t, valuesText, apiVersions...)
	if err != nil {
		t.Fatalf("rendering with values %q: %v", valuesText, err)
	}
	return r
}

// wantRenderError renders and fails the test unless rendering fails with every one of want.
func wantRenderError(t *testing.T, valuesText string, want ...string) {
	t.Helper()
	_, err := renderAll(t, valuesText)
	if err == nil {
		t.Fatalf("rendering with %q succeeded, want an error mentioning %q", valuesText, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error = %q, want it to mention %q", err, w)
		}
	}
}

func TestStorageClass(t *testing.T) {
	cases := []struct {
		name   string
		values string
		check  func(t *testing.T, sc *storagev1.StorageClass)
	}{
		{
			name:   "the seed's EFS class renders every parameter as a string",
			values: "storageClass:\n  enabled: true\n  parameters:\n    fileSystemId: " + fsID + "\n",
			check: func(t *testing.T, sc *storagev1.StorageClass) {
				want := map[string]string{"provisioningMode": "efs-ap", "fileSystemId": fsID, "directoryPerms": "700"}
				if !reflect.DeepEqual(sc.Parameters, want) {
					t.Errorf("parameters = %v, want %v", sc.Parameters, want)
				}
				if sc.Name != "efs-sc" || sc.Provisioner != "efs.csi.aws.com" {
					t.Errorf("name/provisioner = %s/%s, want efs-sc/efs.csi.aws.com", sc.Name, sc.Provisioner)
				}
				if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
					t.Errorf("reclaimPolicy/volumeBindingMode = %s/%s", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
				}
				if _, ok := sc.Annotations["storageclass.kubernetes.io/is-default-class"]; ok {
					t.Errorf("not the default class unless asked: annotations %v", sc.Annotations)
				}
			},
		},
		{
			name: "every optional EFS parameter, bools and large numbers included, arrives as an exact string",
			values: `storageClass:
  enabled: true
  name: harbor-rwx
  isDefault: true
  reclaimPolicy: Retain
  volumeBindingMode: WaitForFirstConsumer
  allowVolumeExpansion: true
  mountOptions: [tls, iam]
  parameters:
    fileSystemId: ` + fsID + `
    directoryPerms: 750
    gidRangeStart: 1000
    gidRangeEnd: 2000000
    basePath: /harbor
    subPathPattern: ${.PVC.namespace}/${.PVC.name}
    ensureUniqueDirectory: false
    reuseAccessPoint: false
`,
			check: func(t *testing.T, sc *storagev1.StorageClass) {
				want := map[string]string{
					"provisioningMode": "efs-ap", "fileSystemId": fsID, "directoryPerms": "750",
					"gidRangeStart": "1000", "gidRangeEnd": "2000000", "basePath": "/harbor",
					"subPathPattern": "${.PVC.namespace}/${.PVC.name}", "ensureUniqueDirectory": "false", "reuseAccessPoint": "false",
				}
				if !reflect.DeepEqual(sc.Parameters, want) {
					t.Errorf("parameters = %v, want %v", sc.Parameters, want)
				}
				if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
					t.Errorf("default-class annotation missing: %v", sc.Annotations)
				}
				if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
					t.Errorf("reclaimPolicy/volumeBindingMode = %s/%s", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
				}
				if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion || !reflect.DeepEqual(sc.MountOptions, []string{"tls", "iam"}) {
					t.Errorf("allowVolumeExpansion/mountOptions = %v/%v", sc.AllowVolumeExpansion, sc.MountOptions)
				}
			},
		},
		{
			name:   "another provisioner (kind's local-path) gets no EFS parameters and needs no fileSystemId",
			values: "storageClass:\n  enabled: true\n  provisioner: rancher.io/local-path\n  volumeBindingMode: WaitForFirstConsumer\n  extraParameters:\n    nodePath: /var/local-path\n",
			check: func(t *testing.T, sc *storagev1.StorageClass) {
				if want := map[string]string{"nodePath": "/var/local-path"}; !reflect.DeepEqual(sc.Parameters, want) {
					t.Errorf("parameters = %v, want %v", sc.Parameters, want)
				}
				if sc.Provisioner != "rancher.io/local-path" {
					t.Errorf("provisioner = %s", sc.Provisioner)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, only[*storagev1.StorageClass](t, mustRenderAll(t, tc.values)))
		})
	}
	t.Run("the class is off by default", func(t *testing.T) {
		if got := objectsOf[*storagev1.StorageClass](mustRenderAll(t, "")); len(got) != 0 {
			t.Errorf("rendered %d StorageClasses, want none", len(got))
		}
	})
}

func TestBadPlatformValuesAreRejected(t *testing.T) {
	cases := []struct {
		name   string
		values string
		want   []string
	}{
		{"the EFS class without a fileSystemId fails with what to set", "storageClass:\n  enabled: true\n", []string{"storageClass.parameters.fileSystemId is required"}},
		{"half a gid range fails", "storageClass:\n  enabled: true\n  parameters:\n    fileSystemId: " + fsID + "\n    gidRangeStart: 1000\n", []string{"gidRangeStart and gidRangeEnd must be set together"}},
		{"only the end of a gid range fails", "storageClass:\n  enabled: true\n  parameters:\n    fileSystemId: " + fsID + "\n    gidRangeEnd: 1000\n", []string{"must be set together"}},
		{"a reversed gid range fails", "storageClass:\n  enabled: true\n  parameters:\n    fileSystemId: " + fsID + "\n    gidRangeStart: 2000\n    gidRangeEnd: 1000\n", []string{"gidRangeStart (2000) must not be greater than gidRangeEnd (1000)"}},
		{"a file system ID that is not fs-... is rejected", "storageClass:\n  parameters:\n    fileSystemId: my-efs\n", []string{"/storageClass/parameters/fileSystemId"}},
		{"an unknown reclaim policy is rejected", "storageClass:\n  reclaimPolicy: Recycle\n", []string{"/storageClass/reclaimPolicy"}},
		{"a misspelt EFS parameter is rejected", "storageClass:\n  parameters:\n    fileSystemID: " + fsID + "\n", []string{"fileSystemID"}},
		{"directoryPerms that are not octal are rejected", "storageClass:\n  parameters:\n    directoryPerms: \"rwx\"\n", []string{"/storageClass/parameters/directoryPerms"}},
		{"a pull secret without a password fails", "pullSecret:\n  create: true\n  registry: harbor.example.com\n  username: robot$platform+ci\n", []string{"pullSecret.create needs"}},
		{"a pull secret sync without the SecretSync controller fails", "secretSync:\n  enabled: false\npullSecret:\n  sync:\n    enabled: true\n", []string{"secretSync.enabled=true"}},
		{"a bad ServiceMonitor interval is rejected", "serviceMonitor:\n  interval: soon\n", []string{"/serviceMonitor/interval"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantRenderError(t, tc.values, tc.want...) })
	}
}

// harborValues is a Harbor robot account whose name and secret hold every character a careless
// template or shell would mangle.
const harborValues = `pullSecret:
  create: true
  registry: harbor.example.com
  username: robot$platform+ci
  password: 's3"cr$t\x'
`

func TestPullSecret(t *testing.T) {
	t.Run("a Harbor robot account survives byte-exact in the dockerconfigjson", func(t *testing.T) {
		r := mustRenderAll(t, harborValues)
		s := only[*corev1.Secret](t, r)
		if s.Type != corev1.SecretTypeDockerConfigJson || s.Namespace != "secretsync" || s.Name != "registry-pull" {
			t.Fatalf("secret %s/%s type %s, want secretsync/registry-pull of type %s", s.Namespace, s.Name, s.Type, corev1.SecretTypeDockerConfigJson)
		}
		var cfg struct {
			Auths map[string]struct{ Username, Password, Auth string }
		}
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			t.Fatalf("the dockerconfigjson is not JSON: %v\n%s", err, s.Data[corev1.DockerConfigJsonKey])
		}
		a, ok := cfg.Auths["harbor.example.com"]
		if !ok {
			t.Fatalf("no auth for harbor.example.com: %+v", cfg)
		}
		wantUser, wantPass := "robot$platform+ci", `s3"cr$t\x`
		if a.Username != wantUser || a.Password != wantPass {
			t.Errorf("username/password = %q/%q, want %q/%q", a.Username, a.Password, wantUser, wantPass)
		}
		auth, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil || string(auth) != wantUser+":"+wantPass {
			t.Errorf("auth decodes to %q (%v), want %q", auth, err, wantUser+":"+wantPass)
		}
		if ps := only[*appsv1.Deployment](t, r).Spec.Template.Spec.ImagePullSecrets; len(ps) != 0 {
			t.Errorf("a secret outside the release namespace cannot pull the manager image; imagePullSecrets = %v", ps)
		}
		if argWithPrefix(manager(t, r).Args, "--pull-secret-sync") != "" {
			t.Errorf("no sync unless asked: args %q", manager(t, r).Args)
		}
	})
	t.Run("imagePullSecrets pull the manager image, each once; the pull secret (the tenants') is not among them", func(t *testing.T) {
		r := mustRenderAll(t, harborValues+"  namespace: "+namespace+"\nimagePullSecrets:\n  - name: other\n  - name: registry-pull\n")
		if s := only[*corev1.Secret](t, r); s.Namespace != namespace {
			t.Errorf("namespace = %s, want %s", s.Namespace, namespace)
		}
		got := only[*appsv1.Deployment](t, r).Spec.Template.Spec.ImagePullSecrets
		want := []corev1.LocalObjectReference{{Name: "other"}, {Name: "registry-pull"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("imagePullSecrets = %v, want %v", got, want)
		}
	})
	t.Run("sync makes the manager keep a SecretSync of the pull secret for the default ServiceAccounts", func(t *testing.T) {
		r := mustRenderAll(t, harborValues+"  sync:\n    enabled: true\n    serviceAccounts: [default, builder]\n")
		args := manager(t, r).Args
		for _, want := range []string{
			"--pull-secret-sync-name=platform-operators-pull-secret",
			"--pull-secret-sync-source-namespace=secretsync",
			"--pull-secret-sync-secret=registry-pull",
			"--pull-secret-sync-service-accounts=default,builder",
		} {
			if !hasArg(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
		if !strings.Contains(r.notes, "copied into every namespace") {
			t.Errorf("NOTES do not say where the pull secret goes:\n%s", r.notes)
		}
	})
	t.Run("an existing pull secret can be synced without the chart creating it", func(t *testing.T) {
		r := mustRenderAll(t, "pullSecret:\n  name: harbor\n  sync:\n    enabled: true\n")
		if got := objectsOf[*corev1.Secret](r); len(got) != 0 {
			t.Errorf("rendered %d Secrets, want none", len(got))
		}
		if !hasArg(manager(t, r).Args, "--pull-secret-sync-secret=harbor") {
			t.Errorf("args %q", manager(t, r).Args)
		}
	})
}

func TestPodDisruptionBudget(t *testing.T) {
	// HA by default: two replicas and a PDB that keeps one through a drain.
	if got := only[*policyv1.PodDisruptionBudget](t, mustRenderAll(t, "")); got.Spec.MinAvailable == nil || got.Spec.MinAvailable.IntValue() != 1 || got.Spec.MaxUnavailable != nil {
		t.Errorf("default PDB = %+v, want minAvailable 1", got.Spec)
	}
	if got := objectsOf[*policyv1.PodDisruptionBudget](mustRenderAll(t, "podDisruptionBudget:\n  enabled: false\n")); len(got) != 0 {
		t.Fatalf("a PDB with podDisruptionBudget.enabled=false: %v", got)
	}
	r := mustRenderAll(t, "replicaCount: 2\npodDisruptionBudget:\n  enabled: true\n")
	pdb := only[*policyv1.PodDisruptionBudget](t, r)
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("minAvailable/maxUnavailable = %v/%v, want 1/nil", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	// The manager's pods only (TestEverySelectorSelectsOnlyTheManager checks what else it could match).
	if svc := only[*corev1.Service](t, r); !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, svc.Spec.Selector) {
		t.Errorf("PDB selector %v, want the metrics Service's %v", pdb.Spec.Selector.MatchLabels, svc.Spec.Selector)
	}
	pdb = only[*policyv1.PodDisruptionBudget](t, mustRenderAll(t, "podDisruptionBudget:\n  enabled: true\n  maxUnavailable: 50%\n"))
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromString("50%") || pdb.Spec.MinAvailable != nil {
		t.Errorf("maxUnavailable/minAvailable = %v/%v, want 50%%/nil (the API takes only one)", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
}

func TestServiceMonitor(t *testing.T) {
	const api = "monitoring.coreos.com/v1/ServiceMonitor"
	serviceMonitors := func(r rendered) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, u := range objectsOf[*unstructured.Unstructured](r) {
			if u.GetKind() == "ServiceMonitor" {
				out = append(out, u)
			}
		}
		return out
	}
	if got := serviceMonitors(mustRenderAll(t, "serviceMonitor:\n  enabled: true\n")); len(got) != 0 {
		t.Errorf("a ServiceMonitor without its CRD in the cluster would fail the install: %d rendered", len(got))
	}
	if got := serviceMonitors(mustRenderAll(t, "serviceMonitor:\n  enabled: true\nmetrics:\n  enabled: false\n", api)); len(got) != 0 {
		t.Errorf("a ServiceMonitor without the metrics Service: %d rendered", len(got))
	}
	r := mustRenderAll(t, "serviceMonitor:\n  enabled: true\n  interval: 30s\n  labels:\n    release: prometheus\n", api)
	sms := serviceMonitors(r)
	if len(sms) != 1 {
		t.Fatalf("rendered %d ServiceMonitors, want 1", len(sms))
	}
	sm := sms[0]
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("labels = %v", sm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "metrics" || endpoints[0].(map[string]any)["interval"] != "30s" {
		t.Errorf("endpoints = %v", endpoints)
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svc := only[*corev1.Service](t, r)
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service lacks (%v)", k, v, svc.Labels)
		}
	}
}

func TestHelmTestPod(t *testing.T) {
	testPod := func(t *testing.T, r rendered) *corev1.Pod {
		t.Helper()
		var tests []*corev1.Pod
		for _, p := range objectsOf[*corev1.Pod](r) {
			if p.Annotations["helm.sh/hook"] == "test" {
				tests = append(tests, p)
			}
		}
		if len(tests) != 1 {
			t.Fatalf("rendered %d helm test pods, want 1", len(tests))
		}
		return tests[0]
	}
	r := mustRenderAll(t, "")
	p := testPod(t, r)
	if len(p.Spec.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(p.Spec.Containers))
	}
	c := p.Spec.Containers[0]
	// The manager image has no shell and no wget: the manager itself asks /readyz.
	wantArgs := []string{"probe", "http://platform-operators-metrics." + namespace + ".svc:8081/readyz", "--attempts=30", "--interval=2s", "--timeout=5s"}
	if !reflect.DeepEqual(c.Command, []string{"/manager"}) || !reflect.DeepEqual(c.Args, wantArgs) {
		t.Errorf("command %q args %q, want [/manager] %q", c.Command, c.Args, wantArgs)
	}
	if m := manager(t, r); c.Image != m.Image || c.ImagePullPolicy != m.ImagePullPolicy {
		t.Errorf("image %s (%s), want the manager's %s (%s)", c.Image, c.ImagePullPolicy, m.Image, m.ImagePullPolicy)
	}
	// `helm test --logs` reads the pod's log after the run: hook-succeeded would delete it first.
	if got := p.Annotations["helm.sh/hook-delete-policy"]; got != "before-hook-creation" {
		t.Errorf("hook-delete-policy = %q, want before-hook-creation (kept for helm test --logs, replaced by the next run)", got)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %s, want Never (a failure must fail helm test)", p.Spec.RestartPolicy)
	}
	if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and the RuntimeDefault seccomp profile", sc)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext = %+v, want the restricted profile with a read-only root", sc)
	}
	if p.Labels["app.kubernetes.io/component"] != "test" || p.Labels["app.kubernetes.io/instance"] != releaseName {
		t.Errorf("labels = %v, want component test and the release's instance", p.Labels)
	}
	svc := only[*corev1.Service](t, r)
	var health *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == "health" {
			health = &svc.Spec.Ports[i]
		}
	}
	if health == nil || health.Port != 8081 || health.TargetPort != intstr.FromString("health") {
		t.Fatalf("the Service has no health port 8081 -> health: %+v", svc.Spec.Ports)
	}
	if !slices.ContainsFunc(manager(t, r).Ports, func(p corev1.ContainerPort) bool { return p.Name == "health" }) {
		t.Errorf("the manager container has no port named health")
	}
	if !strings.Contains(r.notes, "helm test platform-operators -n "+namespace+" --logs") {
		t.Errorf("NOTES do not mention helm test:\n%s", r.notes)
	}
	if got := objectsOf[*corev1.Pod](mustRenderAll(t, "tests:\n  enabled: false\n")); len(got) != 0 {
		t.Errorf("tests.enabled=false still renders %d pods", len(got))
	}

	images := []struct {
		name, values, want string
	}{
		{"a digest-pinned manager image is the test image too", "image:\n  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", "ghcr.io/platform-operators/manager@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"global.imageRegistry applies to the test image", "global:\n  imageRegistry: harbor.example.com/proxy\n", "harbor.example.com/proxy/platform-operators/manager:" + appVersion},
		{"tests.image.repository picks another image, tagged with appVersion", "tests:\n  image:\n    registry: mirror.example.com\n    repository: po/manager\n", "mirror.example.com/po/manager:" + appVersion},
		{"tests.image.tag goes with tests.image.repository", "tests:\n  image:\n    repository: po/manager\n    tag: dev\n", "po/manager:dev"},
	}
	for _, tc := range images {
		t.Run(tc.name, func(t *testing.T) {
			if got := testPod(t, mustRenderAll(t, tc.values)).Spec.Containers[0].Image; got != tc.want {
				t.Errorf("image = %s, want %s", got, tc.want)
			}
		})
	}
}

// An Argo Rollout with `workloadRef` to the Deployment runs the Deployment's pod template as is
// (and the Deployment is scaled to 0): everything the manager needs must be in that template,
// nothing in fields of the Deployment outside it.
func TestPodTemplateIsCompleteForARolloutWorkloadRef(t *testing.T) {
	r := mustRenderAll(t, "replicaCount: 0\n")
	d := only[*appsv1.Deployment](t, r)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		t.Fatalf("replicas = %v, want 0 (the Rollout owns the pods)", d.Spec.Replicas)
	}
	tpl := d.Spec.Template
	for k, v := range d.Spec.Selector.MatchLabels {
		if tpl.Labels[k] != v {
			t.Errorf("template labels %v lack selector label %s=%s", tpl.Labels, k, v)
		}
	}
	if want := only[*corev1.ServiceAccount](t, r).Name; tpl.Spec.ServiceAccountName != want {
		t.Errorf("serviceAccountName = %q, want %q", tpl.Spec.ServiceAccountName, want)
	}
	if sc := tpl.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and a seccomp profile", sc)
	}
	c := manager(t, r)
	if !reflect.DeepEqual(c.Command, []string{"/manager"}) {
		t.Errorf("command = %q", c.Command)
	}
	for _, prefix := range []string{"--health-probe-bind-address=", "--leader-elect=", "--leader-election-id=", "--leader-election-namespace=", "--controllers="} {
		if argWithPrefix(c.Args, prefix) == "" {
			t.Errorf("args %q lack %s", c.Args, prefix)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Fatalf("probes = %+v / %+v, want HTTP probes", c.LivenessProbe, c.ReadinessProbe)
		}
		if _, ok := ports[probe.HTTPGet.Port.String()]; !ok {
			t.Errorf("probe port %s is not a named port of the container (%v)", probe.HTTPGet.Port.String(), ports)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probe paths = %s / %s", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0 {
		t.Errorf("container securityContext = %+v, want the restricted profile", sc)
	}
	if c.Resources.Requests == nil {
		t.Errorf("no resource requests")
	}
}

// The manager waits for the API server at start (kubeAPI.waitTimeoutSeconds); its startup probe
// must allow that long, or the liveness probe would restart it before the wait ends.
func TestAPIServerWaitFitsTheStartupProbe(t *testing.T) {
	cases := []struct {
		name, values, wantArg string
		wait                  int32
	}{
		{"the default waits two minutes", "", "--api-server-wait-timeout=120s", 120},
		{"no wait still gives the manager time to start", "kubeAPI:\n  waitTimeoutSeconds: 0\n", "--api-server-wait-timeout=0s", 0},
		{"a wait that is no multiple of the probe period is rounded up", "kubeAPI:\n  waitTimeoutSeconds: 301\n", "--api-server-wait-timeout=301s", 301},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := manager(t, mustRenderAll(t, tc.values))
			if !hasArg(c.Args, tc.wantArg) {
				t.Errorf("args %q lack %s", c.Args, tc.wantArg)
			}
			p := c.StartupProbe
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "health" {
				t.Fatalf("startupProbe = %+v, want /healthz on the health port", p)
			}
			budget := p.PeriodSeconds * p.FailureThreshold
			if budget < tc.wait+30 || budget > tc.wait+40 {
				t.Errorf("the startup probe allows %d s, want the wait (%d s) plus 30 to 40 s", budget, tc.wait)
			}
		})
	}
	wantRenderError(t, "kubeAPI:\n  waitTimeoutSeconds: -1\n", "waitTimeoutSeconds")
}
