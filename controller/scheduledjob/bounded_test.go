package scheduledjob

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
)

func templateOf(envBytes int) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "E", Value: strings.Repeat("e", envBytes)}}}},
	}}}}
}

func TestBounded(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "sj", Namespace: "ns", Generation: 2, Annotations: map[string]string{
		keys.AnnotationRunNow: "token", "kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{", 200<<10),
	}}
	for _, c := range []struct {
		name     string
		template batchv1.JobTemplateSpec
		dropped  bool
	}{
		{"a small template is kept whole", templateOf(100), false},
		{"a template over 4 KiB is kept as its digest", templateOf(800 << 10), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sj := &v1alpha1.ScheduledJob{ObjectMeta: *meta.DeepCopy(), Spec: v1alpha1.ScheduledJobSpec{Schedule: "@daily", JobTemplate: c.template}}
			out, err := bounded(sj)
			if err != nil {
				t.Fatal(err)
			}
			b := out.(*v1alpha1.ScheduledJob)
			if got := jobs.TemplateDropped(b); got != c.dropped {
				t.Errorf("template dropped: %v, want %v", got, c.dropped)
			}
			if b.Spec.Schedule != "@daily" || b.Annotations[keys.AnnotationRunNow] != "token" {
				t.Errorf("what decide reads was not kept: %+v", b)
			}
			if raw, _ := json.Marshal(b); len(raw) > cachebounds.MaxObjectBytes {
				t.Errorf("%d bytes kept", len(raw))
			}
			again, _ := bounded(b)
			if r1, r2 := mustMarshal(t, b), mustMarshal(t, again); r1 != r2 {
				t.Error("not idempotent")
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The pass that creates a Job reads the whole template, from the API server's object of the same
// generation only: a newer spec waits for the pass its own watch event starts.
func TestWithTemplate(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	live := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Name: "sj", Namespace: "ns", UID: "u", Generation: 2}, Spec: v1alpha1.ScheduledJobSpec{Schedule: "@daily", JobTemplate: templateOf(8 << 10)}}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).Build()
	for _, c := range []struct {
		name       string
		generation int64
		uid        string
		want       bool
	}{
		{"the same generation gets the whole template", 2, "u", true},
		{"an older cached generation waits", 1, "u", false},
		{"a recreated object waits", 2, "other", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := bounded(live.DeepCopy())
			cached := out.(*v1alpha1.ScheduledJob)
			cached.Generation, cached.UID = c.generation, "u"
			if c.uid != "u" {
				cached.UID = "other"
			}
			ok, err := jobs.WithTemplate(context.Background(), api, cached, &v1alpha1.ScheduledJob{}, func(live *v1alpha1.ScheduledJob) {
				cached.Spec.JobTemplate = live.Spec.JobTemplate
			})
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.want {
				t.Fatalf("jobs.WithTemplate: %v, want %v", ok, c.want)
			}
			if ok && (jobs.TemplateDropped(cached) || len(cached.Spec.JobTemplate.Spec.Template.Spec.Containers) != 1) {
				t.Errorf("template not restored: %+v", cached.Spec.JobTemplate)
			}
		})
	}
}
