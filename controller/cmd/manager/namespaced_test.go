package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/permissions"
	"github.com/platform-operators/platform-operators/controller/secretsync"
)

// namespacedClusterScoped are the cluster-scoped resources of the secretsync controller's
// generated role: the chart's namespaced mode grants them (but namespaces) in the
// <fullname>-secretsync ClusterRole, and the rest of the role as Roles in the listed namespaces.
var namespacedClusterScoped = []string{"namespaces", "secretsyncs", "secretsyncs/status", "validatingadmissionpolicies", "validatingadmissionpolicybindings"}

// splitRules splits generated rules into the part a Role can grant and the cluster-scoped part.
func splitRules(rules []rbacv1.PolicyRule) (namespaced, clusterScoped []rbacv1.PolicyRule) {
	for _, r := range rules {
		var in, out []string
		for _, res := range r.Resources {
			if slices.Contains(namespacedClusterScoped, res) {
				if res != "namespaces" {
					out = append(out, res)
				}
			} else {
				in = append(in, res)
			}
		}
		if len(in) > 0 {
			c := *r.DeepCopy()
			c.Resources = in
			namespaced = append(namespaced, c)
		}
		if len(out) > 0 {
			c := *r.DeepCopy()
			c.Resources = out
			clusterScoped = append(clusterScoped, c)
		}
	}
	return namespaced, clusterScoped
}

