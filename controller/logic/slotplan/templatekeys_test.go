package slotplan

import (
	"testing"
	"time"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
)

// Issue 34: a tenant's jobTemplate cannot put a key of ours on the Jobs the manager creates (the
// admission policy lets the manager's writes through): no run-now-token but the manager's own,
// no created-by but the manager's; the tenant's own keys stay.
func TestAJobTemplateCannotPutOurKeysOnTheJob(t *testing.T) {
	forged := map[string]string{
		keys.LabelCreatedBy: "at", keys.AnnotationRunNowToken: "forged", keys.AnnotationRunNow: "x",
		keys.Prefix + "not-a-key-yet": "x", keys.LabelManagedBy: keys.ManagedByValue, "team": "a",
	}
	sj := newSJ()
	sj.Spec.JobTemplate.Labels, sj.Spec.JobTemplate.Annotations = forged, forged
	slot := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for _, token := range []string{"", "t1"} {
		job := NewJob(sj, jobname.Slot(sj, slot), slot, time.UTC, token)
		if job.Labels[keys.LabelCreatedBy] != CreatedBy {
			t.Errorf("token %q: created-by = %q, want the manager's %q", token, job.Labels[keys.LabelCreatedBy], CreatedBy)
		}
		if got, ok := job.Annotations[keys.AnnotationRunNowToken]; ok != (token != "") || got != token {
			t.Errorf("token %q: run-now-token = %q (present %v), want only the manager's", token, got, ok)
		}
		for what, m := range map[string]map[string]string{"labels": job.Labels, "annotations": job.Annotations} {
			for k := range forged {
				if k == "team" || k == keys.LabelCreatedBy || k == keys.AnnotationRunNowToken {
					continue
				}
				if _, ok := m[k]; ok {
					t.Errorf("token %q: the Job's %s carry %s from the template", token, what, k)
				}
			}
			if m["team"] != "a" {
				t.Errorf("token %q: the Job's %s lost the tenant's own key: %v", token, what, m)
			}
		}
	}
}
