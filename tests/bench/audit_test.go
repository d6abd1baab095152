package main

import (
	"strings"
	"testing"
	"time"
)

// Audit lines as kube-apiserver writes them (Metadata level, trimmed): the bench's TokenRequest
// for the manager, a patch of a default ServiceAccount by the manager, the same TokenRequest by
// someone else, one outside the window, and a stage the policy omits anyway.
const auditSample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/platform-operators-system/serviceaccounts/platform-operators/token","verb":"create","user":{"username":"kubernetes-admin","groups":["system:masters"]},"userAgent":"bench/v0.0.0","objectRef":{"resource":"serviceaccounts","namespace":"platform-operators-system","name":"platform-operators","apiVersion":"v1","subresource":"token"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-26T08:00:10.000000Z","stageTimestamp":"2026-11-26T08:00:10.010000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"2","stage":"ResponseComplete","verb":"patch","user":{"username":"system:serviceaccount:platform-operators-system:platform-operators"},"userAgent":"manager","objectRef":{"resource":"serviceaccounts","namespace":"bench-0001","name":"default","apiVersion":"v1"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-26T08:00:12.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"3","stage":"ResponseComplete","verb":"create","user":{"username":"system:serviceaccount:kube-system:someone"},"objectRef":{"resource":"serviceaccounts","namespace":"platform-operators-system","name":"platform-operators","subresource":"token"},"responseStatus":{"code":201},"stageTimestamp":"2026-11-26T08:00:13.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"4","stage":"ResponseComplete","verb":"patch","user":{"username":"kubernetes-admin"},"objectRef":{"resource":"secrets","namespace":"bench-0001","name":"x"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-26T08:01:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"5","stage":"RequestReceived","verb":"patch","user":{"username":"kubernetes-admin"},"objectRef":{"resource":"secrets","namespace":"bench-0001","name":"x"},"stageTimestamp":"2026-11-26T08:00:11.000000Z"}
`

func TestOnlyTheBenchsOwnTokenRequestIsLeftOut(t *testing.T) {
	from := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	ws, err := parseAuditWrites([]byte(auditSample), from, from.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 {
		t.Fatalf("%d writes in the window, want 3 (completed, inside): %+v", len(ws), ws)
	}
	var counted, excluded []auditWrite
	for _, w := range ws {
		if benchTokenRequest(w, "kubernetes-admin", "platform-operators-system/platform-operators") {
			excluded = append(excluded, w)
		} else {
			counted = append(counted, w)
		}
	}
	if len(excluded) != 1 || excluded[0].User != "kubernetes-admin" || excluded[0].target() != "serviceaccounts/token" || excluded[0].Code != 201 {
		t.Errorf("left out %+v, want only the bench's TokenRequest", excluded)
	}
	// The manager's patch and a TokenRequest by another user both count, as serviceaccounts.
	if n := auditCounts(counted); n["serviceaccounts"] != 2 || len(n) != 1 {
		t.Errorf("counted %v, want serviceaccounts 2", n)
	}
	got := strings.Join(writers(counted), "; ")
	for _, want := range []string{"1 × `system:serviceaccount:platform-operators-system:platform-operators patch serviceaccounts`", "1 × `system:serviceaccount:kube-system:someone create serviceaccounts/token`"} {
		if !strings.Contains(got, want) {
			t.Errorf("writers %q, want %q among them", got, want)
		}
	}
}
