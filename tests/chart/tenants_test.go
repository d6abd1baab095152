package chart

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/platform-operators/platform-operators/controller/permissions"
)

// clusterScopedResources are the resources of files/rbac/role.yaml a Role cannot grant: the
// core ones the manager uses and every cluster-scoped CRD of the chart (with subresources).
func clusterScopedResources(t *testing.T) []string {
	t.Helper()
	out := []string{"namespaces"}
	_, clusterScoped := crdKinds(t)
	for _, plural := range clusterScoped {
		out = append(out, plural, plural+"/status", plural+"/finalizers")
	}
	return out
}

// grants reports whether rules allow verb on group/resource.
func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*"))
	})
}

func byNamespace[T interface{ GetNamespace() string }](objs []T) map[string]T {
	out := map[string]T{}
	for _, o := range objs {
		out[o.GetNamespace()] = o
	}
	return out
}

const namespacedValues = "rbac:\n  scope: namespaced\n  namespaces: [team-a, team-b]\nsecretSync:\n  enabled: false\n"

// namespacedSecretSyncValues is namespaced mode with SecretSync on (the chart's default).
const namespacedSecretSyncValues = "rbac:\n  scope: namespaced\n  namespaces: [team-a, team-b]\n"

func TestTenants(t *testing.T) {
	cases := []struct {
		name   string
		values string
		check  func(t *testing.T, r rendered)
	}{
		{
			name:   "no tenants by default",
			values: "",
			check: func(t *testing.T, r rendered) {
				for _, s := range objectsOf[*corev1.Secret](r) {
					if s.Type == corev1.SecretTypeServiceAccountToken {
						t.Errorf("token Secret %s/%s rendered without tenants", s.Namespace, s.Name)
					}
				}
				if n := len(objectsOf[*corev1.ServiceAccount](r)); n != 1 {
					t.Errorf("%d ServiceAccounts, want only the manager's", n)
				}
			},
		},
		{
			name:   "a tenant given only its namespace gets the recipe's objects",
			values: "tenants:\n  - namespace: ask\n",
			check: func(t *testing.T, r rendered) {
				nss := named[*corev1.Namespace](r, "ask")
				if len(nss) != 1 {
					t.Fatalf("rendered %d Namespaces ask, want 1", len(nss))
				}
				ns := nss[0]
				if ns.Annotations["helm.sh/resource-policy"] != "keep" {
					t.Errorf("tenant Namespace annotations = %v, want it kept on uninstall", ns.Annotations)
				}
				if ns.Labels["platform-operators.io/tenant"] != "ask" {
					t.Errorf("tenant Namespace labels = %v, want platform-operators.io/tenant=ask", ns.Labels)
				}
				for mode, level := range map[string]string{"enforce": "restricted", "warn": "restricted", "audit": "restricted"} {
					key := "pod-security.kubernetes.io/" + mode
					if ns.Labels[key] != level || ns.Labels[key+"-version"] != "latest" {
						t.Errorf("tenant Namespace labels = %v, want %s=%s at version latest", ns.Labels, key, level)
					}
				}
				sa := byNamespace(objectsOf[*corev1.ServiceAccount](r))["ask"]
				if sa == nil || sa.Name != "ask-sa" {
					t.Fatalf("ServiceAccount in ask = %+v, want ask-sa", sa)
				}
				role := byNamespace(objectsOf[*rbacv1.Role](r))["ask"]
				if role == nil || role.Name != "ask-sa" {
					t.Fatalf("Role in ask = %+v, want ask-sa", role)
				}
				for _, want := range [][3]string{{"", "pods", "list"}, {"", "pods/log", "get"}, {"apps", "deployments", "create"},
					{"batch", "jobs", "delete"}, {"ops.platform-operators.io", "ats", "create"}, {"ops.platform-operators.io", "scheduledjobs", "update"}} {
					if !grants(role.Rules, want[0], want[1], want[2]) {
						t.Errorf("the default tenant Role does not grant %s %s.%s", want[2], want[1], want[0])
					}
				}
				for _, verb := range []string{"get", "list", "create", "update"} {
					if grants(role.Rules, "", "secrets", verb) {
						t.Errorf("the default tenant Role grants %s secrets", verb)
					}
					if grants(role.Rules, "ops.platform-operators.io", "secretsyncs", verb) {
						t.Errorf("the default tenant Role grants %s secretsyncs", verb)
					}
				}
				rb := byNamespace(objectsOf[*rbacv1.RoleBinding](r))["ask"]
				wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ask-sa", Namespace: "ask"}}
				if rb == nil || rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ask-sa"}) || !reflect.DeepEqual(rb.Subjects, wantSubjects) {
					t.Fatalf("RoleBinding in ask = %+v, want ask-sa bound to Role ask-sa", rb)
				}
				// A token Secret never expires: only on request (tokenSecret), below.
				if secret := byNamespace(objectsOf[*corev1.Secret](r))["ask"]; secret != nil {
					t.Errorf("rendered Secret %s in ask without tokenSecret: a token that never expires is opt-in", secret.Name)
				}
			},
		},
		{
			name:   "a tenant asking for a token Secret gets one bound to its ServiceAccount",
			values: "tenants:\n  - namespace: ask\n    tokenSecret: true\n",
			check: func(t *testing.T, r rendered) {
				secret := byNamespace(objectsOf[*corev1.Secret](r))["ask"]
				if secret == nil || secret.Name != "ask-sa-token" || secret.Type != corev1.SecretTypeServiceAccountToken ||
					secret.Annotations[corev1.ServiceAccountNameKey] != "ask-sa" {
					t.Fatalf("token Secret in ask = %+v, want ask-sa-token of type %s annotated for ask-sa", secret, corev1.SecretTypeServiceAccountToken)
				}
			},
		},
		{
			name: "Pod Security levels are configurable per chart and per tenant, and an empty level leaves its label out",
			values: `tenantPodSecurity:
  enforce: baseline
  version: v1.36
tenants:
  - namespace: a
  - namespace: b
    podSecurity:
      enforce: privileged
      audit: ""
`,
			check: func(t *testing.T, r rendered) {
				want := map[string]map[string]string{
					"a": {"enforce": "baseline", "enforce-version": "v1.36", "warn": "restricted", "warn-version": "v1.36", "audit": "restricted", "audit-version": "v1.36"},
					"b": {"enforce": "privileged", "enforce-version": "v1.36", "warn": "restricted", "warn-version": "v1.36"},
				}
				for name, labels := range want {
					ns := named[*corev1.Namespace](r, name)
					if len(ns) != 1 {
						t.Fatalf("rendered %d Namespaces %s", len(ns), name)
					}
					got := map[string]string{}
					for k, v := range ns[0].Labels {
						if rest, ok := strings.CutPrefix(k, "pod-security.kubernetes.io/"); ok {
							got[rest] = v
						}
					}
					if !reflect.DeepEqual(got, labels) {
						t.Errorf("Namespace %s Pod Security labels = %v, want %v", name, got, labels)
					}
				}
			},
		},
		{
			name: "a tenant can bring its namespace, ServiceAccount name, rules and labels and skip the token Secret",
			values: `tenants:
  - namespace: team-x
    createNamespace: false
    serviceAccount: deployer
    tokenSecret: false
    labels:
      team: x
    rules:
      - apiGroups: [""]
        resources: [configmaps]
        verbs: [get]
`,
			check: func(t *testing.T, r rendered) {
				if ns := named[*corev1.Namespace](r, "team-x"); len(ns) != 0 {
					t.Errorf("rendered Namespace team-x with createNamespace=false")
				}
				if s := byNamespace(objectsOf[*corev1.Secret](r))["team-x"]; s != nil {
					t.Errorf("rendered Secret %s with tokenSecret=false", s.Name)
				}
				role := byNamespace(objectsOf[*rbacv1.Role](r))["team-x"]
				want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
				if role == nil || role.Name != "deployer" || !reflect.DeepEqual(role.Rules, want) {
					t.Fatalf("Role in team-x = %+v, want deployer with rules %+v", role, want)
				}
				sa := byNamespace(objectsOf[*corev1.ServiceAccount](r))["team-x"]
				if sa == nil || sa.Name != "deployer" || sa.Labels["team"] != "x" {
					t.Fatalf("ServiceAccount in team-x = %+v, want deployer labelled team=x", sa)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, renderValues(t, tc.values)) })
	}
}

