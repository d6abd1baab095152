package chart

import (
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// HA and security defaults (issue 11 §3): metrics over HTTPS for authorized tokens only, an
// optional NetworkPolicy, two replicas with a PDB, leader election timings.

// metricsClusterRBAC are the cluster-wide RBAC objects of the secure metrics endpoint, sorted.
var metricsClusterRBAC = []string{
	"ClusterRole/platform-operators-metrics-auth",
	"ClusterRole/platform-operators-metrics-reader",
	"ClusterRoleBinding/platform-operators-metrics-auth",
}

// clusterRBACNames returns "Kind/name" of the rendered ClusterRoles and ClusterRoleBindings, sorted.
func clusterRBACNames(r rendered) []string {
	var names []string
	for _, cr := range objectsOf[*rbacv1.ClusterRole](r) {
		names = append(names, "ClusterRole/"+cr.Name)
	}
	for _, b := range objectsOf[*rbacv1.ClusterRoleBinding](r) {
		names = append(names, "ClusterRoleBinding/"+b.Name)
	}
	slices.Sort(names)
	return names
}

func TestSecureMetrics(t *testing.T) {
	t.Run("by default the manager serves HTTPS metrics and may ask the API server who is calling and whether they may read", func(t *testing.T) {
		r := renderValues(t, "")
		if !hasArg(manager(t, r).Args, "--metrics-secure=true") {
			t.Errorf("args = %q, want --metrics-secure=true", manager(t, r).Args)
		}
		auth := onlyNamed[*rbacv1.ClusterRole](t, r, "platform-operators-metrics-auth")
		wantAuth := []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		}
		if !reflect.DeepEqual(auth.Rules, wantAuth) {
			t.Errorf("metrics-auth rules = %+v, want %+v", auth.Rules, wantAuth)
		}
		b := onlyNamed[*rbacv1.ClusterRoleBinding](t, r, "platform-operators-metrics-auth")
		wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "platform-operators", Namespace: namespace}}
		if b.RoleRef.Name != auth.Name || b.RoleRef.Kind != "ClusterRole" || !reflect.DeepEqual(b.Subjects, wantSubject) {
			t.Errorf("metrics-auth binding = %+v %+v, want the manager's ServiceAccount bound to %s", b.RoleRef, b.Subjects, auth.Name)
		}
		// The rule controller-runtime's filter asks about (nonResourceURL /metrics, verb get); the
		// envtest in controller/cmd/manager creates the same rule and reads with it.
		reader := onlyNamed[*rbacv1.ClusterRole](t, r, "platform-operators-metrics-reader")
		wantReader := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
		if !reflect.DeepEqual(reader.Rules, wantReader) {
			t.Errorf("metrics-reader rules = %+v, want %+v", reader.Rules, wantReader)
		}
		if n := len(named[*rbacv1.ClusterRoleBinding](r, "platform-operators-metrics-reader")); n != 0 {
			t.Errorf("a metrics-reader binding without a ServiceMonitor scraper: %d", n)
		}
		if !strings.Contains(r.notes, "https://platform-operators-metrics.platform-operators-system.svc:8080/metrics") || !strings.Contains(r.notes, "--clusterrole=platform-operators-metrics-reader") {
			t.Errorf("NOTES.txt does not tell how to read the HTTPS metrics with a token:\n%s", r.notes)
		}
		port := only[*corev1.Service](t, r).Spec.Ports[0]
		if port.Name != "metrics" || ptr.Deref(port.AppProtocol, "") != "https" {
			t.Errorf("Service port = %+v, want metrics with appProtocol https", port)
		}
	})
	t.Run("plain HTTP metrics, for development, render no metrics RBAC and no https", func(t *testing.T) {
		r := renderValues(t, "metrics:\n  secure: false\n")
		if !hasArg(manager(t, r).Args, "--metrics-secure=false") {
			t.Errorf("args = %q, want --metrics-secure=false", manager(t, r).Args)
		}
		for _, n := range clusterRBACNames(r) {
			if strings.Contains(n, "metrics") {
				t.Errorf("rendered %s with plain HTTP metrics", n)
			}
		}
		if !strings.Contains(r.notes, "http://platform-operators-metrics.platform-operators-system.svc:8080/metrics, to anyone") {
			t.Errorf("NOTES.txt does not say the metrics are plain HTTP to anyone:\n%s", r.notes)
		}
		if p := only[*corev1.Service](t, r).Spec.Ports[0]; p.AppProtocol != nil {
			t.Errorf("Service port = %+v, want no appProtocol", p)
		}
	})
	t.Run("metrics off render no metrics RBAC", func(t *testing.T) {
		for _, n := range clusterRBACNames(renderValues(t, "metrics:\n  enabled: false\n")) {
			if strings.Contains(n, "metrics") {
				t.Errorf("rendered %s with metrics off", n)
			}
		}
	})
	t.Run("the ServiceMonitor scrapes HTTPS with Prometheus' token, and the chart binds its scraper to metrics-reader", func(t *testing.T) {
		r := mustRenderAll(t, "serviceMonitor:\n  enabled: true\n  scraper:\n    name: prometheus-k8s\n    namespace: monitoring\n", serviceMonitorAPI)
		var endpoint map[string]any
		for _, u := range objectsOf[*unstructured.Unstructured](r) {
			if u.GetKind() == "ServiceMonitor" {
				eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
				endpoint = eps[0].(map[string]any)
			}
		}
		want := map[string]any{
			"port": "metrics", "path": "/metrics", "scheme": "https",
			"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
			"tlsConfig":       map[string]any{"insecureSkipVerify": true},
		}
		if !reflect.DeepEqual(endpoint, want) {
			t.Errorf("ServiceMonitor endpoint = %v, want %v", endpoint, want)
		}
		b := onlyNamed[*rbacv1.ClusterRoleBinding](t, r, "platform-operators-metrics-reader")
		wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}}
		if b.RoleRef.Name != "platform-operators-metrics-reader" || !reflect.DeepEqual(b.Subjects, wantSubject) {
			t.Errorf("metrics-reader binding = %+v %+v, want prometheus-k8s in monitoring", b.RoleRef, b.Subjects)
		}
	})
	t.Run("a CA instead of insecureSkipVerify", func(t *testing.T) {
		r := mustRenderAll(t, "serviceMonitor:\n  enabled: true\n  tlsConfig:\n    insecureSkipVerify: null\n    serverName: m.example\n    ca:\n      secret:\n        name: metrics-ca\n        key: ca.crt\n", serviceMonitorAPI)
		for _, u := range objectsOf[*unstructured.Unstructured](r) {
			if u.GetKind() != "ServiceMonitor" {
				continue
			}
			eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
			tls := eps[0].(map[string]any)["tlsConfig"].(map[string]any)
			if _, skip := tls["insecureSkipVerify"]; skip || tls["serverName"] != "m.example" || tls["ca"] == nil {
				t.Errorf("tlsConfig = %v, want the CA and server name without insecureSkipVerify", tls)
			}
		}
	})
	t.Run("a scraper without its namespace is refused", func(t *testing.T) {
		wantRenderError(t, "serviceMonitor:\n  enabled: true\n  scraper:\n    name: prometheus-k8s\n", "serviceMonitor.scraper.namespace is required")
	})
}

