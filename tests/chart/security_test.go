package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/controller/permissions"
)

// rbacControllers are the controllers with a generated role in files/rbac/controllers/, by the
// names of --controllers, and the manager's own role.
var rbacControllers = []string{"at", "podwatcher", "scheduledjob", "secretsync"}

// controllerRoleRules reads files/rbac/controllers/<name>.yaml.
func controllerRoleRules(t *testing.T, name string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "files/rbac/controllers", name+".yaml"))
	if err != nil {
		t.Fatalf("%v: run make manifests", err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("parsing files/rbac/controllers/%s.yaml: %v", name, err)
	}
	return role.Rules
}

// enabledControllerRules is what the chart grants with the given controllers on: the manager's
// rules and theirs, in the order of their names, a rule two of them share once.
func enabledControllerRules(t *testing.T, controllers ...string) []rbacv1.PolicyRule {
	t.Helper()
	names := append(slices.Clone(controllers), permissions.Manager)
	slices.Sort(names)
	var out []rbacv1.PolicyRule
	for _, n := range names {
		for _, rule := range controllerRoleRules(t, n) {
			if !slices.ContainsFunc(out, func(r rbacv1.PolicyRule) bool { return equalRule(r, rule) }) {
				out = append(out, rule)
			}
		}
	}
	return out
}

func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// permissionSet expands rules into "verb resource.group" strings.
func permissionSet(rules []rbacv1.PolicyRule) sets.Set[string] {
	out := sets.New[string]()
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out.Insert(v + " " + res + "." + g)
				}
			}
		}
	}
	return out
}

func TestTheControllerRolesAddUpToTheGeneratedClusterRole(t *testing.T) {
	// make manifests writes both from the same markers; a stale copy would grant too much or too little.
	all := enabledControllerRules(t, rbacControllers...)
	if got, want := permissionSet(all), permissionSet(roleFileRules(t)); !got.Equal(want) {
		t.Errorf("files/rbac/controllers/ grant %v beyond files/rbac/role.yaml and lack %v: run make manifests",
			sets.List(got.Difference(want)), sets.List(want.Difference(got)))
	}
	for _, c := range append(slices.Clone(rbacControllers), permissions.Manager) {
		embedded, err := permissions.Rules()
		if err != nil {
			t.Fatal(err)
		}
		if !permissionSet(embedded[c]).Equal(permissionSet(controllerRoleRules(t, c))) {
			t.Errorf("files/rbac/controllers/%s.yaml differs from the role the manager's self-check embeds: run make manifests", c)
		}
	}
}

func TestClusterRoleGrantsOnlyEnabledControllers(t *testing.T) {
	cases := []struct {
		name, values string
		on           []string
	}{
		{name: "the defaults (pod watcher off)", values: "", on: []string{"at", "scheduledjob", "secretsync"}},
		{name: "pod watcher on", values: "podWatcher:\n  enabled: true\n", on: rbacControllers},
		{name: "SecretSync off", values: "secretSync:\n  enabled: false\n", on: []string{"at", "scheduledjob"}},
		{name: "At off", values: "at:\n  enabled: false\n", on: []string{"scheduledjob", "secretsync"}},
		{name: "ScheduledJob off", values: "scheduledJob:\n  enabled: false\n", on: []string{"at", "secretsync"}},
		{name: "everything off", values: "secretSync:\n  enabled: false\nat:\n  enabled: false\nscheduledJob:\n  enabled: false\n", on: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRenderAll(t, tc.values)
			got := permissionSet(onlyNamed[*rbacv1.ClusterRole](t, r, "platform-operators-manager").Rules)
			want := permissionSet(enabledControllerRules(t, tc.on...))
			if !got.Equal(want) {
				t.Errorf("ClusterRole grants %v beyond the enabled controllers' needs and lacks %v",
					sets.List(got.Difference(want)), sets.List(want.Difference(got)))
			}
			// What only a disabled controller needs is not granted.
			for _, off := range rbacControllers {
				if slices.Contains(tc.on, off) {
					continue
				}
				exclusive := permissionSet(controllerRoleRules(t, off)).Difference(want)
				if leaked := got.Intersection(exclusive); leaked.Len() > 0 {
					t.Errorf("controller %s is off, but the ClusterRole grants %v", off, sets.List(leaked))
				}
			}
		})
	}
	t.Run("SecretSync off grants no Secrets, ConfigMaps, ServiceAccounts or SecretSyncs", func(t *testing.T) {
		rules := onlyNamed[*rbacv1.ClusterRole](t, mustRenderAll(t, "secretSync:\n  enabled: false\n"), "platform-operators-manager").Rules
		for _, res := range [][2]string{{"", "secrets"}, {"", "configmaps"}, {"", "serviceaccounts"}, {"ops.platform-operators.io", "secretsyncs"}} {
			if grants(rules, res[0], res[1], "get") {
				t.Errorf("grants get %s.%s with SecretSync off", res[1], res[0])
			}
		}
	})
}

