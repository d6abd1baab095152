package main

import (
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"
)

func TestManagerRequestsCountsOnlyTheManagersRequestsBesidesWatchesAndLeases(t *testing.T) {
	ws := []auditWrite{
		{User: managerUser, Verb: "get", Resource: "configmaps"},
		{User: managerUser, Verb: "get", Resource: "configmaps"},
		{User: managerUser, Verb: "patch", Resource: "copyrequests", Subresource: "status"},
		{User: managerUser, Verb: "watch", Resource: "secrets"},
		{User: managerUser, Verb: "update", Resource: "leases"},
		{User: managerUser, Verb: "get", Resource: "leases"},
		{User: "kubernetes-admin", Verb: "patch", Resource: "configmaps"},
		{User: "system:serviceaccount:kube-system:job-controller", Verb: "create", Resource: "pods"},
	}
	counts, leases := managerRequests(ws, managerUser)
	want := map[string]int{"get configmaps": 2, "patch copyrequests/status": 1}
	if len(counts) != len(want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("counts[%q] = %d, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	if leases != 2 {
		t.Errorf("leases %d, want 2", leases)
	}
	if total(counts) != 3 {
		t.Errorf("total %d, want 3", total(counts))
	}
}

func TestTheAuditPolicyLogsTheManagerFirstAndKeepsTheSteadyRules(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		steady, amp          bool
		rules                int
		managerFirst, writes bool
	}{
		{name: "steady alone keeps its rules", steady: true, rules: 2, writes: true},
		{name: "amplification alone logs the manager and nothing else", amp: true, rules: 2, managerFirst: true},
		{name: "both log the manager first, then the steady writes", steady: true, amp: true, rules: 3, managerFirst: true, writes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p auditv1.Policy
			if err := yaml.UnmarshalStrict([]byte(auditPolicy(tc.steady, tc.amp)), &p); err != nil {
				t.Fatalf("%v:\n%s", err, auditPolicy(tc.steady, tc.amp))
			}
			if p.Kind != "Policy" || p.APIVersion != "audit.k8s.io/v1" || len(p.Rules) != tc.rules {
				t.Fatalf("kind %q, %d rules, want Policy with %d:\n%s", p.Kind, len(p.Rules), tc.rules, auditPolicy(tc.steady, tc.amp))
			}
			first := p.Rules[0]
			if got := len(first.Users) == 1 && first.Users[0] == managerUser && first.Level == auditv1.LevelMetadata && len(first.Verbs) == 0 && len(first.Resources) == 0; got != tc.managerFirst {
				t.Errorf("first rule %+v: logs every request of %s = %v, want %v", first, managerUser, got, tc.managerFirst)
			}
			hasWrites := false
			for _, r := range p.Rules {
				hasWrites = hasWrites || len(r.Verbs) > 0 && r.Level == auditv1.LevelMetadata
			}
			if hasWrites != tc.writes {
				t.Errorf("steady's write rule present = %v, want %v", hasWrites, tc.writes)
			}
			if last := p.Rules[len(p.Rules)-1]; last.Level != auditv1.LevelNone || len(last.Users)+len(last.Verbs)+len(last.Resources) > 0 {
				t.Errorf("last rule %+v, want level None (nothing else logged)", last)
			}
		})
	}
}

func TestTheAmplificationSectionShowsBeforeBesideAfterPerWrite(t *testing.T) {
	o := amplificationOptions{requests: 30, offerBytes: 200 << 10, namespaces: 100, writes: 10, interval: 2 * time.Second, settle: 10 * time.Second}
	before := &ampResult{Commit: "8ae94dc", Src: "/work/wt/before", Load: "3.0, 2.0, 1.0", Windows: []ampWindow{
		{Kind: ampOfferTouch, Writes: 10, Counts: map[string]int{"get configmaps": 300}},
	}}
	after := &ampResult{Commit: "abc1234", Load: "1.0, 1.0, 1.0", Windows: []ampWindow{
		{Kind: ampQuiet, Counts: map[string]int{}, Leases: 7},
		{Kind: ampOfferTouch, Writes: 10, Counts: map[string]int{"get configmaps": 10}},
		{Kind: ampRunNow, Writes: 10, Counts: map[string]int{"create jobs": 2, "patch scheduledjobs/status": 4}},
	}}
	s := amplificationSection(after, before, o, "go -C tests run ./bench -scenarios=amplification")
	for _, want := range []string{
		"| " + ampOfferTouch + " | 300 (30.0) | 10 (1.0) | get configmaps 300 | get configmaps 10 |",
		"| " + ampQuiet + " | not measured | 0 |  | none |",
		"| " + ampRunNow + " | not measured | 6 (0.6) |  | patch scheduledjobs/status 4, create jobs 2 |",
		"manager and chart of 8ae94dc",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}
	alone := amplificationSection(after, nil, o, "make bench")
	if want := "| " + ampOfferTouch + " | 10 (1.0) | get configmaps 10 |"; !strings.Contains(alone, want) {
		t.Errorf("section without before lacks %q:\n%s", want, alone)
	}
}
