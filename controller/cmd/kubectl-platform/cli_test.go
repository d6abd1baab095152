package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// kubeconfig writes a kubeconfig for cfg whose current context points nowhere: every command
// must honour --context (and the context's namespace, "reports", when -n is not given).
func kubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "reports"}
	kc.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "admin"}
	kc.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCommandsAgainstAnAPIServer drives every command through run (flags, exit codes, output)
// against envtest's API server with the chart's CRDs. No controller runs: the status the
// commands read is written here, as the controllers write it.
func TestCommandsAgainstAnAPIServer(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	path := kubeconfig(t, cfg)
	now := time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC)
	cmd := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{"--kubeconfig", path, "--context", "envtest"}, args...), &out, &errOut, func() time.Time { return now })
		return out.String(), errOut.String(), code
	}
	for _, ns := range []string{"reports", "secretsync", "team-a", "team-b", "team-c"} {
		lbls := map[string]string{}
		if ns != "team-b" {
			lbls["tenant"] = "yes"
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbls}}); err != nil {
			t.Fatal(err)
		}
	}

	sj := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "reports"}, Spec: v1alpha1.ScheduledJobSpec{
		Schedule: "30 2 * * *", TimeZone: ptr.To("Europe/Berlin"),
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "r", Image: "busybox"}}}}}},
	}}
	if err := c.Create(ctx, sj); err != nil {
		t.Fatal(err)
	}

	t.Run("run-now sets the run-now annotation and prints the token and the Job's name", func(t *testing.T) {
		out, errOut, code := cmd("run-now", "nightly", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var res runNowResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		got := &v1alpha1.ScheduledJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil {
			t.Fatal(err)
		}
		if want := strconv.FormatInt(now.Unix(), 10); res.Token != want || got.Annotations[keys.AnnotationRunNow] != want {
			t.Fatalf("token %q, annotation %q, want the Unix time %s", res.Token, got.Annotations[keys.AnnotationRunNow], want)
		}
		if !strings.HasPrefix(res.Job, "nightly-r") || res.Namespace != "reports" {
			t.Errorf("result %+v: want the Job nightly-r<hash> in the context's namespace", res)
		}
		if _, errOut, code := cmd("run-now", "nightly", "--token", res.Token); code != exitFailed || !strings.Contains(errOut, "used already") {
			t.Errorf("the same token again: exit %d, %q; want 1 and a clear message", code, errOut)
		}
		if out, _, code := cmd("run-now", "nightly", "--token", "second"); code != 0 || !strings.Contains(out, "token second") {
			t.Errorf("a new token: exit %d, %q", code, out)
		}
		if _, errOut, code := cmd("run-now", "missing", "-n", "reports"); code != exitFailed || !strings.Contains(errOut, "not found") {
			t.Errorf("a missing ScheduledJob: exit %d, %q", code, errOut)
		}
		if _, _, code := cmd("run-now"); code != exitUsage {
			t.Errorf("no name: exit %d, want %d", code, exitUsage)
		}
	})

	t.Run("runs prints status.runs as a table and as YAML", func(t *testing.T) {
		got := &v1alpha1.ScheduledJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil {
			t.Fatal(err)
		}
		start := metav1.NewTime(time.Date(2026, 10, 24, 0, 30, 2, 0, time.UTC))
		end := metav1.NewTime(start.Add(95 * time.Second))
		got.Status.Runs = []v1alpha1.ScheduledJobRun{
			{ScheduledTime: metav1.NewTime(time.Date(2026, 10, 24, 0, 30, 0, 0, time.UTC)), JobName: "nightly-abcde-29876430", StartTime: &start, CompletionTime: &end, Result: v1alpha1.RunSucceeded},
			{ScheduledTime: metav1.NewTime(time.Date(2026, 10, 23, 0, 30, 0, 0, time.UTC)), Result: v1alpha1.RunSkipped, Reason: "MissedDeadline"},
		}
		if err := c.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := cmd("runs", "nightly")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("kubectl platform runs nightly:\n%s", out)
		for _, want := range []string{"JOB", "nightly-abcde-29876430", "2026-10-24 02:30:00 CEST", "1m35s", "Succeeded", "Skipped", "MissedDeadline"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		out, _, code = cmd("runs", "scheduledjob/nightly", "-n", "reports", "-o", "yaml")
		if code != 0 || !strings.Contains(out, "jobName: nightly-abcde-29876430") || !strings.Contains(out, "result: Skipped") {
			t.Errorf("-o yaml: exit %d\n%s", code, out)
		}
		if _, _, code := cmd("runs", "cronjob/nightly"); code != exitUsage {
			t.Errorf("an unknown kind: exit %d, want %d", code, exitUsage)
		}
	})

	t.Run("next lists a ScheduledJob's slots with the fall-back night marked", func(t *testing.T) {
		out, errOut, code := cmd("next", "nightly", "-c", "2", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rep nextReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.ScheduledJob != "reports/nightly" || rep.TimeZone != "Europe/Berlin" || len(rep.Slots) != 2 ||
			rep.Slots[0].UTC != "2026-10-25T00:30:00Z" || rep.Slots[0].DST != "RunsOnce" || rep.Slots[1].UTC != "2026-10-26T01:30:00Z" {
			t.Errorf("report %+v", rep)
		}
		if _, _, code := cmd("next", "nightly", "--schedule", "* * * * *"); code != exitUsage {
			t.Errorf("a name and --schedule: exit %d, want %d", code, exitUsage)
		}
		if _, errOut, code := cmd("next", "--schedule", "61 * * * *"); code != exitFailed || !strings.Contains(errOut, "unparseable") {
			t.Errorf("a bad schedule: exit %d, %q", code, errOut)
		}
	})

	// SecretSync: a source, a target with the copy in step, one the selector leaves out, one
	// whose name a Secret of the tenant's holds.
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "harbor"}, Data: map[string][]byte{"token": []byte("s3cr3t")}}
	ss := testSync()
	ss.Status = v1alpha1.SecretSyncStatus{}
	for _, o := range []client.Object{src, ss} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, types.NamespacedName{Name: ss.Name}, ss); err != nil {
		t.Fatal(err)
	}
	ss.Status = v1alpha1.SecretSyncStatus{ObservedGeneration: ss.Generation, Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "Conflict", Message: "1 targets are held by Secrets this SecretSync may not manage; see status.failures", LastTransitionTime: metav1.NewTime(now)}},
		Failures: []v1alpha1.TargetFailure{{Namespace: "team-c", Name: "harbor", Reason: "Conflict", Message: "Secret team-c/harbor exists and is not managed by platform-operators"}}}
	if err := c.Status().Update(ctx, ss); err != nil {
		t.Fatal(err)
	}
	// The controller's Event on the SecretSync, where it records them: the manager's namespace.
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "platform-operators-system", Name: "pull.conflict"},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SecretSync", Name: "pull", Namespace: "platform-operators-system"},
		Type:           corev1.EventTypeWarning, Reason: "Conflict", Message: "Secret team-c/harbor exists and is not managed by platform-operators",
		LastTimestamp: metav1.NewTime(now), FirstTimestamp: metav1.NewTime(now), Count: 1, Source: corev1.EventSource{Component: "platform-operators"}}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform-operators-system"}}, ev, inStepCopy(ss, "team-a"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "harbor"}, Data: map[string][]byte{"token": []byte("the tenant's own")}}} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ ns, verdict, part string }{
		{"team-a", VerdictInStep, "every copy is in step"},
		{"team-b", VerdictNotATarget, "namespace excluded by selector"},
		{"team-c", VerdictConflict, "Secret team-c/harbor is not managed by this SecretSync"},
		{"team-d", VerdictNamespaceNotFound, "does not exist"},
	} {
		t.Run("why in "+tc.ns+" says "+tc.verdict, func(t *testing.T) {
			out, errOut, code := cmd("why", "pull", "-n", tc.ns, "-o", "json")
			// docs/cli.md: an object not found exits 1, a namespace too (issue 46); the report
			// is printed all the same.
			if want := map[bool]int{true: exitFailed, false: 0}[tc.verdict == VerdictNamespaceNotFound]; code != want {
				t.Fatalf("exit %d, want %d: %s", code, want, errOut)
			}
			var rep whyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if rep.Verdict != tc.verdict || !strings.Contains(rep.Message, tc.part) {
				t.Fatalf("verdict %s: %s; want %s, %q", rep.Verdict, rep.Message, tc.verdict, tc.part)
			}
			text, _, _ := cmd("why", "pull", "-n", tc.ns)
			t.Logf("kubectl platform why pull -n %s:\n%s", tc.ns, text)
			if !strings.Contains(text, tc.verdict) {
				t.Errorf("the table does not say %s:\n%s", tc.verdict, text)
			}
		})
	}
	t.Run("why compares data with the source's and reads the status's failure", func(t *testing.T) {
		out, _, _ := cmd("why", "pull", "-n", "team-c", "-o", "json")
		var rep whyReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Copies) != 1 || rep.Copies[0].Failure == nil || rep.Copies[0].SourceDigest == rep.Copies[0].CopyDigest || rep.Copies[0].CopyDigest == "" {
			t.Errorf("copies %+v: want the failure and two different digests", rep.Copies)
		}
		if len(rep.Events) != 1 || rep.Events[0].Reason != "Conflict" || rep.Events[0].Object != "SecretSync/pull" || len(rep.Notes) != 0 {
			t.Errorf("events %+v, notes %v: want the SecretSync's Conflict Event from the manager's namespace and nothing unreadable", rep.Events, rep.Notes)
		}
		// Issue 45: a tenant writes Events about its own copy: a newline forged a table row,
		// escape sequences reached the terminal, and Events dated in the future came first.
		// Every format prints them escaped and bounded, ordered by the server's time.
		hostile := "copy ok\nWarning\tConflict\tSecretSync/pull\tFORGED row \x1b]52;c;cGF5bG9hZA==\x07\x1b[2J\u202e\x9b31m" + strings.Repeat("x", 3000)
		for i := range 5 {
			if err := c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: fmt.Sprintf("harbor.tenant%d", i)},
				InvolvedObject: corev1.ObjectReference{Kind: "Secret", Name: "harbor", Namespace: "team-c"},
				Type:           corev1.EventTypeNormal, Reason: "Synced\x1b[31m", Message: hostile,
				LastTimestamp: metav1.NewTime(now.Add(24 * 365 * time.Hour)), FirstTimestamp: metav1.NewTime(now.Add(24 * 365 * time.Hour)), Count: 1}); err != nil {
				t.Fatal(err)
			}
		}
		for _, format := range []string{"", "json", "yaml"} {
			args := []string{"why", "pull", "-n", "team-c"}
			if format != "" {
				args = append(args, "-o", format)
			}
			out, errOut, code := cmd(args...)
			if code != 0 {
				t.Fatalf("-o %q: exit %d: %s", format, code, errOut)
			}
			for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u009b", "\nWarning\tConflict", strings.Repeat("x", 2000)} {
				if strings.Contains(out, bad) {
					t.Errorf("-o %q prints %q raw:\n%s", format, bad, out)
				}
			}
			if !strings.Contains(out, `\x1b`) && !strings.Contains(out, `\\x1b`) {
				t.Errorf("-o %q does not show the escape sequence escaped:\n%s", format, out)
			}
			if format == "" {
				for _, line := range strings.Split(out, "\n") {
					if strings.Contains(line, "FORGED") && !strings.Contains(line, "Secret/harbor") {
						t.Errorf("a forged row: %q", line)
					}
				}
			}
			if format == "json" {
				var rep whyReport
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(rep.Events, func(e eventLine) bool { return e.Object == "SecretSync/pull" && e.Reason == "Conflict" }) {
					t.Errorf("the manager's Event is not shown beside the tenant's: %+v", rep.Events)
				}
				for _, e := range rep.Events {
					if e.Time.After(time.Now().Add(time.Minute)) {
						t.Errorf("an Event dated %v: the writer's time, not the server's", e.Time)
					}
				}
			}
		}
		if _, _, code := cmd("why", "pull"); code != exitUsage {
			t.Errorf("why without -n: exit %d, want %d", code, exitUsage)
		}
		if _, errOut, code := cmd("why", "nope", "-n", "team-a"); code != exitFailed || !strings.Contains(errOut, "not found") {
			t.Errorf("a missing SecretSync: exit %d, %q", code, errOut)
		}
	})
}