func TestAdmissionPolicies(t *testing.T) {
	policies := []string{"platform-operators-ownership-keys", "platform-operators-manager-writes", "platform-operators-manager-jobs"}
	t.Run("on by default: three policies, each bound with Deny", func(t *testing.T) {
		r := mustRenderAll(t, "")
		for _, name := range policies {
			p := onlyNamed[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, name)
			if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("%s failurePolicy = %v, want Fail", name, p.Spec.FailurePolicy)
			}
			b := onlyNamed[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, r, name)
			if b.Spec.PolicyName != name || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
				t.Errorf("binding %s = %+v, want policy %s with [Deny]", name, b.Spec, name)
			}
		}
	})
	t.Run("the manager is named by its ServiceAccount, with overrides and other releases' managers", func(t *testing.T) {
		r := mustRenderAll(t, "serviceAccount:\n  name: po\nadmissionPolicies:\n  otherManagers: [\"system:serviceaccount:other:po\"]\n")
		p := onlyNamed[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, "platform-operators-ownership-keys")
		want := "!(request.userInfo.username in ['system:serviceaccount:platform-operators-system:po', 'system:serviceaccount:other:po'])"
		if got := p.Spec.MatchConditions[0].Expression; got != want {
			t.Errorf("matchCondition = %s, want %s", got, want)
		}
		w := onlyNamed[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, "platform-operators-manager-writes")
		if got := w.Spec.MatchConditions[0].Expression; got != "request.userInfo.username == 'system:serviceaccount:platform-operators-system:po'" {
			t.Errorf("manager-writes matchCondition = %s", got)
		}
	})
	t.Run("Warn and Audit only report", func(t *testing.T) {
		r := mustRenderAll(t, "admissionPolicies:\n  validationActions: [Warn, Audit]\n")
		for _, b := range objectsOf[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](r) {
			if !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{"Warn", "Audit"}) {
				t.Errorf("binding %s actions = %v", b.Name, b.Spec.ValidationActions)
			}
		}
	})
	t.Run("off when asked", func(t *testing.T) {
		r := mustRenderAll(t, "admissionPolicies:\n  enabled: false\n")
		if n := len(objectsOf[*admissionregistrationv1.ValidatingAdmissionPolicy](r)) + len(objectsOf[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](r)); n != 0 {
			t.Errorf("rendered %d policy objects with admissionPolicies.enabled=false", n)
		}
	})
	t.Run("the Job policy lists the namespaces of rbac.scope=namespaced", func(t *testing.T) {
		r := mustRenderAll(t, namespacedValues)
		p := onlyNamed[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, "platform-operators-manager-jobs")
		if got := p.Spec.Variables[1].Expression; got != "request.namespace in ['team-a', 'team-b']" {
			t.Errorf("allowedNamespace = %s", got)
		}
	})
	t.Run("every key of ours but the user-set ones is protected", func(t *testing.T) {
		r := mustRenderAll(t, "")
		p := onlyNamed[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, "platform-operators-ownership-keys")
		var changed string
		for _, v := range p.Spec.Variables {
			if v.Name == "changed" {
				changed = v.Expression
			}
		}
		if !strings.Contains(changed, "k.startsWith('ops.platform-operators.io/')") ||
			!strings.Contains(changed, "['ops.platform-operators.io/offer', 'ops.platform-operators.io/offer-namespaces', 'ops.platform-operators.io/run-now']") {
			t.Errorf("changed = %s", changed)
		}
	})
	t.Run("the chart's own objects carry none of the keys the policies protect, so Helm can install and upgrade them", func(t *testing.T) {
		r := mustRenderAll(t, harborValues+"  sync:\n    enabled: true\ntenants:\n  - namespace: a\n    tokenSecret: true\nmanagerPullSecret:\n  create: true\n  registry: h\n  username: u\n  password: p\n")
		for _, o := range r.objects {
			m, ok := o.(interface {
				GetLabels() map[string]string
				GetAnnotations() map[string]string
				GetName() string
			})
			if !ok {
				continue
			}
			for _, md := range []map[string]string{m.GetLabels(), m.GetAnnotations()} {
				for k := range md {
					if strings.HasPrefix(k, "ops.platform-operators.io/") {
						t.Errorf("%T %s carries %s", o, m.GetName(), k)
					}
				}
			}
		}
	})
}

