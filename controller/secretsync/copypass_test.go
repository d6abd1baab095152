package secretsync

import (
	"errors"
	"fmt"
	"testing"
	"time"

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

// Work amplification (docs/security.md): an edited or deleted copy used to queue the
// SecretSync's whole pass, which plans every target namespace (one proof per copy): a tenant
// editing its copy in a loop made the manager plan every tenant's. The event queues the pass of
// the copy's namespace; the status stays true (lastSyncTime moves with the repair), and the
// whole pass runs when the outcome changes what the status says (a Conflict appears or goes).
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
	idle(t)
	time.Sleep(wholePassDelay)
	idle(t)
	tenant := nss[7]

	// repaired runs change, waits for the copy to be in step again and the controller to be idle,
	// and returns the copies the whole and the namespace passes planned meanwhile.
	repaired := func(what string, change func()) (whole, ns float64) {
		t.Helper()
		w0, n0, r0 := planned(t, c, "whole"), planned(t, c, "namespace"), reconciles(t)
		change()
		copyIn(t, tenant, source, c, v1alpha1.DeletionPolicyDelete)
		settle(t, r0)
		whole, ns = planned(t, c, "whole")-w0, planned(t, c, "namespace")-n0
		t.Logf("%s: the whole pass planned %v copies, namespace passes %v", what, whole, ns)
		return whole, ns
	}
	proportional := func(what string, whole, ns float64) {
		t.Helper()
		if whole != 0 || ns < 1 || ns > 3 {
			t.Errorf("%s: the whole pass planned %v copies and namespace passes %v; want 0 and 1 to 3 (one namespace's, not %d)", what, whole, ns, targets)
		}
	}

	whole, ns := repaired("one copy edited", func() {
		updateSecret(t, tenant, "creds", func(s *corev1.Secret) { s.Data["token"] = []byte("tampered") })
	})
	proportional("one copy edited", whole, ns)
	after := waitReady(t, c, targets)
	if after.Status.LastSyncTime == nil || !after.Status.LastSyncTime.After(ready.Status.LastSyncTime.Time) {
		// lastSyncTime has whole seconds: the repair is at least a second after the first sync.
		t.Errorf("lastSyncTime %v after the repair, was %v: the repair is a write", after.Status.LastSyncTime, ready.Status.LastSyncTime)
	}

	whole, ns = repaired("one copy deleted", func() {
		time.Sleep(time.Second) // lastSyncTime has whole seconds
		if err := k8s.Delete(ctx, getSecret(t, tenant, "creds")); err != nil {
			t.Fatal(err)
		}
	})
	proportional("one copy deleted", whole, ns)
	waitReady(t, c, targets)

	t.Log("a Conflict appears: the whole pass runs and says so; it goes: the whole pass says Synced again")
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
