package slotplan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/gitops"
)

// TestWhatGitOpsToolsRead runs Argo CD's health check (docs/gitops/argocd-health.lua) and kstatus
// on statuses decide computes, so the documented health check and the conditions cannot drift
// from the controller.
func TestWhatGitOpsToolsRead(t *testing.T) {
	now := justAfterTheHour
	decided := func(sj *v1alpha1.ScheduledJob) *v1alpha1.ScheduledJob {
		sj.Status = Decide(sj, nil, now, func(types.UID) bool { return false }, time.Minute).Status
		return sj
	}
	edited := func(sj *v1alpha1.ScheduledJob) *v1alpha1.ScheduledJob {
		sj.Generation++ // a spec edit the controller has not seen yet
		return sj
	}
	fixed := func(sj *v1alpha1.ScheduledJob) *v1alpha1.ScheduledJob {
		sj.Spec.TimeZone = nil
		return sj
	}
	for _, tc := range []struct {
		name           string
		sj             *v1alpha1.ScheduledJob
		argo, kstatus  string
		messageContent string
	}{
		{"created, not yet seen by the controller", newSJ(), "Progressing", "", "Waiting for the controller"},
		{"scheduled", decided(newSJ()), "Healthy", "Current", "Next run at"},
		{"edited, not yet seen", edited(decided(newSJ())), "Progressing", "InProgress", "generation 3"},
		{"suspended", decided(newSJ(suspended)), "Suspended", "Current", "Suspended"},
		{"suspended by its stop strategy after failures", decided(newSJ(stopAfter(1, 0), failedRuns(1))), "Degraded", "Failed", "Stopped after 1 consecutive failed runs"},
		{"suspended by its stop strategy after a success", decided(newSJ(stopAfter(0, 1), succeededRuns(1))), "Suspended", "Current", "Stopped after 1 consecutive successful runs"},
		{"an unknown time zone", decided(newSJ(timeZone("Mars/Olympus"))), "Degraded", "Failed", "Mars/Olympus"},
		{"a schedule that never fires", decided(newSJ(spec("0 0 30 2 *"))), "Degraded", "Failed", ""},
		{"a time zone fixed after it was unknown", decided(edited(fixed(decided(newSJ(timeZone("Mars/Olympus")))))), "Healthy", "Current", "Next run at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sj.Kind, tc.sj.APIVersion = "ScheduledJob", v1alpha1.GroupVersion.String()
			gitops.Check(tc.sj, gitops.Want{Argo: tc.argo, Message: tc.messageContent, KStatus: tc.kstatus}, t.Errorf)
		})
	}
}
