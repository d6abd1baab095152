package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/permissions"
)

func TestCheckWatchNamespaces(t *testing.T) {
	cases := []struct {
		name                           string
		watch, enabled, podNS, sources []string
		wantErr                        string
	}{
		{name: "all namespaces allow every controller", enabled: []string{"secretsync", "at", "podwatcher"}, podNS: []string{"x"}},
		{name: "listed namespaces allow the namespaced controllers", watch: []string{"a", "b"}, enabled: []string{"at", "scheduledjob", "podwatcher"}, podNS: []string{"b"}},
		{name: "listed namespaces allow SecretSync with its default sources among them", watch: []string{"a", "src"}, enabled: []string{"at", "secretsync"}, sources: []string{"src"}},
		{name: "a default SecretSync's source outside the list is refused", watch: []string{"a"}, enabled: []string{"secretsync"}, sources: []string{"src"}, wantErr: `"src" is not in --watch-namespaces`},
		{name: "default sources do not matter when SecretSync is off", watch: []string{"a"}, enabled: []string{"at"}, sources: []string{"src"}},
		{name: "a pod watcher namespace outside the list is refused", watch: []string{"a"}, enabled: []string{"podwatcher"}, podNS: []string{"c"}, wantErr: `"c"`},
		{name: "pod watcher namespaces do not matter when it is off", watch: []string{"a"}, enabled: []string{"at"}, podNS: []string{"c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkWatchNamespaces(tc.watch, tc.enabled, tc.podNS, tc.sources)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// Every controller the manager knows has a role generated from its package's markers (the
// Makefile's RBAC_CONTROLLERS), so the self-check never silently checks nothing for one.
func TestEveryKnownControllerHasAnEmbeddedRole(t *testing.T) {
	rules, err := permissions.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range known {
		if len(rules[c.Name]) == 0 {
			t.Errorf("no generated role for controller %s in controller/permissions/roles: add it to RBAC_CONTROLLERS in the Makefile and run make manifests", c.Name)
		}
	}
	if len(rules[permissions.Manager]) == 0 {
		t.Errorf("no generated role of the manager's own markers")
	}
	ns := checkNamespaces([]string{"at"}, []string{"a"}, nil)
	if !slices.Equal(ns["at"], []string{"a"}) || !slices.Equal(ns[permissions.Manager], []string{"a"}) {
		t.Errorf("checkNamespaces = %v, want at and the manager's own needs in a", ns)
	}
}

// The event marker names the group the recorder really writes: a manager whose only Event
// permission is the generated one (events.k8s.io, no core Events) records an Event through
// mgr.GetEventRecorder, against a real API server with RBAC.
func TestRecorderWritesEventsWithTheGeneratedPermission(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rules, err := permissions.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var eventRules []rbacv1.PolicyRule
	for _, r := range rules[permissions.Manager] {
		if slices.Contains(r.Resources, "events") {
			eventRules = append(eventRules, r)
		}
	}
	const user = "system:serviceaccount:default:recorder"
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "recorder"}, Rules: eventRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "recorder"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "recorder"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "regarding"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	mgr, err := ctrl.NewManager(as, ctrl.Options{Scheme: testenv.Scheme(t), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	mgr.GetEventRecorder("permissions-test").Eventf(cm, nil, corev1.EventTypeNormal, "Checked", "Check", "recorded with events.k8s.io only")
	eventually(t, func() string {
		return "no Event recorded: the recorder needs a permission the generated role does not grant"
	}, func() bool {
		evs, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		return err == nil && slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool { return e.Reason == "Checked" && e.Regarding.Name == "regarding" })
	})
}
