package at

import (
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/jobs"
)

func TestBounded(t *testing.T) {
	big := &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "E", Value: strings.Repeat("e", 800<<10)}}}},
	}}}}
	for _, c := range []struct {
		name    string
		spec    v1alpha1.AtSpec
		dropped bool
	}{
		{"a short command is kept", v1alpha1.AtSpec{Command: "echo hello"}, false},
		{"a command of 32 KiB is kept as its digest", v1alpha1.AtSpec{Command: strings.Repeat("c", 32768)}, true},
		{"a large jobTemplate is kept as its digest", v1alpha1.AtSpec{JobTemplate: big}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Schedule = metav1.Now()
			at := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Annotations: map[string]string{"tenant": strings.Repeat("a", 200<<10)}}, Spec: c.spec}
			out, err := bounded(at)
			if err != nil {
				t.Fatal(err)
			}
			b := out.(*v1alpha1.At)
			if got := jobs.TemplateDropped(b); got != c.dropped {
				t.Errorf("dropped: %v, want %v", got, c.dropped)
			}
			if !b.Spec.Schedule.Equal(&c.spec.Schedule) {
				t.Error("the schedule was not kept")
			}
			raw, _ := json.Marshal(b)
			if len(raw) > cachebounds.MaxObjectBytes {
				t.Errorf("%d bytes kept", len(raw))
			}
			again, _ := bounded(b)
			if raw2, _ := json.Marshal(again); string(raw2) != string(raw) {
				t.Error("not idempotent")
			}
		})
	}
}
