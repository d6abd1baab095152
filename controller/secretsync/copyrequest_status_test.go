package secretsync

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

func TestRequestStatus(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	request := func(readyReason string) *v1alpha1.CopyRequest {
		cr := &v1alpha1.CopyRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "harbor", Generation: 3},
			Spec:       v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Kind: "Secret", Namespace: "platform", Name: "harbor"}},
			Status:     v1alpha1.CopyRequestStatus{ObservedGeneration: 2, Copy: "harbor", LastSyncTime: &earlier},
		}
		if readyReason != "" {
			status := metav1.ConditionFalse
			if readyReason == copyplan.ReasonCopied {
				status = metav1.ConditionTrue
			}
			cr.Status.Conditions = []metav1.Condition{{Type: copyplan.ConditionReady, Status: status, Reason: readyReason, LastTransitionTime: earlier}}
		}
		return cr
	}
	for _, tc := range []struct {
		name        string
		cr          *v1alpha1.CopyRequest
		out         requestOutcome
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantCopy    string
		wantSync    *metav1.Time
		wantWarning bool
	}{
		{"a copy in step is Copied, and its last write time stays", request(copyplan.ReasonCopied), requestOutcome{copy: "harbor"},
			metav1.ConditionTrue, copyplan.ReasonCopied, "harbor", &earlier, false},
		{"a copy written now records the time", request(copyplan.ReasonCopied), requestOutcome{copy: "harbor", wrote: true},
			metav1.ConditionTrue, copyplan.ReasonCopied, "harbor", &metav1.Time{Time: now}, false},
		{"a copy written but not yet seen in step is Progressing", request(""), requestOutcome{wrote: true, requeueAfter: 2 * time.Second},
			metav1.ConditionFalse, copyplan.ReasonProgressing, "", &metav1.Time{Time: now}, false},
		{"a new conflict is announced", request(copyplan.ReasonCopied), requestOutcome{reason: copyplan.ReasonConflict, message: "not ours", requeueAfter: time.Minute},
			metav1.ConditionFalse, copyplan.ReasonConflict, "", &earlier, true},
		{"a conflict already reported is not announced again", request(copyplan.ReasonConflict), requestOutcome{reason: copyplan.ReasonConflict, message: "not ours", requeueAfter: time.Minute},
			metav1.ConditionFalse, copyplan.ReasonConflict, "", &earlier, false},
		{"a source not offered clears the copy's name and is announced", request(copyplan.ReasonCopied), requestOutcome{reason: copyplan.ReasonNotOffered, message: "not offered"},
			metav1.ConditionFalse, copyplan.ReasonNotOffered, "", &earlier, true},
		{"Progressing is never announced", request(copyplan.ReasonConflict), requestOutcome{requeueAfter: time.Second},
			metav1.ConditionFalse, copyplan.ReasonProgressing, "", &earlier, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cr.DeepCopy()
			st, warning := requestStatus(tc.cr, tc.out, now)
			ready := st.Conditions[0]
			if ready.Status != tc.wantStatus || ready.Reason != tc.wantReason || ready.ObservedGeneration != 3 {
				t.Errorf("Ready = %s/%s (generation %d), want %s/%s (3)", ready.Status, ready.Reason, ready.ObservedGeneration, tc.wantStatus, tc.wantReason)
			}
			if st.Copy != tc.wantCopy || st.ObservedGeneration != 3 {
				t.Errorf("copy %q observedGeneration %d, want %q 3", st.Copy, st.ObservedGeneration, tc.wantCopy)
			}
			if !st.LastSyncTime.Equal(tc.wantSync) {
				t.Errorf("lastSyncTime %v, want %v", st.LastSyncTime, tc.wantSync)
			}
			if (warning != nil) != tc.wantWarning || (warning != nil && warning.Reason != tc.wantReason) {
				t.Errorf("warning %+v, want one: %t", warning, tc.wantWarning)
			}
			if tc.cr.Status.Copy != before.Status.Copy || len(tc.cr.Status.Conditions) != len(before.Status.Conditions) {
				t.Error("requestStatus changed the object it was given")
			}
		})
	}
}
