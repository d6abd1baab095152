package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

const samplesDir = "../../../samples"

// readSamples decodes every Kubernetes object of samples/*.yaml (chart values files are not
// objects and are skipped), keyed by file.
func readSamples(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("samples: %v %v", files, err)
	}
	out := map[string][]*unstructured.Unstructured{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if u.GetKind() == "" {
				continue // chart values
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], u)
		}
	}
	return out
}

// TestSamplesWork applies every sample to a real API server (schema and CEL validation as
// written), then runs the manager's controllers and checks each sample does what its comments say.
func TestSamplesWork(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The namespaces the samples expect: tenants team-a (labelled for both SecretSyncs) and
	// team-b (tenant only), and team-c (neither). envtest runs no kube-controller-manager, so the
	// default ServiceAccounts are made here.
	for ns, labels := range map[string]map[string]string{
		"platform": nil,
		"team-a":   {"platform.example.com/tenant": "true", "platform.example.com/wildcard-tls": "true"},
		"team-b":   {"platform.example.com/tenant": "true"},
		"team-c":   nil,
	} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil {
			t.Fatal(err)
		}
	}

	samples := readSamples(t)
	for file, objs := range samples {
		for _, u := range objs {
			if err := c.Create(ctx, u.DeepCopy(), client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s refused by the API server as written: %v", file, u.GetKind(), u.GetName(), err)
			}
		}
	}
	if t.Failed() {
		return
	}
	now := time.Now()
	for _, objs := range samples {
		for _, u := range objs {
			if u.GetKind() == "At" {
				// Run the At now rather than on the sample's date: its local time in its zone, or
				// its schedule.
				if zone, ok, _ := unstructured.NestedString(u.Object, "spec", "timeZone"); ok {
					loc, err := time.LoadLocation(zone)
					if err != nil {
						t.Fatal(err)
					}
					if err := unstructured.SetNestedField(u.Object, now.In(loc).Format("2006-01-02T15:04:05"), "spec", "localTime"); err != nil {
						t.Fatal(err)
					}
				} else if err := unstructured.SetNestedField(u.Object, now.UTC().Format(time.RFC3339), "spec", "schedule"); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Create(ctx, u); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}

	o, err := parseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false", "--manager-namespace=default", "--job-image=busybox:1.37"})
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	startTestManager(t, ctx, o, enabled, cfg, prometheus.NewRegistry(), nil)

	exists := func(ns, name string) bool {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Secret{})
		return err == nil || !apierrors.IsNotFound(err)
	}
	var why string
	eventually(t, func() string { return why }, func() bool {
		switch {
		case !exists("team-a", "harbor-pull") || !exists("team-b", "harbor-pull"):
			why = "the pull secret was not copied into the tenant namespaces team-a and team-b"
		case !exists("team-a", "wildcard-example-com"):
			why = "the TLS certificate was not copied into team-a (labelled)"
		default:
			sa := &corev1.ServiceAccount{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: "team-b", Name: "default"}, sa); err != nil || len(sa.ImagePullSecrets) != 1 || sa.ImagePullSecrets[0].Name != "harbor-pull" {
				why = "team-b's default ServiceAccount does not list harbor-pull in imagePullSecrets"
				return false
			}
			return true
		}
		return false
	})
	for _, ns := range []string{"team-c", "platform-operators-system"} {
		if exists(ns, "harbor-pull") {
			t.Errorf("namespace %s (not a tenant) got the pull secret", ns)
		}
	}
	for _, ns := range []string{"team-b", "team-c"} {
		if exists(ns, "wildcard-example-com") {
			t.Errorf("namespace %s (not labelled) got the TLS certificate", ns)
		}
	}
	// The CA bundle, a ConfigMap, in the tenants as trust-bundle; the pulled token in team-c.
	eventually(t, func() string { return "the CA bundle is not in team-a and team-b as trust-bundle" }, func() bool {
		for _, ns := range []string{"team-a", "team-b"} {
			cm := &corev1.ConfigMap{}
			if c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "trust-bundle"}, cm) != nil || cm.Data["ca.crt"] == "" || cm.Annotations["reloader.stakater.com/match"] != "true" {
				return false
			}
		}
		return true
	})
	// The database credential: only the application's keys, host as DB_HOST, in team-a and team-b
	// (team-* but team-c) as orders-db, with the app.kubernetes.io labels and the Argo CD annotations.
	eventually(t, func() string { return why }, func() bool {
		for _, ns := range []string{"team-a", "team-b"} {
			s := &corev1.Secret{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orders-db"}, s); err != nil {
				why = fmt.Sprintf("orders-db is not in %s: %v", ns, err)
				return false
			}
			keys := slices.Sorted(maps.Keys(s.Data))
			switch {
			case !slices.Equal(keys, []string{"DB_HOST", "password", "username"}):
				why = fmt.Sprintf("orders-db in %s holds the keys %v, want DB_HOST, password, username", ns, keys)
			case string(s.Data["DB_HOST"]) != "orders-db.platform.svc":
				why = fmt.Sprintf("orders-db in %s: DB_HOST is %q", ns, s.Data["DB_HOST"])
			case s.Labels["app.kubernetes.io/part-of"] != "orders" || s.Labels["platform.example.com/owner"] != "":
				why = fmt.Sprintf("orders-db in %s: labels %v (want the app.kubernetes.io/* ones only)", ns, s.Labels)
			case s.Annotations["argocd.argoproj.io/compare-options"] != "IgnoreExtraneous":
				why = fmt.Sprintf("orders-db in %s: annotations %v", ns, s.Annotations)
			default:
				continue
			}
			return false
		}
		return true
	})
	if exists("team-c", "orders-db") {
		t.Error("team-c (excluded by name) got orders-db")
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "team-c", Name: "trust-bundle"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("team-c (not a tenant) got the CA bundle: %v", err)
	}
	eventually(t, func() string { return "the CopyRequest's copy metrics-token is not in team-c" }, func() bool {
		return exists("team-c", "metrics-token")
	})
	eventually(t, func() string { return "the CopyRequest is not Ready" }, func() bool {
		cr := &v1alpha1.CopyRequest{}
		return c.Get(ctx, types.NamespacedName{Namespace: "team-c", Name: "metrics-api-token"}, cr) == nil && metaReady(cr.Status.Conditions)
	})
	for _, name := range []string{"harbor-pull", "wildcard-tls", "ca-bundle", "orders-db"} {
		eventually(t, func() string { return "SecretSync " + name + " is not Ready" }, func() bool {
			ss := &v1alpha1.SecretSync{}
			return c.Get(ctx, types.NamespacedName{Name: name}, ss) == nil && metaReady(ss.Status.Conditions)
		})
	}

	// The nightly job: its next run is the next 02:00 in Berlin.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	local := time.Now().In(berlin)
	want := time.Date(local.Year(), local.Month(), local.Day(), 2, 0, 0, 0, berlin)
	if !want.After(local) {
		want = time.Date(local.Year(), local.Month(), local.Day()+1, 2, 0, 0, 0, berlin)
	}
	eventually(t, func() string { return "the ScheduledJob's next run is not " + want.String() }, func() bool {
		sj := &v1alpha1.ScheduledJob{}
		return c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "nightly-report"}, sj) == nil &&
			sj.Status.NextScheduleTime != nil && sj.Status.NextScheduleTime.Time.Equal(want)
	})

	// The Ats ran: each has its Job with the sample's command, and is Running.
	for name, command := range map[string]string{"migrate-orders-v42": "migrating orders to schema v42", "rotate-logs": "echo rotating logs", "berlin-night-run": "scheduled for $SCHEDULED_TIME"} {
		eventually(t, func() string { return "At " + name + " did not start its Job" }, func() bool {
			at := &v1alpha1.At{}
			if c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: name}, at) != nil || at.Status.JobName == "" {
				return false
			}
			job := &batchv1.Job{}
			if c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: at.Status.JobName}, job) != nil {
				return false
			}
			return at.Status.Phase == v1alpha1.AtRunning && strings.Contains(strings.Join(job.Spec.Template.Spec.Containers[0].Command, " ")+" "+strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "), command)
		})
	}
}

func metaReady(conds []metav1.Condition) bool {
	for _, c := range conds {
		if c.Type == "Ready" {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