// A manager limited to namespaces, holding Roles there and only SecretSyncs (no Namespace, no
// Secret) cluster-wide, as the chart's rbac.scope=namespaced grants: a SecretSync copies from a
// listed source into the listed targets and fills their ServiceAccounts' imagePullSecrets; a
// target outside the list gets nothing and the SecretSync says so, with one Warning Event
// however many passes follow; a source outside the list, or a selector on labels the manager
// cannot read, stops it with its reason; a CopyRequest is served; a source namespace being
// deleted removes no copy. The RBAC self-check finds every permission granted.
func TestSecretSyncWithRolesOnlyInListedNamespaces(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	const (
		user      = "system:serviceaccount:po-system:platform-operators"
		managerNS = "po-system"
	)
	listed := []string{"src", "team-a", "team-b"}
	for _, ns := range append(slices.Clone(listed), "outside", managerNS) {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := permissions.Rules()
	if err != nil {
		t.Fatal(err)
	}
	inRoles, cluster := splitRules(append(slices.Clone(rules[secretsync.Name]), rules[permissions.Manager]...))
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	// As the chart: get on the listed Namespaces by name, to confirm a source namespace is not
	// being deleted before copies are removed.
	namespaceGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: listed, Verbs: []string{"get"}}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "po-secretsync"}, Rules: append(slices.Clone(cluster), namespaceGet)}
	objs := []client.Object{
		clusterRole,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "po-secretsync"}, Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "po-secretsync"}},
		// The manager's namespace: its ownership key and the SecretSyncs' Events.
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "po-secretsync", Namespace: managerNS}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "po-secretsync", Namespace: managerNS}, Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "po-secretsync"}},
	}
	for _, ns := range listed {
		objs = append(objs,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "po-manager", Namespace: ns}, Rules: inRoles},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "po-manager", Namespace: ns}, Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "po-manager"}})
	}
	pull := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: "src"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example":{"auth":"dTpw"}}}`)}}
	objs = append(objs, pull)
	for _, ns := range []string{"team-a", "team-b", "outside"} {
		objs = append(objs, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: ns}})
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	// The chart's own policies guard what the manager writes; every request of the manager they
	// refuse is counted (issue 45: a dry-run probe it refused wedged every removal).
	installManagerWritesPolicy(t, ctx, admin, rest.CopyConfig(as), user, managerNS)
	refused := &refusalCounter{}
	as.WrapTransport = refused.wrap
	o, err := parseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false",
		"--controllers=secretsync", "--manager-namespace=" + managerNS, "--watch-namespaces=" + strings.Join(listed, ",")})
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	mgr := startTestManager(t, ctx, o, enabled, as, prometheus.NewRegistry(), nil)

	t.Run("the self-check finds every permission granted", func(t *testing.T) {
		cs, err := kubernetes.NewForConfig(as)
		if err != nil {
			t.Fatal(err)
		}
		nss := checkNamespaces(enabled, listed, nil)
		byController, err := permissions.ByController(scopeFunc(mgr.GetRESTMapper(), nss))
		if err != nil {
			t.Fatal(err)
		}
		byController[secretsync.Name] = withoutNamespaceReads(byController[secretsync.Name])
		checker := &permissions.Checker{Reviews: cs.AuthorizationV1().SelfSubjectAccessReviews(), Checks: permissions.Expand(byController, nss), Log: logr.Discard()}
		missing, err := checker.Missing(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) > 0 {
			t.Fatalf("missing with the namespaced RBAC: %v", missing)
		}
	})

	ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Spec: v1alpha1.SecretSyncSpec{
		Source:             v1alpha1.SecretSyncSource{Namespace: "src", Name: "registry", Type: corev1.SecretTypeDockerConfigJson},
		Target:             v1alpha1.SecretSyncTarget{IncludeNamespaces: []string{"team-a", "team-b", "outside"}},
		ImagePullSecretFor: []string{"builder"},
	}}
	if err := admin.Create(ctx, ss); err != nil {
		t.Fatal(err)
	}
	reason := func(name string) (string, string) {
		got := &v1alpha1.SecretSync{}
		if err := admin.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
			return "", err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, copyplan.ConditionReady)
		if c == nil || c.ObservedGeneration != got.Generation {
			return "", "no Ready condition of this generation yet"
		}
		return c.Reason, c.Message
	}
	warnings := func(name, reason string) int {
		evs := &eventsv1.EventList{}
		if err := admin.List(ctx, evs, client.InNamespace(managerNS)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs.Items {
			if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				n++
			}
		}
		return n
	}
	hasEntry := func(ns string) bool {
		sa := &corev1.ServiceAccount{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "builder"}, sa); err != nil {
			return false
		}
		return slices.Contains(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: "registry"})
	}
	copied := func(ns string) bool {
		return admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "registry"}, &corev1.Secret{}) == nil
	}

	t.Run("copies land in the listed namespaces, with their pull secret entries", func(t *testing.T) {
		eventually(t, func() string {
			return fmt.Sprintf("copies team-a %v team-b %v, entries team-a %v team-b %v", copied("team-a"), copied("team-b"), hasEntry("team-a"), hasEntry("team-b"))
		}, func() bool { return copied("team-a") && copied("team-b") && hasEntry("team-a") && hasEntry("team-b") })
	})
	t.Run("the namespace outside the list is reported once, and gets nothing", func(t *testing.T) {
		eventually(t, func() string { r, m := reason("pull"); return r + ": " + m }, func() bool {
			r, m := reason("pull")
			return r == copyplan.ReasonNamespaceNotManaged && strings.Contains(m, "outside")
		})
		eventually(t, func() string { return "no NamespaceNotManaged Warning Event" }, func() bool { return warnings("pull", copyplan.ReasonNamespaceNotManaged) > 0 })
		// More passes: the source changes twice (each one a whole pass and a status write).
		for i := range 2 {
			cur := &corev1.Secret{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(pull), cur); err != nil {
				t.Fatal(err)
			}
			cur.Data[corev1.DockerConfigJsonKey] = fmt.Appendf(nil, `{"auths":{"harbor.example":{"auth":"dTpw%d"}}}`, i)
			if err := admin.Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			want := string(cur.Data[corev1.DockerConfigJsonKey])
			eventually(t, func() string { return "copy in team-b not updated" }, func() bool {
				c := &corev1.Secret{}
				return admin.Get(ctx, types.NamespacedName{Namespace: "team-b", Name: "registry"}, c) == nil && string(c.Data[corev1.DockerConfigJsonKey]) == want
			})
		}
		time.Sleep(2 * time.Second) // the Events of the last pass, if it emitted any
		if n := warnings("pull", copyplan.ReasonNamespaceNotManaged); n != 1 {
			t.Errorf("%d NamespaceNotManaged Warning Events, want 1 (one per change of reason, not per pass)", n)
		}
		if copied("outside") || hasEntry("outside") {
			t.Errorf("namespace outside the list got a copy (%v) or an entry (%v)", copied("outside"), hasEntry("outside"))
		}
	})
	t.Run("a source outside the list stops the SecretSync", func(t *testing.T) {
		if err := admin.Create(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "from-outside"}, Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: "outside", Name: "x"},
		}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { r, m := reason("from-outside"); return r + ": " + m }, func() bool {
			r, m := reason("from-outside")
			return r == copyplan.ReasonNamespaceNotManaged && strings.Contains(m, `source namespace "outside"`)
		})
		eventually(t, func() string { return "no Warning Event" }, func() bool { return warnings("from-outside", copyplan.ReasonNamespaceNotManaged) == 1 })
	})
	t.Run("a selector on labels the manager cannot read stops it; one on the name label works", func(t *testing.T) {
		for _, s := range []*v1alpha1.SecretSync{
			{ObjectMeta: metav1.ObjectMeta{Name: "by-team"}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "registry"},
				Target: v1alpha1.SecretSyncTarget{Name: "by-team", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
			}},
			{ObjectMeta: metav1.ObjectMeta{Name: "by-name"}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "registry"},
				Target: v1alpha1.SecretSyncTarget{Name: "by-name", NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"team-a"}}}}},
			}},
		} {
			if err := admin.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, func() string { r, m := reason("by-team"); return r + ": " + m }, func() bool {
			r, m := reason("by-team")
			return r == copyplan.ReasonNamespaceSelectorUnsupported && strings.Contains(m, "team")
		})
		eventually(t, func() string { r, m := reason("by-name"); return r + ": " + m }, func() bool {
			r, _ := reason("by-name")
			return r == copyplan.ReasonSynced
		})
		for ns, want := range map[string]bool{"team-a": true, "team-b": false} {
			err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "by-name"}, &corev1.Secret{})
			if got := err == nil; got != want || (err != nil && !apierrors.IsNotFound(err)) {
				t.Errorf("copy by-name in %s: %v, want present %v", ns, err, want)
			}
		}
		for _, ns := range []string{"team-a", "team-b"} {
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "by-team"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Errorf("copy by-team in %s: %v, want none (the selector cannot be decided)", ns, err)
			}
		}
	})
	t.Run("a CopyRequest in a listed namespace gets what the listed source offers", func(t *testing.T) {
		offered := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "offered", Namespace: "src",
			Labels: map[string]string{keys.LabelOffer: "true"}, Annotations: map[string]string{keys.AnnotationOfferNamespaces: "team-b"}},
			Data: map[string][]byte{"k": []byte("v")}}
		cr := &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Name: "want", Namespace: "team-b"},
			Spec: v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: "src", Name: "offered"}}}
		for _, o := range []client.Object{offered, cr} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, func() string { return "no copy of the offered Secret in team-b" }, func() bool {
			c := &corev1.Secret{}
			return admin.Get(ctx, types.NamespacedName{Namespace: "team-b", Name: "offered"}, c) == nil && string(c.Data["k"]) == "v"
		})
	})
	t.Run("a source renewed, a source deleted and a target list narrowed reach the copies under the chart's policies", func(t *testing.T) {
		tmp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rotating", Namespace: "src"}, Data: map[string][]byte{"k": []byte("v1")}}
		rot := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "rotating"}, Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "rotating"},
			Target: v1alpha1.SecretSyncTarget{IncludeNamespaces: []string{"team-a", "team-b"}},
		}}
		for _, o := range []client.Object{tmp, rot} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		holds := func(ns, want string) bool {
			c := &corev1.Secret{}
			return admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rotating"}, c) == nil && string(c.Data["k"]) == want
		}
		gone := func(ns string) bool {
			return apierrors.IsNotFound(admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rotating"}, &corev1.Secret{}))
		}
		eventually(t, func() string { return "copies of rotating not in team-a and team-b" }, func() bool { return holds("team-a", "v1") && holds("team-b", "v1") })
		tmp.Data["k"] = []byte("v2")
		if err := admin.Update(ctx, tmp); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { return "the renewed source did not reach the copies" }, func() bool { return holds("team-a", "v2") && holds("team-b", "v2") })
		// Narrowed: team-b is left out, its copy goes.
		if err := testenv.Edit(ctx, admin, rot, func(s *v1alpha1.SecretSync) { s.Spec.Target.IncludeNamespaces = []string{"team-a"} }); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { return "the copy in team-b, no longer a target, is still there" }, func() bool { return gone("team-b") && holds("team-a", "v2") })
		eventually(t, func() string { r, m := reason("rotating"); return r + ": " + m }, func() bool { r, _ := reason("rotating"); return r == copyplan.ReasonSynced })
		// The source deleted: its copy goes (the source namespace is confirmed by a read).
		if err := admin.Delete(ctx, tmp); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { return "the copy of a deleted source is still in team-a" }, func() bool { return gone("team-a") })
		eventually(t, func() string { r, m := reason("rotating"); return r + ": " + m }, func() bool { r, _ := reason("rotating"); return r == copyplan.ReasonSourceNotFound })
	})
	t.Run("without get on the source Namespace, copies of a gone source are kept and Ready says so; the rest goes on", func(t *testing.T) {
		clusterRole.Rules = slices.Clone(cluster)
		if err := admin.Update(ctx, clusterRole); err != nil {
			t.Fatal(err)
		}
		// The next subtest needs get on the Namespace back, also when this one stops early.
		t.Cleanup(func() {
			if err := testenv.Edit(ctx, admin, clusterRole, func(r *rbacv1.ClusterRole) { r.Rules = append(slices.Clone(cluster), namespaceGet) }); err != nil {
				t.Error(err)
			}
		})
		eventually(t, func() string { return "the manager can still read Namespace src" }, func() bool {
			cl, err := client.New(as, client.Options{Scheme: testenv.Scheme(t)})
			return err == nil && apierrors.IsForbidden(cl.Get(ctx, types.NamespacedName{Name: "src"}, &corev1.Namespace{}))
		})
		src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unconfirmed", Namespace: "src"}, Data: map[string][]byte{"k": []byte("v")}}
		ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "unconfirmed"}, Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "unconfirmed"},
			Target: v1alpha1.SecretSyncTarget{IncludeNamespaces: []string{"team-a", "team-b"}},
		}}
		for _, o := range []client.Object{src, ss} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		has := func(ns string) bool {
			return admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "unconfirmed"}, &corev1.Secret{}) == nil
		}
		eventually(t, func() string { return "no copies of unconfirmed" }, func() bool { return has("team-a") && has("team-b") })
		if err := testenv.Edit(ctx, admin, ss, func(s *v1alpha1.SecretSync) { s.Spec.Target.IncludeNamespaces = []string{"team-a"} }); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { return "narrowing did not remove the copy in team-b" }, func() bool { return !has("team-b") })
		if err := admin.Delete(ctx, src); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { r, m := reason("unconfirmed"); return r + ": " + m }, func() bool {
			r, m := reason("unconfirmed")
			return r == copyplan.ReasonSourceNamespaceUnconfirmed && strings.Contains(m, `"src"`)
		})
		if !has("team-a") {
			t.Error("the copy of a gone source was removed though the source namespace could not be confirmed")
		}
		clusterRole.Rules = append(slices.Clone(cluster), namespaceGet)
		if err := admin.Update(ctx, clusterRole); err != nil {
			t.Fatal(err)
		}
		// The pass is rechecked every minute; an edit of the SecretSync brings it at once.
		if err := testenv.Edit(ctx, admin, ss, func(s *v1alpha1.SecretSync) {
			s.Spec.Target.ExcludeNamespaces = append(s.Spec.Target.ExcludeNamespaces, "not-a-target")
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { return "once the Namespace can be read, the copy of the gone source stays" }, func() bool { return !has("team-a") })
		if n := refused.count(); n != 0 {
			t.Errorf("the chart's policies refused %d requests of the manager: %v", n, refused.samples())
		}
	})
	t.Run("a source namespace being deleted removes no copy, though the Namespace cannot be read", func(t *testing.T) {
		// envtest runs no namespace controller: the namespace stays Terminating with its
		// objects (the manager's Role among them); the source's deletion is the one a namespace
		// deletion starts with. The pass that would remove the copies probes the namespace.
		if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "src"}}); err != nil {
			t.Fatal(err)
		}
		if err := admin.Delete(ctx, pull); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() string { r, m := reason("pull"); return r + ": " + m }, func() bool {
			r, _ := reason("pull")
			return r == copyplan.ReasonSourceNamespaceTerminating
		})
		time.Sleep(time.Second) // a pass that would remove them had its chance
		if !copied("team-a") || !copied("team-b") || !hasEntry("team-a") {
			t.Errorf("copies (team-a %v, team-b %v) or entries (team-a %v) removed while the source namespace is being deleted", copied("team-a"), copied("team-b"), hasEntry("team-a"))
		}
	})
}

