package at

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Issue 34: a tenant's jobTemplate cannot put a key of ours on the Job the manager creates (the
// admission policy lets the manager's writes through); its own keys stay.
func TestAJobTemplateCannotPutOurKeysOnTheJob(t *testing.T) {
	at := commandAt("team", "forged", time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	at.Spec.Command = ""
	forged := map[string]string{
		keys.LabelCreatedBy: "scheduledjob", keys.AnnotationRunNowToken: "t1", keys.LabelSecretSync: "pull",
		keys.Prefix + "not-a-key-yet": "x", keys.LabelManagedBy: keys.ManagedByValue, "team": "a",
	}
	at.Spec.JobTemplate = &batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: forged, Annotations: forged},
		Spec:       batchv1.JobSpec{Template: corev1PodTemplate("c")},
	}
	job := NewJob(at, testImage)
	if job.Labels[keys.LabelCreatedBy] != Name {
		t.Errorf("created-by = %q, want the manager's %q", job.Labels[keys.LabelCreatedBy], Name)
	}
	for what, m := range map[string]map[string]string{"labels": job.Labels, "annotations": job.Annotations} {
		for k := range forged {
			if k == "team" || (what == "labels" && k == keys.LabelCreatedBy) {
				continue
			}
			if _, ok := m[k]; ok {
				t.Errorf("the Job's %s carry %s from the template", what, k)
			}
		}
		if m["team"] != "a" {
			t.Errorf("the Job's %s lost the tenant's own key: %v", what, m)
		}
	}
}
