package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

func testSync(mod ...func(*v1alpha1.SecretSync)) *v1alpha1.SecretSync {
	ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "pull", Generation: 1}, Spec: v1alpha1.SecretSyncSpec{
		Source: v1alpha1.SecretSyncSource{Namespace: "secretsync", Name: "harbor"},
		Target: v1alpha1.SecretSyncTarget{ExcludeNamespaces: []string{"kube-*"}, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}},
	}, Status: v1alpha1.SecretSyncStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Synced", Message: "synced 1/1 copies"}}}}
	for _, m := range mod {
		m(ss)
	}
	return ss
}

func testNS(name string, lbls map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func testSource() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "harbor"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("s3cr3t")}}
}

// inStepCopy is the copy the manager writes: copyplan.Wanted, signed (any proof: the CLI cannot check it).
func inStepCopy(ss *v1alpha1.SecretSync, ns string) *corev1.Secret {
	w, _ := copyplan.Wanted(ss, testSource(), ns)
	w.Annotations[keys.AnnotationOwnership] = "v1.proof"
	return w
}

func TestDiagnose(t *testing.T) {
	tenant := testNS("team-a", map[string]string{"tenant": "yes"})
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "harbor"}, Data: map[string][]byte{"token": []byte("mine")}}
	otherSync := inStepCopy(testSync(func(s *v1alpha1.SecretSync) { s.Name = "other" }), "team-a")
	stale := inStepCopy(testSync(), "team-a")
	stale.Data = map[string][]byte{"token": []byte("old")}
	held := inStepCopy(testSync(), "team-a")
	held.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	held.Finalizers = []string{"example.com/backup"}
	cases := []struct {
		name        string
		ss          *v1alpha1.SecretSync
		ns          *corev1.Namespace
		sources     []*corev1.Secret
		sourcesErr  string
		live        *corev1.Secret
		verdict     string
		messagePart string
	}{
		{"a namespace that does not exist", testSync(), nil, nil, "", nil, VerdictNamespaceNotFound, "does not exist"},
		{"a SecretSync whose source namespace is missing copies nothing", testSync(func(s *v1alpha1.SecretSync) {
			s.Status.Conditions[0] = metav1.Condition{Type: "Ready", Status: "False", Reason: copyplan.ReasonSourceNamespaceNotFound, Message: "namespace secretsync does not exist"}
		}), tenant, nil, "", nil, VerdictBlocked, "SourceNamespaceNotFound"},
		{"a SecretSync whose source namespace a namespaced manager does not manage copies nothing", testSync(func(s *v1alpha1.SecretSync) {
			s.Status.Conditions[0] = metav1.Condition{Type: "Ready", Status: "False", Reason: copyplan.ReasonNamespaceNotManaged, Message: "source namespace \"secretsync\" is not among the namespaces the manager works in"}
		}), tenant, []*corev1.Secret{testSource()}, "", nil, VerdictBlocked, "NamespaceNotManaged"},
		{"a held copy whose source cannot be read is still held", testSync(), tenant, nil, "secrets is forbidden", held, VerdictHeld, "being deleted"},
		{"another SecretSync's copy is a conflict whether or not the source can be read", testSync(), tenant, nil, "secrets is forbidden", otherSync, VerdictConflict, `is managed by SecretSync "other"`},
		{"a namespace without the selector's label", testSync(), testNS("team-b", nil), []*corev1.Secret{testSource()}, "", nil, VerdictNotATarget, "namespace excluded by selector"},
		{"a namespace an exclude glob names", testSync(), testNS("kube-team", map[string]string{"tenant": "yes"}), []*corev1.Secret{testSource()}, "", nil, VerdictNotATarget, "excludeNamespaces excludes it (kube-*)"},
		{"a namespace outside includeNamespaces", testSync(func(s *v1alpha1.SecretSync) { s.Spec.Target.IncludeNamespaces = []string{"prod-*"} }), tenant, []*corev1.Secret{testSource()}, "", nil, VerdictNotATarget, "includeNamespaces does not include it"},
		{"the source namespace", testSync(func(s *v1alpha1.SecretSync) { s.Spec.Target.NamespaceSelector = nil }), testNS("secretsync", nil), []*corev1.Secret{testSource()}, "", nil, VerdictNotATarget, "source namespace"},
		{"a named source that does not exist", testSync(), tenant, nil, "", nil, VerdictNoSource, "does not exist"},
		{"no copy yet", testSync(), tenant, []*corev1.Secret{testSource()}, "", nil, VerdictMissing, "there is no copy yet"},
		{"a Secret without the add-on's label holds the name", testSync(), tenant, []*corev1.Secret{testSource()}, "", foreign, VerdictConflict, "is not managed by this SecretSync"},
		{"another SecretSync's copy holds the name", testSync(), tenant, []*corev1.Secret{testSource()}, "", otherSync, VerdictConflict, `is managed by SecretSync "other"`},
		{"a copy held Terminating by a finalizer", testSync(), tenant, []*corev1.Secret{testSource()}, "", held, VerdictHeld, "finalizers [example.com/backup]"},
		{"a copy whose data is older than the source's", testSync(), tenant, []*corev1.Secret{testSource()}, "", stale, VerdictOutOfStep, "data differs from the source's"},
		{"a copy in step", testSync(), tenant, []*corev1.Secret{testSource()}, "", inStepCopy(testSync(), "team-a"), VerdictInStep, "every copy is in step (1)"},
		{"a copy of ours whose source cannot be read", testSync(), tenant, nil, "secrets is forbidden", inStepCopy(testSync(), "team-a"), VerdictUnknown, "cannot be compared"},
		{"a missing copy the API server refused says the controller's reason", testSync(func(s *v1alpha1.SecretSync) {
			s.Status.Failures = []v1alpha1.TargetFailure{{Namespace: "team-a", Name: "harbor", Reason: "TooLarge", Message: "the copy is too large"}}
		}), tenant, []*corev1.Secret{testSource()}, "", nil, VerdictMissing, "TooLarge: the copy is too large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := whyFacts{ss: tc.ss, ns: tc.ns, sources: tc.sources, sourcesErr: tc.sourcesErr, live: map[string]*corev1.Secret{}}
			if tc.live != nil {
				f.live[tc.live.Name] = tc.live
			}
			rep := diagnose(f)
			if rep.Verdict != tc.verdict || !strings.Contains(rep.Message, tc.messagePart) {
				t.Fatalf("verdict %s: %s\nwant %s containing %q", rep.Verdict, rep.Message, tc.verdict, tc.messagePart)
			}
			var b bytes.Buffer
			whyText(&b, rep)
			if !strings.Contains(b.String(), tc.verdict) {
				t.Errorf("the text does not name the verdict:\n%s", b.String())
			}
		})
	}
}

