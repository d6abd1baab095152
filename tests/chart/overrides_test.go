package chart

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podOf is the manager Deployment's pod template.
func podOf(t *testing.T, r rendered) corev1.PodSpec {
	t.Helper()
	return only[*appsv1.Deployment](t, r).Spec.Template.Spec
}

// TestOverrides renders the chart with each production override and checks it reaches the
// objects it should, and only as documented.
func TestOverrides(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values string
		check  func(t *testing.T, r rendered)
	}{
		{"the defaults stay restricted", "", func(t *testing.T, r rendered) {
			p := podOf(t, r)
			c := p.Containers[0]
			if sc := p.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *sc.RunAsUser != 65532 {
				t.Errorf("pod securityContext = %+v", p.SecurityContext)
			}
			if sc := c.SecurityContext; sc == nil || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("container securityContext = %+v", c.SecurityContext)
			}
			if p.HostNetwork || p.DNSPolicy != "" || !*p.AutomountServiceAccountToken || len(p.Volumes) != 0 {
				t.Errorf("hostNetwork %t, dnsPolicy %q, automount %v, volumes %v; want off, default, true, none", p.HostNetwork, p.DNSPolicy, *p.AutomountServiceAccountToken, p.Volumes)
			}
			d := only[*appsv1.Deployment](t, r)
			if *d.Spec.RevisionHistoryLimit != 10 || d.Spec.Strategy.Type != "" {
				t.Errorf("revisionHistoryLimit %d, strategy %+v; want 10 and Kubernetes' default", *d.Spec.RevisionHistoryLimit, d.Spec.Strategy)
			}
			if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.StartupProbe.HTTPGet.Path != "/healthz" {
				t.Errorf("probe paths = %+v / %+v / %+v", c.LivenessProbe, c.ReadinessProbe, c.StartupProbe)
			}
			// kube-controller-manager's and cert-manager's timings: a slow manager on a busy node is
			// not restarted (issue 46): 8 failures 10 s apart, each allowed 15 s.
			if l := c.LivenessProbe; l.PeriodSeconds != 10 || l.TimeoutSeconds != 15 || l.FailureThreshold != 8 || l.InitialDelaySeconds != 0 {
				t.Errorf("liveness = %+v, want period 10, timeout 15, failureThreshold 8, no initial delay", l)
			}
			if r := c.ReadinessProbe; r.PeriodSeconds != 10 || r.TimeoutSeconds != 15 || r.FailureThreshold != 3 {
				t.Errorf("readiness = %+v, want period 10, timeout 15, failureThreshold 3", r)
			}
			if s := c.StartupProbe; s.TimeoutSeconds != 15 || s.PeriodSeconds != 5 || s.FailureThreshold != 30 {
				t.Errorf("startup = %+v, want the liveness timeout (15), period 5, failureThreshold 30 (120 s wait + 30 s)", s)
			}
		}},
		{"security contexts merge key by key and a null removes a key", "podSecurityContext:\n  runAsUser: 1000\n  fsGroup: null\nsecurityContext:\n  readOnlyRootFilesystem: false\n", func(t *testing.T, r rendered) {
			p := podOf(t, r)
			if *p.SecurityContext.RunAsUser != 1000 || p.SecurityContext.FSGroup != nil || !*p.SecurityContext.RunAsNonRoot {
				t.Errorf("pod securityContext = %+v, want runAsUser 1000, no fsGroup, runAsNonRoot kept", p.SecurityContext)
			}
			if sc := p.Containers[0].SecurityContext; *sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
				t.Errorf("container securityContext = %+v, want readOnlyRootFilesystem false, the rest kept", sc)
			}
		}},
		{"global.imagePullSecrets reach every pod, before imagePullSecrets, without duplicates", "global:\n  imagePullSecrets: [mirror, {name: harbor}]\nimagePullSecrets: [{name: harbor}, {name: local}]\n", func(t *testing.T, r rendered) {
			want := "mirror,harbor,local"
			if got := secretNames(podOf(t, r).ImagePullSecrets); got != want {
				t.Errorf("manager imagePullSecrets = %s, want %s", got, want)
			}
			for _, h := range r.hooks {
				if p, ok := h.(*corev1.Pod); ok {
					if got := secretNames(p.Spec.ImagePullSecrets); got != want {
						t.Errorf("test pod %s imagePullSecrets = %s, want %s", p.Name, got, want)
					}
				}
			}
		}},
		{"image.digest wins over the tag", "image:\n  registry: harbor.example.com/platform\n  tag: \"9.9.9\"\n  digest: sha256:" + strings.Repeat("a", 64) + "\n", func(t *testing.T, r rendered) {
			if got := podOf(t, r).Containers[0].Image; got != "harbor.example.com/platform/platform-operators/manager@sha256:"+strings.Repeat("a", 64) {
				t.Errorf("image = %s", got)
			}
		}},
		{"extra volumes, mounts, env and args reach the manager", "extraVolumes: [{name: ca, configMap: {name: corporate-ca}}]\nextraVolumeMounts: [{name: ca, mountPath: /etc/ssl/corporate, readOnly: true}]\nextraEnv: [{name: HTTPS_PROXY, value: http://proxy:3128}]\nextraArgs: [--log-level=debug]\n", func(t *testing.T, r rendered) {
			p := podOf(t, r)
			c := p.Containers[0]
			if len(p.Volumes) != 1 || p.Volumes[0].ConfigMap.Name != "corporate-ca" || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/ssl/corporate" {
				t.Errorf("volumes %+v, mounts %+v", p.Volumes, c.VolumeMounts)
			}
			if len(c.Env) != 1 || c.Env[0].Value != "http://proxy:3128" || c.Args[len(c.Args)-1] != "--log-level=debug" {
				t.Errorf("env %+v, last arg %s", c.Env, c.Args[len(c.Args)-1])
			}
		}},
		{"deployment strategy, history, priority, DNS and probe timings", "deploymentStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}\nrevisionHistoryLimit: 3\npriorityClassName: system-cluster-critical\ndnsPolicy: None\ndnsConfig: {nameservers: [10.0.0.10]}\nlivenessProbe: {periodSeconds: 7, failureThreshold: 9}\nreadinessProbe: {timeoutSeconds: 4}\nterminationGracePeriodSeconds: 60\n", func(t *testing.T, r rendered) {
			d := only[*appsv1.Deployment](t, r)
			if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 || *d.Spec.RevisionHistoryLimit != 3 {
				t.Errorf("strategy %+v, history %d", d.Spec.Strategy, *d.Spec.RevisionHistoryLimit)
			}
			p := d.Spec.Template.Spec
			if p.PriorityClassName != "system-cluster-critical" || p.DNSPolicy != corev1.DNSNone || p.DNSConfig.Nameservers[0] != "10.0.0.10" || *p.TerminationGracePeriodSeconds != 60 {
				t.Errorf("priority %q, dnsPolicy %q, dnsConfig %+v, grace %d", p.PriorityClassName, p.DNSPolicy, p.DNSConfig, *p.TerminationGracePeriodSeconds)
			}
			c := p.Containers[0]
			if c.LivenessProbe.PeriodSeconds != 7 || c.LivenessProbe.FailureThreshold != 9 || c.LivenessProbe.TimeoutSeconds != 15 || c.ReadinessProbe.TimeoutSeconds != 4 || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.StartupProbe.TimeoutSeconds != 15 {
				t.Errorf("liveness %+v, readiness %+v", c.LivenessProbe, c.ReadinessProbe)
			}
		}},
		{"the startup probe takes the liveness probe's timeout", "livenessProbe: {timeoutSeconds: 20}\n", func(t *testing.T, r rendered) {
			if c := podOf(t, r).Containers[0]; c.StartupProbe.TimeoutSeconds != 20 || c.LivenessProbe.TimeoutSeconds != 20 {
				t.Errorf("startup %+v, liveness %+v; want both timeoutSeconds 20", c.StartupProbe, c.LivenessProbe)
			}
		}},
		{"a null liveness probe gets the chart's timings back (addedValues), the startup probe's timeout with them", "livenessProbe: null\n", func(t *testing.T, r rendered) {
			if c := podOf(t, r).Containers[0]; c.StartupProbe.TimeoutSeconds != 15 || c.LivenessProbe.TimeoutSeconds != 15 || c.LivenessProbe.FailureThreshold != 8 {
				t.Errorf("startup %+v, liveness %+v; want the defaults (timeout 15, 8 failures)", c.StartupProbe, c.LivenessProbe)
			}
		}},
		{"hostNetwork switches the DNS policy to the cluster's", "hostNetwork: true\nreplicaCount: 1\n", func(t *testing.T, r rendered) {
			if p := podOf(t, r); !p.HostNetwork || p.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
				t.Errorf("hostNetwork %t, dnsPolicy %q", p.HostNetwork, p.DNSPolicy)
			}
		}},
		{"scheduling constraints reach the pod", "nodeSelector: {pool: system}\ntolerations: [{key: dedicated, operator: Exists}]\naffinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}\ntopologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {x: z}}}]\nresources: {limits: {memory: 256Mi}}\npodLabels: {team: platform}\npodAnnotations: {a: b}\n", func(t *testing.T, r rendered) {
			d := only[*appsv1.Deployment](t, r)
			p := d.Spec.Template.Spec
			if p.NodeSelector["pool"] != "system" || p.Tolerations[0].Key != "dedicated" || p.Affinity.NodeAffinity == nil || p.TopologySpreadConstraints[0].TopologyKey != "zone" || p.Containers[0].Resources.Limits.Memory().String() != "256Mi" {
				t.Errorf("pod spec = %+v", p)
			}
			if d.Spec.Template.Labels["team"] != "platform" || d.Spec.Template.Annotations["a"] != "b" {
				t.Errorf("pod labels %v, annotations %v", d.Spec.Template.Labels, d.Spec.Template.Annotations)
			}
		}},
		{"automount off: the chart mounts the token itself", "serviceAccount:\n  automount: false\n  annotations: {eks.amazonaws.com/role-arn: arn}\n", func(t *testing.T, r rendered) {
			sa := only[*corev1.ServiceAccount](t, r)
			if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken || sa.Annotations["eks.amazonaws.com/role-arn"] != "arn" {
				t.Errorf("ServiceAccount = %+v", sa)
			}
			p := podOf(t, r)
			if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
				t.Errorf("pod automountServiceAccountToken = %v, want false", p.AutomountServiceAccountToken)
			}
			if len(p.Volumes) != 1 || p.Volumes[0].Projected == nil || len(p.Volumes[0].Projected.Sources) != 3 || p.Volumes[0].Projected.Sources[0].ServiceAccountToken.Path != "token" {
				t.Fatalf("volumes = %+v, want the projected kube-api-access volume", p.Volumes)
			}
			m := p.Containers[0].VolumeMounts
			if len(m) != 1 || m[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m[0].ReadOnly {
				t.Errorf("mounts = %+v", m)
			}
		}},
		{"serviceAccount.create false uses the named account", "serviceAccount:\n  create: false\n  name: platform-sa\n", func(t *testing.T, r rendered) {
			if n := len(objectsOf[*corev1.ServiceAccount](r)); n != 0 {
				t.Errorf("%d ServiceAccounts rendered, want 0", n)
			}
			if got := podOf(t, r).ServiceAccountName; got != "platform-sa" {
				t.Errorf("serviceAccountName = %s", got)
			}
		}},
		{"namespaceOverride moves every namespaced object", "namespaceOverride: platform\n", func(t *testing.T, r rendered) {
			n := 0
			for _, o := range append(r.objects, r.hooks...) {
				m, _ := meta.Accessor(o)
				if m.GetNamespace() == "" {
					continue
				}
				n++
				if m.GetNamespace() != "platform" && m.GetNamespace() != "secretsync" {
					t.Errorf("%T %s is in %s, want platform", o, m.GetName(), m.GetNamespace())
				}
			}
			if n < 5 {
				t.Errorf("only %d namespaced objects", n)
			}
			c := podOf(t, r).Containers[0]
			if !hasArg(c.Args, "--leader-election-namespace=platform") {
				t.Errorf("args %v lack the overridden leader election namespace", c.Args)
			}
		}},
		{"commonLabels reach every object, hooks and CRDs included", "commonLabels: {team: platform, cost-center: \"42\"}\n", func(t *testing.T, r rendered) {
			for _, o := range append(r.objects, r.hooks...) {
				m, _ := meta.Accessor(o)
				if m.GetLabels()["team"] != "platform" || m.GetLabels()["cost-center"] != "42" {
					t.Errorf("%T %s labels = %v", o, m.GetName(), m.GetLabels())
				}
			}
			if d := only[*appsv1.Deployment](t, r); d.Spec.Template.Labels["team"] != "platform" || d.Spec.Selector.MatchLabels["team"] != "" {
				t.Errorf("pod labels %v, selector %v: want the label on pods, not in the immutable selector", d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)
			}
		}},
		{"extraObjects are rendered as templates, maps and strings", "extraObjects:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: \"{{ .Release.Name }}-extra\"}\n    data: {ns: \"{{ .Release.Namespace }}\"}\n  - |\n    apiVersion: example.com/v1\n    kind: Widget\n    metadata:\n      name: {{ .Release.Name }}-widget\n", func(t *testing.T, r rendered) {
			var cm *corev1.ConfigMap
			for _, c := range objectsOf[*corev1.ConfigMap](r) {
				if c.Name == releaseName+"-extra" {
					cm = c
				}
			}
			if cm == nil || cm.Data["ns"] != namespace {
				t.Errorf("extra ConfigMap = %+v", cm)
			}
			found := false
			for _, u := range objectsOf[*unstructured.Unstructured](r) {
				found = found || (u.GetKind() == "Widget" && u.GetName() == releaseName+"-widget")
			}
			if !found {
				t.Error("the string extraObject was not rendered")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := withFile(loadChart(t), "files/crds/ops.platform-operators.io_ats.yaml", crdFile)
			r, err := render(t, ch, releaseName, parseValues(t, tc.values))
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			tc.check(t, r)
		})
	}
}

