package secretsync

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// TestAStatusWrittenPastAStaleCacheIsNotLeftBehind is the flake of TestNothingChangedMeansNoWrites
// (Ready=False Progressing 4/4 for good): a reconcile that met a stale cache wrote Progressing;
// the next reconcile, woken at once by the event that made the cache stale, still read the
// SecretSync from before that write, computed Synced, found it equal to what it read and wrote
// nothing. Status changes do not wake the controller, so Progressing stayed.
func TestAStatusWrittenPastAStaleCacheIsNotLeftBehind(t *testing.T) {
	scheme := testenv.Scheme(t)
	ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "stale", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ss).WithStatusSubresource(ss).Build()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Metrics: m, Recorder: events.NewFakeRecorder(100)}
	ctx := context.Background()
	obs := observation{targets: []string{"a"}}
	inStep := result{desired: 1, inStep: 1, written: map[propagation.Op]int{}}
	progressing := inStep
	progressing.requeue = true

	read := func() *v1alpha1.SecretSync {
		t.Helper()
		got := &v1alpha1.SecretSync{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ss), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, err := r.writeStatus(ctx, read(), obs, inStep); err != nil {
		t.Fatal(err)
	}
	cached := read() // Synced: what the cache holds from here on
	if _, err := r.writeStatus(ctx, cached.DeepCopy(), obs, progressing); err != nil {
		t.Fatal(err)
	}
	if got := meta.FindStatusCondition(read().Status.Conditions, copyplan.ConditionReady); got == nil || got.Reason != "Progressing" {
		t.Fatalf("Ready = %+v, want Progressing after a requeue", got)
	}

	res, err := r.writeStatus(ctx, cached.DeepCopy(), obs, inStep)
	if err != nil {
		t.Fatal(err)
	}
	got := meta.FindStatusCondition(read().Status.Conditions, copyplan.ConditionReady)
	if got.Reason != "Synced" && res.RequeueAfter <= 0 {
		t.Errorf("the API keeps Ready %s (%s) and the reconcile returned %+v: nothing brings the status back", got.Reason, got.Message, res)
	}
}
