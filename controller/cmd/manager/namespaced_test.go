package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
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
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "po-secretsync"}, Rules: cluster},
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
		c := meta.FindStatusCondition(got.Status.Conditions, secretsync.ConditionReady)
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
			return r == secretsync.ReasonNamespaceNotManaged && strings.Contains(m, "outside")
		})
		eventually(t, func() string { return "no NamespaceNotManaged Warning Event" }, func() bool { return warnings("pull", secretsync.ReasonNamespaceNotManaged) > 0 })
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
		if n := warnings("pull", secretsync.ReasonNamespaceNotManaged); n != 1 {
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
			return r == secretsync.ReasonNamespaceNotManaged && strings.Contains(m, `source namespace "outside"`)
		})
		eventually(t, func() string { return "no Warning Event" }, func() bool { return warnings("from-outside", secretsync.ReasonNamespaceNotManaged) == 1 })
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
			return r == secretsync.ReasonNamespaceSelectorUnsupported && strings.Contains(m, "team")
		})
		eventually(t, func() string { r, m := reason("by-name"); return r + ": " + m }, func() bool {
			r, _ := reason("by-name")
			return r == secretsync.ReasonSynced
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
			return r == secretsync.ReasonSourceNamespaceTerminating
		})
		time.Sleep(time.Second) // a pass that would remove them had its chance
		if !copied("team-a") || !copied("team-b") || !hasEntry("team-a") {
			t.Errorf("copies (team-a %v, team-b %v) or entries (team-a %v) removed while the source namespace is being deleted", copied("team-a"), copied("team-b"), hasEntry("team-a"))
		}
	})
}