// named returns the rendered objects of type T named name.
func named[T interface {
	runtime.Object
	GetName() string
}](r rendered, name string) []T {
	return slices.DeleteFunc(objectsOf[T](r), func(o T) bool { return o.GetName() != name })
}

// renderValues renders the chart from disk with the values text and fails the test on error.
func renderValues(t *testing.T, valuesText string) rendered {
	t.Helper()
	r, err := render(t, loadChart(t), releaseName, parseValues(t, valuesText))
	if err != nil {
		t.Fatalf("rendering with values %q: %v", valuesText, err)
	}
	return r
}

func TestNotesTellHowToPrintATenantKubeconfig(t *testing.T) {
	r := renderValues(t, "tenants:\n  - namespace: ask\n")
	if want := "manager kubeconfig --namespace ask --service-account ask-sa --duration 8h > ask.kubeconfig"; !strings.Contains(r.notes, want) {
		t.Errorf("NOTES.txt lacks %q:\n%s", want, r.notes)
	}
	r = renderValues(t, "tenants:\n  - namespace: ask\n    tokenSecret: true\n")
	for _, want := range []string{
		"tenant ask: ServiceAccount ask-sa, its Role and RoleBinding, token Secret ask-sa-token",
		"manager kubeconfig --namespace ask --service-account ask-sa --from-secret ask-sa-token > ask.kubeconfig",
	} {
		if !strings.Contains(r.notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, r.notes)
		}
	}
	r = renderValues(t, namespacedValues)
	if want := "Role/RoleBinding platform-operators-manager in namespaces team-a, team-b"; !strings.Contains(r.notes, want) {
		t.Errorf("NOTES.txt lacks %q:\n%s", want, r.notes)
	}
}

