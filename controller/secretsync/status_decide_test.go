package secretsync

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

func TestSecretSyncStatus(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	sync := &v1alpha1.SecretSync{
		ObjectMeta: metav1.ObjectMeta{Name: "harbor", Generation: 7},
		Status:     v1alpha1.SecretSyncStatus{ObservedGeneration: 6, LastSyncTime: &earlier, Synced: 2, Desired: 2, SyncedRatio: "2/2"},
	}
	sources := []*corev1.Secret{{}}
	targets := []string{"a", "b", "c"}
	conflict := v1alpha1.TargetFailure{Namespace: "c", Name: "harbor", Reason: copyplan.ReasonConflict, Message: "not ours"}
	for _, tc := range []struct {
		name                   string
		obs                    observation
		res                    result
		wantReason, wantRatio  string
		wantConflicts, wantLen int32
		wantSync               *metav1.Time
	}{
		{"every copy already in step: Synced, the last write time stays", observation{sources: sources, targets: targets},
			result{desired: 3, inStep: 3}, copyplan.ReasonSynced, "3/3", 0, 0, &earlier},
		{"copies written now count as synced and record the time", observation{sources: sources, targets: targets},
			result{desired: 3, inStep: 1, written: map[propagation.Op]int{propagation.OpCreate: 2}}, copyplan.ReasonSynced, "3/3", 0, 0, &metav1.Time{Time: now}},
		{"a target held by a Secret not ours is a Conflict, listed in failures", observation{sources: sources, targets: targets},
			result{desired: 3, inStep: 2, conflicts: []v1alpha1.TargetFailure{conflict}}, copyplan.ReasonConflict, "2/3", 1, 1, &earlier},
		{"a missing source says so, whatever was deleted", observation{sourceMissing: true, targets: targets},
			result{written: map[propagation.Op]int{propagation.OpDelete: 3}}, copyplan.ReasonSourceNotFound, "0/0", 0, 0, &metav1.Time{Time: now}},
		{"copies a target pass wrote since the last status record the time", observation{sources: sources, targets: targets},
			result{desired: 3, inStep: 3, targetWrote: true}, copyplan.ReasonSynced, "3/3", 0, 0, &metav1.Time{Time: now}},
		{"a write that met a stale cache is Progressing", observation{sources: sources, targets: targets},
			result{desired: 3, inStep: 2, requeue: true}, copyplan.ReasonProgressing, "2/3", 0, 0, &earlier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := secretSyncStatus(sync, tc.obs, tc.res, now)
			ready := st.Conditions[0]
			if ready.Reason != tc.wantReason || ready.ObservedGeneration != 7 || st.ObservedGeneration != 7 {
				t.Errorf("Ready reason %s generation %d/%d, want %s 7", ready.Reason, ready.ObservedGeneration, st.ObservedGeneration, tc.wantReason)
			}
			if st.SyncedRatio != tc.wantRatio || st.Conflicts != tc.wantConflicts || int32(len(st.Failures)) != tc.wantLen {
				t.Errorf("ratio %s conflicts %d failures %d, want %s %d %d", st.SyncedRatio, st.Conflicts, len(st.Failures), tc.wantRatio, tc.wantConflicts, tc.wantLen)
			}
			if st.Sources != int32(len(tc.obs.sources)) || st.Targets != int32(len(tc.obs.targets)) {
				t.Errorf("sources %d targets %d, want %d %d", st.Sources, st.Targets, len(tc.obs.sources), len(tc.obs.targets))
			}
			if !st.LastSyncTime.Equal(tc.wantSync) {
				t.Errorf("lastSyncTime %v, want %v", st.LastSyncTime, tc.wantSync)
			}
			if sync.Status.ObservedGeneration != 6 || sync.Status.SyncedRatio != "2/2" || len(sync.Status.Conditions) != 0 {
				t.Error("secretSyncStatus changed the SecretSync it was given")
			}
		})
	}
}
