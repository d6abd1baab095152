package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// What a tenant with namespace edit may put on its objects, near the API server's limits: 256 KiB
// of metadata (labels and annotations together), 1 MiB of Secret or ConfigMap data, custom
// resources up to the 1.5 MiB etcd takes (a jobTemplate), 6,000 imagePullSecrets entries.
const (
	hostileAnnotationBytes = 200 << 10
	hostileTemplateBytes   = 800 << 10
	hostileDataBytes       = 900 << 10
	hostilePullSecrets     = 6000
)

// hostileMeta is a tenant's object metadata: 200 KiB of annotations, 60 labels of the longest
// values, and the labels every cache of ours selects on (a tenant can put them on its objects
// where the chart's admission policies are off).
func hostileMeta(name, namespace string, ours map[string]string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}, Annotations: map[string]string{}}
	for i := range hostileAnnotationBytes / (1 << 10) {
		m.Annotations[fmt.Sprintf("tenant.example/a%03d", i)] = strings.Repeat("a", 1<<10)
	}
	for i := range 60 {
		m.Labels[fmt.Sprintf("tenant.example/l%03d", i)] = strings.Repeat("v", 63)
	}
	for k, v := range ours {
		m.Labels[k] = v
	}
	return m
}

// hostileTemplate is a Job template of about hostileTemplateBytes (environment variables).
func hostileTemplate() batchv1.JobTemplateSpec {
	env := make([]corev1.EnvVar, hostileTemplateBytes/(4<<10))
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("E%04d", i), Value: strings.Repeat("e", 4<<10)}
	}
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}, Env: env}},
	}}}}
}