func TestRBACScope(t *testing.T) {
	t.Run("cluster scope (the default) grants a ClusterRole and watches all namespaces", func(t *testing.T) {
		r := renderValues(t, "")
		onlyNamed[*rbacv1.ClusterRoleBinding](t, r, "platform-operators-manager")
		if a := argWithPrefix(manager(t, r).Args, "--watch-namespaces"); a != "" {
			t.Errorf("manager args hold %q, want no namespace restriction", a)
		}
	})
	t.Run("namespaced scope grants the generated rules without cluster-scoped resources as a Role in each namespace", func(t *testing.T) {
		r := renderValues(t, namespacedValues)
		// Only the metrics endpoint's (asking the API server about tokens and access needs them in
		// both modes) and the roles aggregated to users' view/edit/admin, which grant users, not the manager.
		wantRBAC := slices.Sorted(slices.Values(append([]string{"ClusterRole/platform-operators-edit", "ClusterRole/platform-operators-view"}, metricsClusterRBAC...)))
		if names := clusterRBACNames(r); !slices.Equal(names, wantRBAC) {
			t.Fatalf("rendered cluster-wide RBAC %q, want only %q", names, wantRBAC)
		}
		// Cluster-scoped resources cannot be granted by a Role.
		dropped := clusterScopedResources(t)
		var want []rbacv1.PolicyRule
		for _, rule := range enabledControllerRules(t, "at", "scheduledjob") {
			rule.Resources = slices.DeleteFunc(slices.Clone(rule.Resources), func(res string) bool { return slices.Contains(dropped, res) })
			if len(rule.Resources) > 0 {
				want = append(want, rule)
			}
		}
		roles := byNamespace(objectsOf[*rbacv1.Role](r))
		bindings := byNamespace(objectsOf[*rbacv1.RoleBinding](r))
		for _, ns := range []string{"team-a", "team-b"} {
			role, rb := roles[ns], bindings[ns]
			if role == nil || rb == nil {
				t.Fatalf("namespace %s: Role %v, RoleBinding %v; want both", ns, role, rb)
			}
			if !reflect.DeepEqual(role.Rules, want) {
				t.Errorf("Role in %s rules = %+v\nwant %+v", ns, role.Rules, want)
			}
			// What the controllers that can run in namespaced mode need (the roles the manager's
			// self-check embeds), and the manager's own needs.
			byController, err := permissions.ByController(func(string, string) (bool, error) { return true, nil })
			if err != nil {
				t.Fatal(err)
			}
			for _, controller := range []string{"at", "scheduledjob", permissions.Manager} {
				if len(byController[controller]) == 0 {
					t.Errorf("no embedded role for %s", controller)
				}
				for _, need := range byController[controller] {
					res := need.Resource
					if need.Subresource != "" {
						res += "/" + need.Subresource
					}
					if !grants(role.Rules, need.Group, res, need.Verb) {
						t.Errorf("Role in %s does not grant %s, which %s needs", ns, need, controller)
					}
				}
			}
			if grants(role.Rules, "", "secrets", "get") {
				t.Errorf("Role in %s grants Secrets, which only SecretSync uses, and it is off here", ns)
			}
			wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "platform-operators", Namespace: namespace}}
			if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !reflect.DeepEqual(rb.Subjects, wantSubjects) {
				t.Errorf("RoleBinding in %s = %+v, want the manager bound to %s", ns, rb, role.Name)
			}
		}
		// Leader election stays in the release namespace.
		if roles[namespace] == nil {
			t.Errorf("no leader election Role in %s", namespace)
		}
		args := manager(t, r).Args
		if !hasArg(args, "--watch-namespaces=team-a,team-b") {
			t.Errorf("manager args = %q, want --watch-namespaces=team-a,team-b", args)
		}
		if c := controllersArg(args); !slices.Contains(c, "-secretsync") {
			t.Errorf("--controllers = %q, want -secretsync", c)
		}
		if a := argWithPrefix(args, "--default-secretsync"); a != "" {
			t.Errorf("manager args hold %q in namespaced mode", a)
		}
		if ns := named[*corev1.Namespace](r, "secretsync"); len(ns) != 0 {
			t.Errorf("the SecretSync source namespace is rendered in namespaced mode")
		}
	})
	t.Run("namespaced scope with SecretSync grants Roles in the listed and source namespaces and cluster-wide only SecretSyncs", func(t *testing.T) {
		r := renderValues(t, namespacedSecretSyncValues)
		wantRBAC := slices.Sorted(slices.Values(append([]string{"ClusterRole/platform-operators-edit", "ClusterRole/platform-operators-view",
			"ClusterRole/platform-operators-secretsync", "ClusterRoleBinding/platform-operators-secretsync"}, metricsClusterRBAC...)))
		if names := clusterRBACNames(r); !slices.Equal(names, wantRBAC) {
			t.Fatalf("rendered cluster-wide RBAC %q, want only %q", names, wantRBAC)
		}
		// Cluster-wide: SecretSyncs (cluster-scoped), get on the admission policies the manager
		// checks its own with, and get on the listed Namespaces by name (a source namespace is
		// confirmed not being deleted before copies are removed, without a write: issue 45);
		// never any other Namespace, nor a Secret, ConfigMap or ServiceAccount.
		cr := onlyNamed[*rbacv1.ClusterRole](t, r, "platform-operators-secretsync")
		var unnamed []rbacv1.PolicyRule
		for _, rule := range cr.Rules {
			if slices.Contains(rule.Resources, "namespaces") {
				if !slices.Equal(rule.Verbs, []string{"get"}) || !slices.Equal(rule.ResourceNames, []string{"team-a", "team-b", "secretsync"}) || len(rule.Resources) != 1 {
					t.Errorf("ClusterRole platform-operators-secretsync grants %+v, want get on the listed Namespaces by name only", rule)
				}
				continue
			}
			unnamed = append(unnamed, rule)
		}
		for _, res := range []string{"namespaces", "secrets", "configmaps", "serviceaccounts"} {
			for _, verb := range []string{"get", "list", "watch"} {
				if grants(unnamed, "", res, verb) {
					t.Errorf("ClusterRole platform-operators-secretsync grants %s %s", verb, res)
				}
			}
		}
		byController, err := permissions.ByController(func(string, string) (bool, error) { return true, nil })
		if err != nil {
			t.Fatal(err)
		}
		clusterScoped := clusterScopedResources(t)
		roles := map[string][]*rbacv1.Role{}
		for _, role := range objectsOf[*rbacv1.Role](r) {
			roles[role.Namespace] = append(roles[role.Namespace], role)
		}
		managerRole := func(ns string) *rbacv1.Role {
			for _, role := range roles[ns] {
				if role.Name == "platform-operators-manager" {
					return role
				}
			}
			return nil
		}
		// Each need of the enabled controllers is granted: the namespaced ones by the Role in
		// every namespace the manager works in (the source namespace secretsync included), the
		// cluster-scoped ones by the ClusterRole, but Namespaces, which it does not read.
		for _, ns := range []string{"team-a", "team-b", "secretsync"} {
			role := managerRole(ns)
			if role == nil {
				t.Fatalf("no Role platform-operators-manager in %s", ns)
			}
			for _, controller := range []string{"secretsync", "at", "scheduledjob", permissions.Manager} {
				for _, need := range byController[controller] {
					res := need.Resource
					if need.Subresource != "" {
						res += "/" + need.Subresource
					}
					where, rules := "Role in "+ns, role.Rules
					if slices.Contains(clusterScoped, res) || strings.HasPrefix(res, "validatingadmissionpolic") {
						where, rules = "ClusterRole platform-operators-secretsync", cr.Rules
					}
					if res == "namespaces" {
						if grants(unnamed, need.Group, res, need.Verb) || (where != "ClusterRole platform-operators-secretsync" && grants(rules, need.Group, res, need.Verb)) {
							t.Errorf("%s grants %s: namespaced mode reads no Namespace", where, need)
						}
						continue
					}
					if !grants(rules, need.Group, res, need.Verb) {
						t.Errorf("%s does not grant %s, which %s needs", where, need, controller)
					}
				}
			}
		}
		if managerRole("default") != nil || managerRole("kube-system") != nil {
			t.Errorf("a manager Role outside the listed and source namespaces")
		}
		// The release namespace: the ownership key by name (and its first create) and Events.
		var key *rbacv1.Role
		for _, role := range roles[namespace] {
			if role.Name == "platform-operators-secretsync" {
				key = role
			}
		}
		if key == nil || !grants(key.Rules, "events.k8s.io", "events", "create") || !grants(key.Rules, "", "secrets", "create") ||
			!slices.ContainsFunc(key.Rules, func(rule rbacv1.PolicyRule) bool {
				return slices.Contains(rule.Verbs, "get") && slices.Equal(rule.ResourceNames, []string{"platform-operators-ownership-key"})
			}) || grants(key.Rules, "", "secrets", "list") {
			t.Errorf("Role platform-operators-secretsync in %s = %+v, want get of the ownership key by name, create secrets, Events", namespace, key)
		}
		args := manager(t, r).Args
		if !hasArg(args, "--watch-namespaces=team-a,team-b,secretsync") {
			t.Errorf("manager args = %q, want --watch-namespaces=team-a,team-b,secretsync (the default SecretSync's source added)", args)
		}
		if c := controllersArg(args); !slices.Contains(c, "secretsync") {
			t.Errorf("--controllers = %q, want secretsync", c)
		}
		if !hasArg(args, "--default-secretsync-source-namespace=secretsync") {
			t.Errorf("manager args = %q, want the default SecretSync", args)
		}
	})
	t.Run("namespaced scope adds the pull secret's namespace once", func(t *testing.T) {
		r := renderValues(t, namespacedSecretSyncValues+"pullSecret:\n  name: harbor\n  namespace: registry\n  sync:\n    enabled: true\n")
		if args := manager(t, r).Args; !hasArg(args, "--watch-namespaces=team-a,team-b,secretsync,registry") {
			t.Errorf("manager args = %q, want --watch-namespaces=team-a,team-b,secretsync,registry", args)
		}
		r = renderValues(t, "rbac:\n  scope: namespaced\n  namespaces: [secretsync, team-a]\n")
		if args := manager(t, r).Args; !hasArg(args, "--watch-namespaces=secretsync,team-a") {
			t.Errorf("manager args = %q, want the source namespace listed once", args)
		}
	})
	t.Run("namespaced scope without chart RBAC still restricts the manager", func(t *testing.T) {
		r := renderValues(t, strings.Replace(namespacedValues, "rbac:\n", "rbac:\n  create: false\n", 1))
		if n := len(objectsOf[*rbacv1.Role](r)); n != 0 {
			t.Errorf("rendered %d Roles with rbac.create=false", n)
		}
		if args := manager(t, r).Args; !hasArg(args, "--watch-namespaces=team-a,team-b") {
			t.Errorf("manager args = %q, want --watch-namespaces=team-a,team-b", args)
		}
	})
}