func TestNetworkPolicy(t *testing.T) {
	if n := len(objectsOf[*networkingv1.NetworkPolicy](renderValues(t, ""))); n != 0 {
		t.Fatalf("a NetworkPolicy by default: %d", n)
	}
	tcp := ptr.To(corev1.ProtocolTCP)
	port := func(p intstr.IntOrString) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: &p, Protocol: tcp}
	}
	t.Run("enabled: only the metrics and health ports in, only the API server ports out", func(t *testing.T) {
		r := renderValues(t, "networkPolicy:\n  enabled: true\n")
		np := only[*networkingv1.NetworkPolicy](t, r)
		svc := only[*corev1.Service](t, r)
		if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, svc.Spec.Selector) {
			t.Errorf("podSelector = %v, want the manager's pods (%v)", np.Spec.PodSelector.MatchLabels, svc.Spec.Selector)
		}
		if want := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}; !reflect.DeepEqual(np.Spec.PolicyTypes, want) {
			t.Errorf("policyTypes = %v, want %v", np.Spec.PolicyTypes, want)
		}
		wantIngress := []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromString("metrics")), port(intstr.FromString("health"))}}}
		if !reflect.DeepEqual(np.Spec.Ingress, wantIngress) {
			t.Errorf("ingress = %+v, want %+v", np.Spec.Ingress, wantIngress)
		}
		// The named ports exist on the manager container.
		for _, name := range []string{"metrics", "health"} {
			if !slices.ContainsFunc(manager(t, r).Ports, func(p corev1.ContainerPort) bool { return p.Name == name }) {
				t.Errorf("the manager container has no port %q", name)
			}
		}
		wantEgress := []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromInt32(443)), port(intstr.FromInt32(6443))}}}
		if !reflect.DeepEqual(np.Spec.Egress, wantEgress) {
			t.Errorf("egress = %+v, want %+v", np.Spec.Egress, wantEgress)
		}
	})
	t.Run("API server CIDRs, ingress peers and extra egress are taken as given", func(t *testing.T) {
		np := only[*networkingv1.NetworkPolicy](t, renderValues(t, `networkPolicy:
  enabled: true
  apiServer:
    cidrs: [10.0.0.10/32, 10.0.0.11/32]
    ports: [6443]
  ingressFrom:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: monitoring
      podSelector:
        matchLabels:
          app.kubernetes.io/name: prometheus
  extraEgress:
    - to:
        - ipBlock:
            cidr: 10.1.0.0/16
      ports:
        - port: 3128
`))
		if len(np.Spec.Egress) != 2 {
			t.Fatalf("egress = %+v, want the API server rule and the extra one", np.Spec.Egress)
		}
		api := np.Spec.Egress[0]
		if len(api.To) != 2 || api.To[0].IPBlock.CIDR != "10.0.0.10/32" || api.To[1].IPBlock.CIDR != "10.0.0.11/32" || len(api.Ports) != 1 || api.Ports[0].Port.IntValue() != 6443 {
			t.Errorf("API server egress = %+v", api)
		}
		if extra := np.Spec.Egress[1]; extra.To[0].IPBlock.CIDR != "10.1.0.0/16" || extra.Ports[0].Port.IntValue() != 3128 {
			t.Errorf("extra egress = %+v", extra)
		}
		from := np.Spec.Ingress[0].From
		if len(from) != 1 || from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" || from[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
			t.Errorf("ingress from = %+v, want the one peer given", from)
		}
	})
	t.Run("with metrics off only the health port is open", func(t *testing.T) {
		np := only[*networkingv1.NetworkPolicy](t, renderValues(t, "networkPolicy:\n  enabled: true\nmetrics:\n  enabled: false\n"))
		if want := []networkingv1.NetworkPolicyPort{port(intstr.FromString("health"))}; !reflect.DeepEqual(np.Spec.Ingress[0].Ports, want) {
			t.Errorf("ingress ports = %+v, want health only", np.Spec.Ingress[0].Ports)
		}
	})
	t.Run("a CIDR that is not one is refused by the schema", func(t *testing.T) {
		wantRenderError(t, "networkPolicy:\n  enabled: true\n  apiServer:\n    cidrs: [kubernetes.default]\n", "/networkPolicy/apiServer/cidrs/0")
	})
}

