package secretsync

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// planned is the number of copies the SecretSync's passes of one kind ("whole" or "namespace")
// planned (one ownership proof and one comparison each).
func planned(t *testing.T, ssName, pass string) float64 {
	t.Helper()
	return sumMetric(t, metricsRegistry, "platform_operators_secretsync_copies_planned_total", map[string]string{"secretsync": ssName, "pass": pass})
}

// Work amplification (docs/security.md): an edited or deleted copy is put back by the target
// pass of the copy's namespace, which plans that one copy; the SecretSync's pass, which plans
// every target namespace (one proof per copy) to write the status, runs once per copyPassDelay
// however many edits come (a tenant editing its copy in a loop must not make the manager plan
// every tenant's once per edit). The status stays true, and lastSyncTime moves with the repair.
func TestACopysEventRepairsItsNamespaceOnly(t *testing.T) {
	const c = "copypass"
	const targets = 30
	src := namespace(t, c+"-src", nil)
	var nss []string
	for i := range targets {
		nss = append(nss, targetNamespace(t, fmt.Sprintf("%s-%02d", c, i), c))
	}
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	for _, ns := range nss {
		copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
	}
	ready := waitReady(t, c, targets)
	settle(t, reconciles(t)-1)
	tenant := nss[7]

	// repaired runs change (edits of the tenant's copy), waits for the copy to be in step again
	// and the controllers to be idle past the SecretSync's pass the events queued, and returns
	// the copies the SecretSync's and the target passes planned meanwhile.
	repaired := func(what string, change func()) (whole, ns float64) {
		t.Helper()
		w0, n0, r0 := planned(t, c, "whole"), planned(t, c, "namespace"), reconciles(t)
		change()
		copyIn(t, tenant, source, c, v1alpha1.DeletionPolicyDelete)
		settle(t, r0)
		whole, ns = planned(t, c, "whole")-w0, planned(t, c, "namespace")-n0
		t.Logf("%s: the SecretSync's passes planned %v copies, target passes %v", what, whole, ns)
		return whole, ns
	}
	// Each edit costs a target pass or two (the repair's own event queues one more); all of them
	// together cost one pass over every target (two when the burst straddles copyPassDelay),
	// not one per edit.
	bounded := func(what string, edits int, whole, ns float64) {
		t.Helper()
		if whole > 2*targets || ns < 1 || ns > float64(3*edits) {
			t.Errorf("%s: the SecretSync's passes planned %v copies and target passes %v; want at most %d (two passes, not %d) and 1 to %d",
				what, whole, ns, 2*targets, edits*targets, 3*edits)
		}
	}

	const edits = 8
	whole, ns := repaired("the copy edited 8 times", func() {
		for i := range edits {
			updateSecret(t, tenant, "creds", func(s *corev1.Secret) { s.Data["token"] = []byte(fmt.Sprint("tampered ", i)) })
		}
	})
	bounded("the copy edited 8 times", edits, whole, ns)
	after := waitReady(t, c, targets)
	if after.Status.LastSyncTime == nil || !after.Status.LastSyncTime.After(ready.Status.LastSyncTime.Time) {
		// lastSyncTime has whole seconds: the repair is at least a second after the first sync.
		t.Errorf("lastSyncTime %v after the repair, was %v: the repair is a write", after.Status.LastSyncTime, ready.Status.LastSyncTime)
	}

	whole, ns = repaired("one copy deleted", func() {
		if err := k8s.Delete(ctx, getSecret(t, tenant, "creds")); err != nil {
			t.Fatal(err)
		}
	})
	bounded("one copy deleted", 1, whole, ns)
	waitReady(t, c, targets)

	t.Log("a Conflict appears: the SecretSync's pass says so; it goes: Synced again")
	updateSecret(t, tenant, "creds", func(s *corev1.Secret) {
		delete(s.Annotations, keys.AnnotationOwnership)
		s.Data["token"] = []byte("the tenant's own")
	})
	conflicted := waitReason(t, c, copyplan.ReasonConflict)
	if conflicted.Status.Conflicts != 1 || conflicted.Status.Synced != targets-1 {
		t.Errorf("status %d conflicts, synced %s; want 1 conflict, synced %d/%d", conflicted.Status.Conflicts, conflicted.Status.SyncedRatio, targets-1, targets)
	}
	eventually(t, "the tenant's Secret is gone", func() error {
		s := getSecret(t, tenant, "creds")
		if s == nil {
			return nil
		}
		if s.Annotations[keys.AnnotationOwnership] != "" {
			return errors.New("it is a copy again")
		}
		return k8s.Delete(ctx, s)
	})
	copyIn(t, tenant, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, targets)
}