func TestRBACScopeRejectsWhatCannotWork(t *testing.T) {
	cases := []struct {
		name, values string
		want         string
	}{
		// The error says what to set, not only which schema keyword failed (issue 46).
		{"namespaced scope without namespaces is refused, saying what to set",
			"rbac:\n  scope: namespaced\nsecretSync:\n  enabled: false\n", "rbac.scope=namespaced needs rbac.namespaces, the namespaces the manager works in, and it is empty: set it"},
		{"namespaced scope with SecretSync on and no namespaces is refused the same way",
			"rbac:\n  scope: namespaced\n", "or set rbac.scope=cluster"},
		{"namespaced scope with namespaces set to null is refused the same way",
			"rbac:\n  scope: namespaced\n  namespaces: null\n", "rbac.scope=namespaced needs rbac.namespaces"},
		{"a pod watcher namespace outside the namespaced scope is refused",
			namespacedValues + "podWatcher:\n  enabled: true\n  namespaces: [elsewhere]\n", `"elsewhere"`},
		{"an unknown scope is refused", "rbac:\n  scope: global\n", "/rbac/scope"},
		{"a tenant without a namespace is refused", "tenants:\n  - serviceAccount: x\n", "/tenants/0"},
		{"a misspelt tenant key is refused", "tenants:\n  - namespace: a\n    createNamespaces: false\n", "createNamespaces"},
		{"a tenant namespace that is not a DNS label is refused", "tenants:\n  - namespace: Team_A\n", "/tenants/0/namespace"},
		{"a tenant rule without verbs is refused", "tenants:\n  - namespace: a\n    rules:\n      - resources: [pods]\n", "/tenants/0/rules/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, loadChart(t), releaseName, parseValues(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestAggregatedRoles(t *testing.T) {
	if names := clusterRBACNames(renderValues(t, "rbac:\n  aggregateToDefaultRoles: false\nmetrics:\n  secure: false\n")); !slices.Equal(names, []string{"ClusterRole/platform-operators-manager", "ClusterRoleBinding/platform-operators-manager"}) {
		t.Fatalf("plain HTTP metrics without aggregation render %q, want only the manager's ClusterRole and binding", names)
	}
	r := renderValues(t, "rbac:\n  aggregateToDefaultRoles: true\n")
	roles := map[string]*rbacv1.ClusterRole{}
	for _, cr := range objectsOf[*rbacv1.ClusterRole](r) {
		roles[cr.Name] = cr
	}
	view, edit := roles["platform-operators-view"], roles["platform-operators-edit"]
	if view == nil || edit == nil {
		t.Fatalf("ClusterRoles = %v, want platform-operators-view and -edit", slices.Sorted(func(yield func(string) bool) {
			for k := range roles {
				yield(k)
			}
		}))
	}
	const agg = "rbac.authorization.k8s.io/aggregate-to-"
	for _, to := range []string{"view", "edit", "admin"} {
		if view.Labels[agg+to] != "true" {
			t.Errorf("the view role does not aggregate to %s: %v", to, view.Labels)
		}
	}
	if edit.Labels[agg+"view"] != "" || edit.Labels[agg+"edit"] != "true" || edit.Labels[agg+"admin"] != "true" {
		t.Errorf("edit role labels = %v, want aggregation to edit and admin only", edit.Labels)
	}
	for _, res := range []string{"ats", "scheduledjobs"} {
		if !grants(view.Rules, "ops.platform-operators.io", res, "list") || grants(view.Rules, "ops.platform-operators.io", res, "create") {
			t.Errorf("view role rules %+v: want read-only %s", view.Rules, res)
		}
		if !grants(edit.Rules, "ops.platform-operators.io", res, "create") || !grants(edit.Rules, "ops.platform-operators.io", res, "delete") {
			t.Errorf("edit role rules %+v: want create and delete %s", edit.Rules, res)
		}
	}
	for _, cr := range []*rbacv1.ClusterRole{view, edit} {
		for _, rule := range cr.Rules {
			for _, res := range rule.Resources {
				if strings.HasPrefix(res, "secretsyncs") || res == "*" {
					t.Errorf("%s grants %s: SecretSync must stay with cluster admins", cr.Name, res)
				}
			}
		}
	}
}

// A tenant's Role may create pods with any ServiceAccount of its namespace: in the release
// namespace that is the manager's (every Secret of the cluster), in kube-* the cluster's own.
func TestATenantIsNeverTheReleaseOrASystemNamespace(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"the release namespace", "tenants:\n  - namespace: " + namespace + "\n    createNamespace: false\n", "is the release namespace"},
		{"the release namespace, created by the chart", "tenants:\n  - namespace: " + namespace + "\n", "is the release namespace"},
		{"kube-system", "tenants:\n  - namespace: kube-system\n    createNamespace: false\n", "is a kube-* namespace"},
		{"kube-public, second in the list", "tenants:\n  - namespace: ok\n  - namespace: kube-public\n", "tenants[1].namespace \"kube-public\" is a kube-* namespace"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) { wantRenderError(t, tc.values, tc.want, "Give the tenant a namespace of its own") })
	}
	t.Run("a namespace that only starts like one is a tenant's", func(t *testing.T) {
		mustRenderAll(t, "tenants:\n  - namespace: kubeflow\n  - namespace: "+namespace+"-team\n")
	})
}

// The default SecretSync's source namespace is refused by the sources policy when it is the
// release namespace: the render says so, and the values switch allows it.
func TestTheDefaultSecretSyncIsNotSourcedInTheReleaseNamespace(t *testing.T) {
	wantRenderError(t, "secretSync:\n  default:\n    sourceNamespace: "+namespace+"\n", "secretSync.default.sourceNamespace", "admissionPolicies.allowedSourceNamespaces")
	mustRenderAll(t, "secretSync:\n  default:\n    sourceNamespace: "+namespace+"\nadmissionPolicies:\n  allowedSourceNamespaces: ["+namespace+"]\n")
}