func TestFlowControl(t *testing.T) {
	t.Run("a bounded priority level of its own for the manager, one flow per namespace", func(t *testing.T) {
		r := mustRenderAll(t, "")
		pl := onlyNamed[*flowcontrolv1.PriorityLevelConfiguration](t, r, "platform-operators")
		l := pl.Spec.Limited
		if pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementLimited || l == nil || l.NominalConcurrencyShares == nil || *l.NominalConcurrencyShares != 20 ||
			l.BorrowingLimitPercent == nil || *l.BorrowingLimitPercent != 100 || l.LendablePercent == nil || *l.LendablePercent != 50 ||
			l.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || l.LimitResponse.Queuing.Queues != 64 {
			t.Errorf("priority level = %+v", pl.Spec)
		}
		fs := onlyNamed[*flowcontrolv1.FlowSchema](t, r, "platform-operators")
		if fs.Spec.PriorityLevelConfiguration.Name != pl.Name || fs.Spec.MatchingPrecedence != 1000 ||
			fs.Spec.DistinguisherMethod == nil || fs.Spec.DistinguisherMethod.Type != flowcontrolv1.FlowDistinguisherMethodByNamespaceType {
			t.Errorf("FlowSchema = %+v", fs.Spec)
		}
		want := flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "platform-operators", Namespace: namespace}}
		if len(fs.Spec.Rules) != 1 || len(fs.Spec.Rules[0].Subjects) != 1 || *fs.Spec.Rules[0].Subjects[0].ServiceAccount != *want.ServiceAccount {
			t.Errorf("FlowSchema rules = %+v, want the manager's ServiceAccount only", fs.Spec.Rules)
		}
		le := onlyNamed[*flowcontrolv1.FlowSchema](t, r, "platform-operators-leader-election")
		if le.Spec.PriorityLevelConfiguration.Name != "leader-election" || le.Spec.MatchingPrecedence != 999 ||
			!slices.Equal(le.Spec.Rules[0].ResourceRules[0].Namespaces, []string{namespace}) {
			t.Errorf("leader-election FlowSchema = %+v", le.Spec)
		}
	})
	t.Run("off when asked", func(t *testing.T) {
		r := mustRenderAll(t, "flowControl:\n  enabled: false\n")
		if n := len(objectsOf[*flowcontrolv1.FlowSchema](r)) + len(objectsOf[*flowcontrolv1.PriorityLevelConfiguration](r)); n != 0 {
			t.Errorf("rendered %d flow-control objects", n)
		}
	})
}

