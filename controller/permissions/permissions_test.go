package permissions

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// testScope is the API's answer for the resources of the generated roles: Namespaces and
// SecretSyncs are cluster-scoped, the rest live in namespaces.
func testScope(group, resource string) (bool, error) {
	return resource != "namespaces" && resource != "secretsyncs", nil
}

func testByController(t *testing.T) map[string][]Need {
	t.Helper()
	by, err := ByController(testScope)
	if err != nil {
		t.Fatal(err)
	}
	return by
}

func TestExpand(t *testing.T) {
	byController := testByController(t)
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
			want:       []string{"list namespaces", "watch secretsyncs.ops.platform-operators.io", "update secretsyncs/status.ops.platform-operators.io", "create secrets in namespace a"},
		},
		{
			name:       "a permission two controllers need is checked once",
			namespaces: map[string][]string{"at": nil, "scheduledjob": nil},
			wantCount:  len(byController["at"]) + len(byController["scheduledjob"]) - 5, // jobs x5 shared
		},
		{
			name:       "the manager's own needs are Events in the group its recorder writes",
			namespaces: map[string][]string{Manager: {"a"}},
			want:       []string{"create events.events.k8s.io in namespace a", "patch events.events.k8s.io in namespace a"},
			wantCount:  2,
		},
		{name: "a controller with no needs adds no check", namespaces: map[string][]string{"unknown": nil}, wantCount: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Expand(byController, tc.namespaces)
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

// grant is one (group, resource, verb) a role grants.
type grant struct{ group, resource, verb string }

func grants(rules []rbacv1.PolicyRule) map[grant]bool {
	out := map[grant]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[grant{g, res, v}] = true
				}
			}
		}
	}
	return out
}

// TestSelfCheckIsTheChartsRole: what the self-check asks is exactly what the chart grants. The
// embedded per-controller roles and the chart's ClusterRole (files/rbac/role.yaml) come from the
// same markers; this fails when one was regenerated and the other not (make verify too), or when a
// marker lives in a package that has no role here (add it to RBAC_CONTROLLERS in the Makefile).
func TestSelfCheckIsTheChartsRole(t *testing.T) {
	data, err := os.ReadFile("../../charts/platform-operators/files/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	chart := grants(role.Rules)
	self := map[grant]bool{}
	for _, n := range slices.Concat(slices.Collect(maps.Values(testByController(t)))...) {
		r := n.Resource
		if n.Subresource != "" {
			r += "/" + n.Subresource
		}
		self[grant{n.Group, r, n.Verb}] = true
	}
	for g := range chart {
		if !self[g] {
			t.Errorf("the chart grants %v, which no embedded role holds: the self-check would not notice it missing", g)
		}
	}
	for g := range self {
		if !chart[g] {
			t.Errorf("the self-check asks for %v, which the chart does not grant: the manager would never be ready", g)
		}
	}
}

// Events go through client-go's tools/events recorder (events.k8s.io/v1): the needs ask for that
// group, and for core Events nowhere (leader election's core Events have a Role of their own).
func TestEventsAreCheckedInTheRecordersGroup(t *testing.T) {
	for name, needs := range testByController(t) {
		for _, n := range needs {
			if n.Resource == "events" && n.Group != "events.k8s.io" {
				t.Errorf("%s needs %s: the recorder never writes core Events", name, n)
			}
		}
	}
	if !slices.Contains(testByController(t)[Manager], Need{Group: "events.k8s.io", Resource: "events", Verb: "create", Namespaced: true}) {
		t.Errorf("the manager's needs lack create events.events.k8s.io: %v", testByController(t)[Manager])
	}
}

func TestNeedsFromRules(t *testing.T) {
	got, err := NeedsFromRules([]rbacv1.PolicyRule{
		{APIGroups: []string{"ops.platform-operators.io"}, Resources: []string{"ats", "ats/status"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}},
	}, testScope)
	if err != nil {
		t.Fatal(err)
	}
	want := []Need{
		{Group: "ops.platform-operators.io", Resource: "ats", Verb: "get", Namespaced: true},
		{Group: "ops.platform-operators.io", Resource: "ats", Verb: "patch", Namespaced: true},
		{Group: "ops.platform-operators.io", Resource: "ats", Subresource: "status", Verb: "get", Namespaced: true},
		{Group: "ops.platform-operators.io", Resource: "ats", Subresource: "status", Verb: "patch", Namespaced: true},
		{Group: "", Resource: "namespaces", Verb: "list", Namespaced: false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("needs = %+v, want %+v", got, want)
	}
	if _, err := NeedsFromRules([]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, testScope); err == nil {
		t.Error("a non-resource rule was accepted, want an error (a SelfSubjectAccessReview of it is not built)")
	}
}

func TestChecker(t *testing.T) {
	cs := fake.NewClientset()
	// The API answers: everything is allowed except creating Jobs in namespace b.
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attr := r.Spec.ResourceAttributes
		r.Status.Allowed = attr.Resource != "jobs" || attr.Verb != "create" || attr.Namespace != "b"
		return true, r, nil
	})
	var logs []string
	log := funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{})
	c := &Checker{Reviews: cs.AuthorizationV1().SelfSubjectAccessReviews(), Checks: Expand(testByController(t), map[string][]string{"at": {"a", "b"}}), Log: log}
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

// TestStartRechecksUntilGranted runs Start against an API that denies one permission for the
// first rounds of checks and errors once: Start keeps re-checking past the denial and the
// error, returns once everything is granted, and a cancelled ctx stops it without an error.
func TestStartRechecksUntilGranted(t *testing.T) {
	checks := []Check{
		{Need: Need{Verb: "create", Group: "batch", Resource: "jobs", Namespaced: true}, Namespace: "b"},
		{Need: Need{Verb: "get", Resource: "secrets", Namespaced: true}, Namespace: "b"},
	}
	newChecker := func(grantAfter int) (*Checker, *atomic.Int32) {
		var rounds atomic.Int32
		cs := fake.NewClientset()
		cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			attr := r.Spec.ResourceAttributes
			if attr.Resource == "jobs" {
				// The first check of each round counts the rounds.
				n := rounds.Add(1)
				if n == 2 {
					return true, nil, errors.New("the API server is restarting")
				}
				r.Status.Allowed = grantAfter > 0 && int(n) > grantAfter
				return true, r, nil
			}
			r.Status.Allowed = true
			return true, r, nil
		})
		return &Checker{Reviews: cs.AuthorizationV1().SelfSubjectAccessReviews(), Checks: checks,
			Log: logr.Discard(), Interval: time.Millisecond}, &rounds
	}

	t.Run("returns once every permission is granted", func(t *testing.T) {
		c, rounds := newChecker(3)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Fatalf("Start() = %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("Start returned only when ctx ended, want it to return once granted")
		}
		if got := rounds.Load(); got != 4 {
			t.Fatalf("Start checked %d rounds, want 4 (denied, error, denied, granted)", got)
		}
		if err := c.Ready(); err != nil {
			t.Fatalf("Ready() = %v after Start returned", err)
		}
	})
	t.Run("a cancelled ctx stops the re-checks without an error", func(t *testing.T) {
		c, rounds := newChecker(0)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return rounds.Load() >= 3, nil
		}); err != nil {
			t.Fatalf("Start did not re-check 3 times in 30 s: %v", err)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Start() = %v after ctx was cancelled, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Start did not return after ctx was cancelled")
		}
		if err := c.Ready(); err == nil || !strings.Contains(err.Error(), "create jobs.batch in namespace b") {
			t.Fatalf("Ready() = %v, want the denied permission named", err)
		}
	})
}