// The class rule of docs/security.md: every informer the manager starts holds each object in a
// bounded form, whatever a tenant wrote. The manager is built as main.go builds it (newManager,
// every controller on), a tenant's largest objects are created for every kind any of its caches
// holds, and every informer that any cache built through controller/cachebounds started is
// weighed: each must be declared in an inventory, and each object it holds must serialize to at
// most cachebounds.MaxObjectBytes. A new informer without a bound fails here, whoever starts it;
// a controller asking the cache for a kind no inventory declares is refused (and fails here too).
func TestEveryInformerTheManagerStartsIsBounded(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	k8s, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tmpl := hostileTemplate()
	pullSecrets := make([]corev1.LocalObjectReference, hostilePullSecrets)
	for i := range pullSecrets {
		pullSecrets[i].Name = fmt.Sprintf("tenant-pull-secret-%05d", i)
	}
	data := map[string][]byte{"blob": make([]byte, hostileDataBytes)}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "po-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "source"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"tenant": "yes"}}},
		// A source namespace's writer is not trusted with the size of what it writes.
		&corev1.Secret{ObjectMeta: hostileMeta("big", "source", nil), Data: data},
		&corev1.ConfigMap{ObjectMeta: hostileMeta("big", "source", nil), BinaryData: data},
		&v1alpha1.SecretSync{
			ObjectMeta: hostileMeta("secrets", "", nil),
			Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "source", Selector: &metav1.LabelSelector{}},
				Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}},
			},
		},
		&v1alpha1.SecretSync{
			ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
			Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Kind: v1alpha1.CopyKindConfigMap, Namespace: "source", Name: "big"},
				Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}},
			},
		},
		// A tenant's own objects carrying every key a cache of ours selects on.
		&corev1.Secret{ObjectMeta: hostileMeta("forged", "tenant", map[string]string{keys.LabelSecretSync: "secrets", keys.LabelCopyRequest: "pull", keys.LabelOffer: "true"}), Data: data},
		&corev1.ConfigMap{ObjectMeta: hostileMeta("forged", "tenant", map[string]string{keys.LabelSecretSync: "secrets", keys.LabelCopyRequest: "pull", keys.LabelOffer: "true"}), BinaryData: data},
		&batchv1.Job{ObjectMeta: hostileMeta("forged", "tenant", map[string]string{keys.LabelCreatedBy: "at"}), Spec: *tmpl.Spec.DeepCopy()},
		&corev1.ServiceAccount{ObjectMeta: hostileMeta("many-pull-secrets", "tenant", nil), ImagePullSecrets: pullSecrets},
		&corev1.Pod{ObjectMeta: hostileMeta("big", "tenant", nil), Spec: *tmpl.Spec.Template.Spec.DeepCopy()},
		&v1alpha1.CopyRequest{ObjectMeta: hostileMeta("pull", "tenant", nil), Spec: v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: "source", Name: "big"}}},
		&v1alpha1.At{ObjectMeta: hostileMeta("big", "tenant", nil), Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now().Add(-10 * time.Second)), JobTemplate: tmpl.DeepCopy()}},
		&v1alpha1.At{ObjectMeta: hostileMeta("long-command", "tenant", nil), Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now().Add(time.Hour)), Command: strings.Repeat("c", 32768)}},
		&v1alpha1.ScheduledJob{ObjectMeta: func() metav1.ObjectMeta {
			m := hostileMeta("big", "tenant", nil)
			m.Annotations[keys.AnnotationRunNow] = "now" // one Job at once, from the whole template
			return m
		}(), Spec: v1alpha1.ScheduledJobSpec{Schedule: "0 0 1 1 *", JobTemplate: *tmpl.DeepCopy()}},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	before := cachebounds.Built() // the caches of an earlier test still stopping
	o, err := parseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false",
		"--controllers=*,podwatcher", "--manager-namespace=po-system",
		// The default SecretSync's controller watches through the manager's cache too (a type no
		// Secret here has: it copies nothing).
		"--default-secretsync-name=default-seed", "--default-secretsync-source-namespace=po-system",
		"--default-secretsync-type=example.com/none"})
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	mgr, err := newManager(mctx, o, enabled, cfg, logr.Discard(), prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cachebounds.Bounded(mgr.GetCache()) {
		t.Fatalf("the manager's cache is a %T, not one built by controller/cachebounds (which refuses undeclared kinds)", mgr.GetCache())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	// The controllers read what they read (the source caches start with a SecretSync's first
	// pass); each kind's informer holds the hostile object.
	want := map[string][]string{ // cache/type -> names it must hold
		"manager/*v1.Secret":                           {"tenant/forged", "tenant/big"},
		"manager/*v1.ConfigMap":                        {"tenant/forged", "tenant/big"},
		"manager/*v1.ServiceAccount":                   {"tenant/many-pull-secrets"},
		"manager/*v1.Pod":                              {"tenant/big"},
		"manager/*v1.Job":                              {"tenant/forged"},
		"manager/*v1alpha1.At":                         {"tenant/big", "tenant/long-command"},
		"manager/*v1alpha1.ScheduledJob":               {"tenant/big"},
		"manager/*v1alpha1.SecretSync":                 {"secrets", "default-seed"},
		"manager/*v1alpha1.CopyRequest":                {"tenant/pull"},
		"manager/*v1.Namespace":                        {"tenant"},
		"source/source/*v1.Secret":                     {"source/big"},
		"source/source/*v1.ConfigMap":                  {"source/big"},
		"copyrequest-offers/*v1.PartialObjectMetadata": {"tenant/forged"},
		"copyrequest-copies/*v1.Secret":                {"tenant/forged"},
		"copyrequest-copies/*v1.ConfigMap":             {"tenant/forged"},
	}
	informers := func() []cachebounds.Informer {
		return slices.DeleteFunc(cachebounds.Built(), func(i cachebounds.Informer) bool { return slices.Contains(before, i) })
	}
	holds := func(inf cachebounds.Informer, key string) bool {
		_, ok, _ := inf.Store.GetByKey(key)
		return ok
	}
	missing := func() []string {
		var out []string
		for k, names := range want {
			for _, n := range names {
				if !slices.ContainsFunc(informers(), func(inf cachebounds.Informer) bool { return inf.Cache+"/"+inf.Type == k && holds(inf, n) }) {
					out = append(out, k+" "+n)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	eventually(t, func() string { return fmt.Sprintf("informers still missing: %v", missing()) }, func() bool { return len(missing()) == 0 })
	for _, inf := range informers() {
		t.Run(inf.Cache+"/"+inf.Type, func(t *testing.T) {
			if inf.Refused != "" {
				t.Fatalf("cache %s was asked for %s, which no inventory declares (controller/cachebounds): a controller reads or watches it and gets an error; declare the kind with its bound", inf.Cache, inf.Refused)
			}
			if !inf.Declared {
				t.Errorf("cache %s started an informer of %s, which no inventory declares (controller/cachebounds): declare the kind with its bound", inf.Cache, inf.Type)
			}
			largest, name := 0, ""
			for _, obj := range inf.Store.List() {
				b, err := json.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) > largest {
					largest, name = len(b), fmt.Sprintf("%s/%s", obj.(client.Object).GetNamespace(), obj.(client.Object).GetName())
				}
			}
			t.Logf("largest cached object: %s, %d bytes", name, largest)
			if largest > cachebounds.MaxObjectBytes {
				t.Errorf("cache %s keeps %d bytes of %s %s, want at most %d", inf.Cache, largest, inf.Type, name, cachebounds.MaxObjectBytes)
			}
		})
	}
	// The controllers still run from the bounded forms: the Jobs of the At and of the
	// ScheduledJob's run-now are created from the whole templates, read from the API.
	jobOf := func(owner string) func() bool {
		return func() bool {
			var list batchv1.JobList
			if err := k8s.List(ctx, &list, client.InNamespace("tenant")); err != nil {
				return false
			}
			return slices.ContainsFunc(list.Items, func(j batchv1.Job) bool {
				ref := metav1.GetControllerOf(&j)
				return ref != nil && ref.Kind == owner && len(j.Spec.Template.Spec.Containers) == 1 && len(j.Spec.Template.Spec.Containers[0].Env) >= len(tmpl.Spec.Template.Spec.Containers[0].Env) // and the scheduled time
			})
		}
	}
	eventually(t, func() string {
		var at v1alpha1.At
		_ = k8s.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "big"}, &at)
		var list batchv1.JobList
		err := k8s.List(ctx, &list, client.InNamespace("tenant"))
		var js []string
		for _, j := range list.Items {
			js = append(js, fmt.Sprintf("%s containers=%d %s env=%d %v", j.Name, len(j.Spec.Template.Spec.Containers), j.Spec.Template.Spec.Containers[0].Name, len(j.Spec.Template.Spec.Containers[0].Env), j.Spec.Template.Spec.Containers[0].Command))
		}
		return fmt.Sprintf("no Job with the At's whole template; At status %+v; jobs %v %v", at.Status, js, err)
	}, jobOf("At"))
	eventually(t, func() string { return "no Job with the ScheduledJob's whole template" }, jobOf("ScheduledJob"))
}