func TestStorageClassRefusesSharedData(t *testing.T) {
	const base = "storageClass:\n  enabled: true\n  parameters:\n    fileSystemId: fs-0123456789abcdef0\n"
	refused := []struct{ name, values, want string }{
		{"reuseAccessPoint", base + "    reuseAccessPoint: true\n", `reuseAccessPoint="true"`},
		{"a subPathPattern without the namespace", base + "    subPathPattern: ${.PVC.name}\n", `subPathPattern="${.PVC.name}" does not have the claim's namespace (${.PVC.namespace}) as a path element of its own`},
		// Substring matches passed these: namespace a-b claim c and namespace a claim b-c share a-b-c.
		{"the namespace joined to the name by a dash", base + "    subPathPattern: ${.PVC.namespace}-${.PVC.name}\n", "as a path element of its own"},
		{"the namespace joined to the name", base + "    subPathPattern: ${.PVC.namespace}${.PVC.name}\n", "as a path element of its own"},
		{"the namespace inside an element", base + "    subPathPattern: data/ns-${.PVC.namespace}-x/${.PVC.name}\n", "as a path element of its own"},
		{"the namespace in another case (the driver substitutes only the exact spelling)", base + "    subPathPattern: ${.PVC.Namespace}/${.PVC.name}\n", "as a path element of its own"},
		{"a subPathPattern from annotations", base + "    subPathPattern: ${.PVC.namespace}/${.PVC.annotations.dir}\n", "uses claim annotations"},
		{"reuseAccessPoint through extraParameters", base + "  extraParameters:\n    reuseAccessPoint: \"true\"\n", `reuseAccessPoint="true"`},
		{"a local-path pathPattern without the namespace", "storageClass:\n  enabled: true\n  provisioner: rancher.io/local-path\n  extraParameters:\n    pathPattern: \"{{ .PVC.Name }}\"\n", "pathPattern="},
	}
	for _, tc := range refused {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			wantRenderError(t, tc.values, tc.want, "storageClass.allowSharedData=true")
		})
		t.Run("acknowledged: "+tc.name, func(t *testing.T) {
			only[*storagev1.StorageClass](t, mustRenderAll(t, strings.Replace(tc.values, "  enabled: true\n", "  enabled: true\n  allowSharedData: true\n", 1)))
		})
	}
	t.Run("per-namespace patterns pass", func(t *testing.T) {
		for _, pattern := range []string{"${.PVC.namespace}", "${.PVC.namespace}/${.PVC.name}", "tenants/${.PVC.namespace}/${.PVC.name}-data", "${.PVC.name}/${.PVC.namespace}"} {
			sc := only[*storagev1.StorageClass](t, mustRenderAll(t, base+"    subPathPattern: "+pattern+"\n"))
			if sc.Parameters["subPathPattern"] != pattern {
				t.Errorf("subPathPattern = %q, want %q", sc.Parameters["subPathPattern"], pattern)
			}
		}
		lp := "storageClass:\n  enabled: true\n  provisioner: rancher.io/local-path\n  extraParameters:\n    pathPattern: \"{{ .PVC.Namespace }}/{{ .PVC.Name }}\"\n"
		only[*storagev1.StorageClass](t, mustRenderAll(t, lp))
		wantRenderError(t, strings.Replace(lp, "{{ .PVC.Namespace }}/", "{{ .PVC.Namespace }}-", 1), "pathPattern=", "as a path element of its own")
		sc := only[*storagev1.StorageClass](t, mustRenderAll(t, base+"    subPathPattern: ${.PVC.namespace}/${.PVC.name}\n    reuseAccessPoint: false\n"))
		if sc.Parameters["subPathPattern"] != "${.PVC.namespace}/${.PVC.name}" || sc.Parameters["reuseAccessPoint"] != "false" {
			t.Errorf("parameters = %v", sc.Parameters)
		}
	})
}