func TestLeaderElectionTimings(t *testing.T) {
	r := renderValues(t, "leaderElection:\n  leaseDuration: 60s\n  renewDeadline: 40s\n  retryPeriod: 5s\n")
	args := manager(t, r).Args
	for _, want := range []string{"--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s", "--leader-elect-retry-period=5s"} {
		if !hasArg(args, want) {
			t.Errorf("args = %q, want %s", args, want)
		}
	}
	wantRenderError(t, "leaderElection:\n  leaseDuration: 15\n", "/leaderElection/leaseDuration")
}

// Issue 29: the kubelet kills the manager terminationGracePeriodSeconds after SIGTERM; the
// manager releases the leader Lease only after its controllers drained, for at most
// --graceful-shutdown-timeout. The drain must end with a margin before the kill, or a slow drain
// takes the release with it and a standby waits out the whole lease.
func TestShutdownTimeoutEndsBeforeTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		values      string
		grace, want int
	}{
		{"", 45, 30},
		{"terminationGracePeriodSeconds: 120\n", 120, 105},
		{"terminationGracePeriodSeconds: 30\n", 30, 20},
		{"terminationGracePeriodSeconds: 6\n", 6, 4},
	} {
		r := renderValues(t, tc.values)
		grace := only[*appsv1.Deployment](t, r).Spec.Template.Spec.TerminationGracePeriodSeconds
		arg := argWithPrefix(manager(t, r).Args, "--graceful-shutdown-timeout=")
		timeout, err := time.ParseDuration(strings.TrimPrefix(arg, "--graceful-shutdown-timeout="))
		if err != nil || grace == nil || *grace != int64(tc.grace) || timeout != time.Duration(tc.want)*time.Second {
			t.Errorf("values %q: grace %v, %q (%v); want grace %d s and --graceful-shutdown-timeout=%ds", tc.values, grace, arg, err, tc.grace, tc.want)
			continue
		}
		if margin := time.Duration(*grace)*time.Second - timeout; margin < time.Duration(*grace)*time.Second/3 && margin < 15*time.Second {
			t.Errorf("values %q: only %v between the end of the drain and the kill", tc.values, margin)
		}
	}
}

// TestNetworkPolicyExamplesInTheDocs renders every `# networkPolicy example:` block of
// docs/chart.md, so the documented layouts are values the chart takes and turn into the peers
// they say.
func TestNetworkPolicyExamplesInTheDocs(t *testing.T) {
	doc := mustReadFile(t, filepath.Join("..", "..", "docs", "chart.md"))
	blocks := regexp.MustCompile("(?s)```yaml\n(# networkPolicy example: [^\n]*)\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/chart.md has %d networkPolicy examples, want the kube-prometheus-stack and same-namespace ones", len(blocks))
	}
	for _, b := range blocks {
		t.Run(strings.TrimPrefix(b[1], "# networkPolicy example: "), func(t *testing.T) {
			np := only[*networkingv1.NetworkPolicy](t, renderValues(t, b[2]))
			if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) == 0 {
				t.Fatalf("ingress = %+v, want the example's peers", np.Spec.Ingress)
			}
			sameNamespace := false
			for _, p := range np.Spec.Ingress[0].From {
				if p.NamespaceSelector == nil && p.PodSelector != nil && len(p.PodSelector.MatchLabels) == 0 {
					sameNamespace = true
				}
			}
			if !sameNamespace {
				t.Errorf("no peer lets the helm test pod of the release namespace in: %+v", np.Spec.Ingress[0].From)
			}
		})
	}
}