func TestOverridesRefuseWhatWouldBreak(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"commonLabels may not take the chart's selector labels", "commonLabels: {app.kubernetes.io/name: x}\n", "commonLabels must not set app.kubernetes.io/name"},
		{"a probe may not replace its handler", "livenessProbe: {httpGet: {path: /}}\n", "httpGet"},
		{"a misspelt probe field", "readinessProbe: {periodSecond: 3}\n", "periodSecond"},
		{"an unknown DNS policy", "dnsPolicy: Cluster\n", "/dnsPolicy"},
		{"a namespaceOverride that is not a namespace name", "namespaceOverride: Platform_NS\n", "/namespaceOverride"},
		{"a strategy type typo", "deploymentStrategy: {type: Rolling}\n", "/deploymentStrategy/type"},
		{"a global pull secret without a name", "global: {imagePullSecrets: [{}]}\n", "imagePullSecrets"},
		{"a volume mount without a path", "extraVolumeMounts: [{name: x}]\n", "mountPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, loadChart(t), releaseName, parseValues(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func secretNames(refs []corev1.LocalObjectReference) string {
	var names []string
	for _, r := range refs {
		names = append(names, r.Name)
	}
	return strings.Join(names, ",")
}

// TestTenantsSample renders samples/tenants-values.yaml: each tenant gets its namespace,
// ServiceAccount, Role and RoleBinding, and team-b, which asks for it, a token Secret.
func TestTenantsSample(t *testing.T) {
	b := mustReadFile(t, "../../samples/tenants-values.yaml")
	r, err := render(t, loadChart(t), releaseName, parseValues(t, b))
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		found := map[string]bool{}
		for _, o := range r.objects {
			m, _ := meta.Accessor(o)
			if m.GetNamespace() == ns || (m.GetName() == ns && m.GetNamespace() == "") {
				found[fmt.Sprintf("%T", o)] = true
			}
		}
		for _, kind := range []string{"*v1.Namespace", "*v1.ServiceAccount", "*v1.Role", "*v1.RoleBinding"} {
			if !found[kind] {
				t.Errorf("tenant %s: no %s rendered (got %v)", ns, kind, found)
			}
		}
		if want := ns == "team-b"; found["*v1.Secret"] != want {
			t.Errorf("tenant %s: token Secret rendered = %t, want %t", ns, found["*v1.Secret"], want)
		}
	}
}