func TestPullCredentialsAreSeparate(t *testing.T) {
	const managerPull = "managerPullSecret:\n  create: true\n  registry: harbor.example.com\n  username: robot$platform+manager\n  password: m\n"
	t.Run("the manager pulls with its own Secret in the release namespace, which is never spread", func(t *testing.T) {
		r := mustRenderAll(t, harborValues+"  sync:\n    enabled: true\n"+managerPull)
		ms := onlyNamed[*corev1.Secret](t, r, "platform-operators-pull")
		if ms.Namespace != namespace || ms.Type != corev1.SecretTypeDockerConfigJson || !strings.Contains(string(ms.Data[corev1.DockerConfigJsonKey]), `"username":"robot$platform+manager"`) {
			t.Errorf("manager pull secret = %s/%s %s %s", ms.Namespace, ms.Name, ms.Type, ms.Data[corev1.DockerConfigJsonKey])
		}
		if got := secretNames(podOf(t, r).ImagePullSecrets); got != "platform-operators-pull" {
			t.Errorf("manager imagePullSecrets = %s, want only its own", got)
		}
		for _, h := range r.hooks {
			if p, ok := h.(*corev1.Pod); ok && secretNames(p.Spec.ImagePullSecrets) != "platform-operators-pull" {
				t.Errorf("helm test pod imagePullSecrets = %s", secretNames(p.Spec.ImagePullSecrets))
			}
		}
		if !hasArg(manager(t, r).Args, "--pull-secret-sync-secret=registry-pull") {
			t.Errorf("the tenants' secret is not the one spread: %q", manager(t, r).Args)
		}
		// Whatever an admin's SecretSync says, the manager never copies the Secrets it pulls with.
		if !hasArg(manager(t, r).Args, "--withheld-secrets=platform-operators-pull") {
			t.Errorf("the manager's pull secret is not withheld: %q", manager(t, r).Args)
		}
	})
	t.Run("the tenants' pull secret never pulls the manager's image, even in the release namespace", func(t *testing.T) {
		r := mustRenderAll(t, harborValues+"  namespace: "+namespace+"\n")
		if ps := podOf(t, r).ImagePullSecrets; len(ps) != 0 {
			t.Errorf("manager imagePullSecrets = %v, want none", ps)
		}
		if a := argWithPrefix(manager(t, r).Args, "--withheld-secrets="); a != "" {
			t.Errorf("%s without a pull secret of the manager's", a)
		}
		r = mustRenderAll(t, "imagePullSecrets: [{name: a}, {name: b}]\nglobal:\n  imagePullSecrets: [c]\n")
		if !hasArg(manager(t, r).Args, "--withheld-secrets=c,a,b") {
			t.Errorf("every Secret the manager pulls with is withheld: %q", manager(t, r).Args)
		}
	})
	refused := []struct{ name, values string }{
		{"spreading a Secret the manager pulls with", harborValues + "  namespace: " + namespace + "\n  sync:\n    enabled: true\nimagePullSecrets: [{name: registry-pull}]\n"},
		{"spreading the managerPullSecret", "pullSecret:\n  name: platform-operators-pull\n  namespace: " + namespace + "\n  sync:\n    enabled: true\n" + managerPull},
	}
	for _, tc := range refused {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			wantRenderError(t, tc.values, "every tenant would get the manager's registry credential")
		})
	}
	t.Run("refused: one name for both", func(t *testing.T) {
		wantRenderError(t, harborValues+"  namespace: "+namespace+"\n"+strings.Replace(managerPull, "create: true\n", "create: true\n  name: registry-pull\n", 1), "managerPullSecret and pullSecret name the same Secret")
	})
}

