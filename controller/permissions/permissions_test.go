package permissions

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

func TestExpand(t *testing.T) {
	cases := []struct {
		name       string
		namespaces map[string][]string
		// want are Check.String()s that must be present, wantAbsent those that must not.
		want, wantAbsent []string
		wantCount        int
	}{
		{
			name:       "a controller watching all namespaces is checked cluster-wide",
			namespaces: map[string][]string{"at": nil},
			want:       []string{"create jobs.batch in all namespaces", "update ats/status.ops.platform-operators.io in all namespaces"},
			wantCount:  len(byController["at"]),
		},
		{
			name:       "namespaced resources are checked in each watched namespace",
			namespaces: map[string][]string{"scheduledjob": {"a", "b"}},
			want:       []string{"list scheduledjobs.ops.platform-operators.io in namespace a", "list scheduledjobs.ops.platform-operators.io in namespace b"},
			wantAbsent: []string{"list scheduledjobs.ops.platform-operators.io in all namespaces"},
			wantCount:  2 * len(byController["scheduledjob"]),
		},
		{
			name:       "cluster-scoped resources are checked once, without a namespace",
			namespaces: map[string][]string{"secretsync": {"a"}},
			want:       []string{"list namespaces", "watch secretsyncs.ops.platform-operators.io", "create secrets in namespace a"},
		},
		{
			name:       "a permission two controllers need is checked once",
			namespaces: map[string][]string{"at": nil, "scheduledjob": nil},
			wantCount:  len(byController["at"]) + len(byController["scheduledjob"]) - 5 - 2, // jobs x5, events x2 shared
		},
		{name: "a controller with no needs adds no check", namespaces: map[string][]string{"unknown": nil}, wantCount: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Expand(tc.namespaces)
			var names []string
			for _, c := range got {
				names = append(names, c.String())
			}
			for _, w := range tc.want {
				if !slices.Contains(names, w) {
					t.Errorf("checks lack %q: %q", w, names)
				}
			}
			for _, w := range tc.wantAbsent {
				if slices.Contains(names, w) {
					t.Errorf("checks hold %q", w)
				}
			}
			if tc.wantCount > 0 || tc.want == nil {
				if len(got) != tc.wantCount {
					t.Errorf("%d checks, want %d: %q", len(got), tc.wantCount, names)
				}
			}
		})
	}
}

// TestGeneratedRoleGrantsEveryNeed keeps the needs honest: the ClusterRole controller-gen writes
// from the +kubebuilder:rbac markers (what the chart grants) must grant each of them.
func TestGeneratedRoleGrantsEveryNeed(t *testing.T) {
	data, err := os.ReadFile("../../charts/platform-operators/files/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	for controller, needs := range byController {
		for _, n := range needs {
			resource := n.Resource
			if n.Subresource != "" {
				resource += "/" + n.Subresource
			}
			granted := slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.APIGroups, n.Group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, n.Verb)
			})
			if !granted {
				t.Errorf("%s needs %s, which files/rbac/role.yaml does not grant: add a +kubebuilder:rbac marker or drop the need", controller, n)
			}
		}
	}
}

func TestChecker(t *testing.T) {
	cs := fake.NewClientset()
	// The API answers: everything is allowed except creating Jobs in namespace b.
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attr := r.Spec.ResourceAttributes
		r.Status.Allowed = !(attr.Resource == "jobs" && attr.Verb == "create" && attr.Namespace == "b")
		return true, r, nil
	})
	var logs []string
	log := funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{})
	c := &Checker{Reviews: cs.AuthorizationV1().SelfSubjectAccessReviews(), Checks: Expand(map[string][]string{"at": {"a", "b"}}), Log: log}
	if err := c.Ready(); err == nil {
		t.Fatal("ready before the first check, want not ready")
	}
	missing, err := c.Missing(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.record(missing, nil)
	err = c.Ready()
	if err == nil || !strings.Contains(err.Error(), "create jobs.batch in namespace b") {
		t.Fatalf("Ready() = %v, want it to name the missing permission", err)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], `"permission"="create jobs.batch in namespace b"`) || !strings.Contains(logs[0], `"controllers"=["at"]`) {
		t.Fatalf("logs = %q, want one line naming the missing permission and its controller", logs)
	}
	// The same answer again is not logged twice; once granted, the manager is ready.
	c.record(missing, nil)
	c.record(nil, nil)
	if err := c.Ready(); err != nil {
		t.Fatalf("Ready() = %v after every permission was granted", err)
	}
	if len(logs) != 2 || !strings.Contains(logs[1], "all granted") {
		t.Fatalf("logs = %q, want the missing line once, then all granted", logs)
	}
}
