package scheduledjob

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// Issue 29: with OwnerReferencesPermissionEnforcement on (OpenShift), a Job whose owner
// reference sets blockOwnerDeletion may be created only by who may update the ScheduledJob's
// finalizers. The manager runs here with the chart's ClusterRole, not as cluster admin.
func TestScheduledJobCreatesJobsUnderOwnerReferencesPermissionEnforcement(t *testing.T) {
	f := &fixture{clock: clocktesting.NewFakeClock(time.Now()), evs: events.NewFakeRecorder(100)}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f.env = testenv.StartAsChartManager(t, func(mgr ctrl.Manager) error {
		f.rec = &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: f.evs, Clock: f.clock, Metrics: m}
		return nil
	})
	sj := everyMinute(f.env.Namespace(t, "sj-ownerrefs"), "hardened")
	if err := f.env.Admin.Create(f.env.Ctx, sj); err != nil {
		t.Fatal(err)
	}
	f.clock.SetTime(sj.CreationTimestamp.Time)
	f.nextMinute()
	testenv.WaitCacheCurrent(t, f.env, sj)
	if _, err := f.rec.Reconcile(f.env.Ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)}); err != nil {
		t.Fatalf("reconcile: %v (the chart's ClusterRole lacks update on scheduledjobs/finalizers?)", err)
	}
	if js := f.jobsOf(t, sj); len(js) != 1 {
		t.Fatalf("%d Jobs at the slot, want 1", len(js))
	}
}