func TestEveryImageByDigest(t *testing.T) {
	const d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	const d3 = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	r := mustRenderAll(t, "image:\n  digest: "+d1+"\njobImage:\n  digest: "+d2+"\n")
	if got := manager(t, r).Image; got != "ghcr.io/platform-operators/manager@"+d1 {
		t.Errorf("manager image = %s", got)
	}
	if !hasArg(manager(t, r).Args, "--job-image=docker.io/library/busybox@"+d2) {
		t.Errorf("job image not by digest: %q", manager(t, r).Args)
	}
	for _, h := range r.hooks {
		if p, ok := h.(*corev1.Pod); ok && p.Spec.Containers[0].Image != "ghcr.io/platform-operators/manager@"+d1 {
			t.Errorf("helm test image = %s, want the manager's by digest", p.Spec.Containers[0].Image)
		}
	}
	r = mustRenderAll(t, "tests:\n  image:\n    repository: mirror/manager\n    digest: "+d3+"\n")
	for _, h := range r.hooks {
		if p, ok := h.(*corev1.Pod); ok && p.Spec.Containers[0].Image != "mirror/manager@"+d3 {
			t.Errorf("helm test image = %s, want the mirror by digest", p.Spec.Containers[0].Image)
		}
	}
}

// parseBoolSpellings lists every spelling strconv.ParseBool (how the EFS driver reads
// reuseAccessPoint) takes, found by asking ParseBool about every upper/lower-case form of its
// words, and the case forms it refuses.
func parseBoolSpellings() (trueOnes, falseOnes, refused []string) {
	for _, word := range []string{"1", "0", "t", "f", "true", "false"} {
		for mask := 0; mask < 1<<len(word); mask++ {
			b := []byte(word)
			for i := range b {
				if mask&(1<<i) != 0 {
					b[i] = byte(unicode.ToUpper(rune(b[i])))
				}
			}
			if mask != 0 && string(b) == word {
				continue // a digit has no upper case
			}
			v, err := strconv.ParseBool(string(b))
			switch {
			case err != nil:
				refused = append(refused, string(b))
			case v:
				trueOnes = append(trueOnes, string(b))
			default:
				falseOnes = append(falseOnes, string(b))
			}
		}
	}
	return trueOnes, falseOnes, refused
}

// The EFS driver reads reuseAccessPoint with strconv.ParseBool: every spelling it takes for true
// shares an access point across namespaces and is refused; every one it takes for false passes;
// one it refuses fails the render (the driver would fail every claim).
func TestStorageClassReadsReuseAccessPointAsTheDriverDoes(t *testing.T) {
	const base = "storageClass:\n  enabled: true\n  parameters:\n    fileSystemId: fs-0123456789abcdef0\n  extraParameters:\n    reuseAccessPoint: "
	trueOnes, falseOnes, refused := parseBoolSpellings()
	if len(trueOnes) != 6 || len(falseOnes) != 6 {
		t.Fatalf("ParseBool takes %q for true and %q for false: the chart's lists are 1 t T TRUE true True / 0 f F FALSE false False", trueOnes, falseOnes)
	}
	for _, v := range trueOnes {
		t.Run("true: "+v, func(t *testing.T) {
			wantRenderError(t, base+strconv.Quote(v)+"\n", "reuseAccessPoint="+strconv.Quote(v), "storageClass.allowSharedData=true")
		})
	}
	for _, v := range falseOnes {
		t.Run("false: "+v, func(t *testing.T) {
			if got := only[*storagev1.StorageClass](t, mustRenderAll(t, base+strconv.Quote(v)+"\n")).Parameters["reuseAccessPoint"]; got != v {
				t.Errorf("reuseAccessPoint = %q, want %q", got, v)
			}
		})
	}
	for _, v := range append(refused, "yes", "", " true") {
		if v == "" {
			continue // an empty value is left out (with)
		}
		t.Run("not a boolean: "+v, func(t *testing.T) {
			wantRenderError(t, base+strconv.Quote(v)+"\n", "is not a boolean the EFS driver reads")
		})
	}
}