func TestRunsTable(t *testing.T) {
	at := func(s string) *metav1.Time {
		tm, _ := time.Parse(time.RFC3339, s)
		return &metav1.Time{Time: tm}
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	runs := []v1alpha1.ScheduledJobRun{
		{ScheduledTime: *at("2026-11-27T02:00:00Z"), JobName: "report-29400000", StartTime: at("2026-11-27T02:00:01Z"), CompletionTime: at("2026-11-27T02:03:31Z"), Result: v1alpha1.RunSucceeded},
		{ScheduledTime: *at("2026-11-26T02:00:00Z"), Result: v1alpha1.RunSkipped, Reason: "JobAlreadyActive"},
		{ScheduledTime: *at("2026-11-25T02:00:00Z"), JobName: "report-29397120", Result: v1alpha1.RunFailed, Reason: "JobRejected", Message: "exceeded quota:\n count/jobs.batch=0"},
	}
	var b bytes.Buffer
	c := &cli{out: &b}
	if err := printReport(c, runs, func(w io.Writer, runs []v1alpha1.ScheduledJobRun) { runsTable(w, runs, berlin) }); err != nil {
		t.Fatal(err)
	}
	want := `
JOB               SCHEDULED                 STARTED                   FINISHED                  DURATION   RESULT      REASON
report-29400000   2026-11-27 03:00:00 CET   2026-11-27 03:00:01 CET   2026-11-27 03:03:31 CET   3m30s      Succeeded   -
-                 2026-11-26 03:00:00 CET   -                         -                         -          Skipped     JobAlreadyActive
report-29397120   2026-11-25 03:00:00 CET   -                         -                         -          Failed      JobRejected: exceeded quota:\n count/jobs.batch=0`
	if got := trimLines(b.String()); got != trimLines(want) {
		t.Errorf("table:\n%s\nwant:\n%s", got, trimLines(want))
	}
	b.Reset()
	runsTable(&b, nil, time.UTC)
	if !strings.Contains(b.String(), "No runs yet.") {
		t.Errorf("no runs: %q", b.String())
	}
}