// installManagerWritesPolicy installs the chart's <fullname>-manager-writes policy for user, as
// charts/platform-operators/templates/admissionpolicies.yaml renders it (a copy: this module
// cannot render the chart; tests/chart runs the rendered one against the API server), and waits
// until the API server enforces it: asConfig (the manager's) is refused an unlabelled ConfigMap.
func installManagerWritesPolicy(t *testing.T, ctx context.Context, admin client.Client, asConfig *rest.Config, user, managerNS string) {
	t.Helper()
	owned := "has(variables.target.metadata.labels) && ('ops.platform-operators.io/secretsync' in variables.target.metadata.labels || 'ops.platform-operators.io/copyrequest' in variables.target.metadata.labels)"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "po-manager-writes"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets", "configmaps"}},
		}}}},
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "the-manager", Expression: fmt.Sprintf("request.userInfo.username == '%s'", user)}},
		Variables: []admissionregistrationv1.Variable{
			{Name: "target", Expression: "request.operation == 'CREATE' ? object : oldObject"},
			{Name: "owned", Expression: owned},
		},
		Validations: []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("request.namespace == '%s' || variables.owned", managerNS), Reason: ptr.To(metav1.StatusReasonForbidden),
			Message: "the platform-operators manager may write Secrets and ConfigMaps only when they carry its labels"}},
	}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "po-manager-writes"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
		PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
	}}
	for _, o := range []client.Object{policy, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	as, err := client.New(asConfig, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string { return "the manager-writes policy is not in force" }, func() bool {
		err := as.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "src"}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	})
}

// refusalCounter counts the manager's requests that an admission policy refused.
type refusalCounter struct {
	mu   sync.Mutex
	seen []string
}

func (r *refusalCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden && resp.Body != nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("ValidatingAdmissionPolicy")) {
				r.mu.Lock()
				r.seen = append(r.seen, req.Method+" "+req.URL.Path)
				r.mu.Unlock()
			}
		}
		return resp, err
	})
}

func (r *refusalCounter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *refusalCounter) samples() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[:min(len(r.seen), 5)]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
