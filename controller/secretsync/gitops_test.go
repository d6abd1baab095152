package secretsync

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/gitops"
)

// TestWhatGitOpsToolsRead runs Argo CD's health check (docs/gitops/argocd-health.lua) and kstatus
// on statuses secretSyncStatus computes. kstatus reads Ready False as InProgress (no Stalled: a
// missing source or a conflict clears when the world changes).
func TestWhatGitOpsToolsRead(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	newSS := func() *v1alpha1.SecretSync {
		return &v1alpha1.SecretSync{TypeMeta: metav1.TypeMeta{Kind: "SecretSync", APIVersion: v1alpha1.GroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: "harbor-pull", Generation: 4}}
	}
	decided := func(obs observation, res result) *v1alpha1.SecretSync {
		ss := newSS()
		ss.Status = *secretSyncStatus(ss, obs, res, now)
		return ss
	}
	edited := decided(observation{}, result{desired: 3, inStep: 3})
	edited.Generation++
	for _, tc := range []struct {
		name          string
		ss            *v1alpha1.SecretSync
		argo, kstatus string
		message       string
	}{
		{"created, not yet seen", newSS(), "Progressing", "", "Waiting for the controller"},
		{"every copy in step", decided(observation{}, result{desired: 3, inStep: 3}), "Healthy", "Current", "synced 3/3"},
		{"copies still being written", decided(observation{}, result{desired: 3, inStep: 1, requeue: true}), "Progressing", "InProgress", "synced 1/3"},
		{"the source is missing", decided(observation{sourceMissing: true}, result{}), "Degraded", "InProgress", "source Secret does not exist"},
		{"edited, not yet seen", edited, "Progressing", "InProgress", "generation 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gitops.Check(tc.ss, gitops.Want{Argo: tc.argo, Message: tc.message, KStatus: tc.kstatus}, t.Errorf)
		})
	}
}
