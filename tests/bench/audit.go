package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The steady-state benchmark names every writer through the API server's audit log: the
// counters of apiserver_request_total say how many writes a resource got, not who made them.

// steadyAuditPolicy logs, at Metadata level (who, what, which subresource; no bodies), every
// write to the resources the steady-state benchmark counts, and nothing else.
const steadyAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
  resources:
  - group: ""
    resources: [secrets, serviceaccounts, serviceaccounts/*, events]
  - group: events.k8s.io
    resources: [events]
  - group: ops.platform-operators.io
    resources: [secretsyncs, secretsyncs/*]
- level: None
`

// auditWrite is one write the audit log recorded.
type auditWrite struct {
	User, UserAgent, Verb string
	Resource, Subresource string
	Namespace, Name       string
	Code                  int
	At                    time.Time
}

// target is resource[/subresource], as the report's columns name them.
func (w auditWrite) target() string {
	if w.Subresource != "" {
		return w.Resource + "/" + w.Subresource
	}
	return w.Resource
}

// parseAuditWrites reads the audit log's JSON lines and returns the completed writes whose
// stageTimestamp is in [from, to).
func parseAuditWrites(log []byte, from, to time.Time) ([]auditWrite, error) {
	var out []auditWrite
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct {
			Stage          string           `json:"stage"`
			Verb           string           `json:"verb"`
			UserAgent      string           `json:"userAgent"`
			StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
			User           struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				Namespace   string `json:"namespace"`
				Name        string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("audit log line %.200s: %w", line, err)
		}
		if ev.Stage != "ResponseComplete" || ev.ObjectRef == nil {
			continue
		}
		at := ev.StageTimestamp.Time
		if at.Before(from) || !at.Before(to) {
			continue
		}
		w := auditWrite{User: ev.User.Username, UserAgent: ev.UserAgent, Verb: ev.Verb,
			Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource,
			Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, At: at}
		if ev.ResponseStatus != nil {
			w.Code = ev.ResponseStatus.Code
		}
		out = append(out, w)
	}
	return out, sc.Err()
}

// mutating is true for the audit verbs that write.
func mutating(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// benchTokenRequest is the bench's own TokenRequest: testbed.RunAsChart asks for a token of the
// chart's ServiceAccount (POST serviceaccounts/<name>/token, audit verb create, as the bench's
// admin user) each time it starts the manager, to write the manager's kubeconfig. The API server
// counts it as a serviceaccounts write (apiserver_request_total resource="serviceaccounts",
// subresource="token"), but it changes no ServiceAccount and the manager does not make it: it is
// left out of the steady-state target, by user, verb and subresource, and listed as what it is.
func benchTokenRequest(w auditWrite, benchUser, managerSA string) bool {
	ns, name, _ := strings.Cut(managerSA, "/")
	return w.User == benchUser && w.Verb == "create" && w.Resource == "serviceaccounts" && w.Subresource == "token" &&
		w.Namespace == ns && w.Name == name
}

// writers sums writes by "user verb resource[/subresource]", most first.
func writers(ws []auditWrite) []string {
	n := map[string]int{}
	for _, w := range ws {
		n[fmt.Sprintf("%s %s %s", w.User, w.Verb, w.target())]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if n[keys[a]] != n[keys[b]] {
			return n[keys[a]] > n[keys[b]]
		}
		return keys[a] < keys[b]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%d × `%s`", n[k], k)
	}
	return out
}

// whoAmI is the user the API server sees for cs (SelfSubjectReview).
func whoAmI(ctx context.Context, cs kubernetes.Interface) (string, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}
