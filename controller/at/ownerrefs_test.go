package at

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// Issue 29: with OwnerReferencesPermissionEnforcement on (OpenShift), a Job whose owner
// reference sets blockOwnerDeletion may be created only by who may update the At's finalizers.
// The manager runs here with the chart's ClusterRole, not as cluster admin.
func TestAtCreatesItsJobUnderOwnerReferencesPermissionEnforcement(t *testing.T) {
	f := &fixture{clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), evs: events.NewFakeRecorder(100)}
	f.env = testenv.StartAsChartManager(t, func(mgr ctrl.Manager) error {
		f.rec = &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: f.evs, Clock: f.clock, JobImage: testImage}
		return nil
	})
	ns := f.env.Namespace(t, "at-ownerrefs")
	at := commandAt(ns, "hardened", f.clock.Now())
	if err := f.env.Admin.Create(f.env.Ctx, at); err != nil {
		t.Fatal(err)
	}
	testenv.WaitCacheCurrent(t, f.env, at)
	if _, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(at)}); err != nil {
		t.Fatalf("reconcile: %v (the chart's ClusterRole lacks update on ats/finalizers?)", err)
	}
	if err := f.env.Admin.Get(f.env.Ctx, client.ObjectKeyFromObject(at), at); err != nil {
		t.Fatal(err)
	}
	if js := f.jobsOf(t, at); len(js) != 1 || at.Status.Phase != v1alpha1.AtRunning {
		t.Fatalf("%d Jobs, phase %q (%s); want the Job created and Running", len(js), at.Status.Phase, at.Status.Message)
	}
}
