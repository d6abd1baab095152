package secretsync

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/propagation"
	"github.com/platform-operators/platform-operators/controller/writegate"
)

// A pass's copy writes are in flight on the shared gate until the last one is answered, so a
// ScheduledJob's status patch waiting on it goes after them; with nothing to write, the pass
// leaves the gate alone.
func TestCopyWritesHoldTheSharedGate(t *testing.T) {
	scheme := testenv.Scheme(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			close(entered)
			<-release
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	g := &writegate.Gate{}
	r := &Reconciler{Client: c, APIReader: c, Metrics: m, Workers: 4, Writes: g}
	ctx := context.Background()

	r.apply(ctx, "harbor", secretKind, propagation.Plan{})
	if !g.Wait(ctx, 0) {
		t.Fatal("a pass with nothing to write left the gate busy")
	}

	key := types.NamespacedName{Namespace: "team-a", Name: "harbor-pull"}
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	done := make(chan result)
	go func() {
		done <- r.apply(ctx, "harbor", secretKind, propagation.Plan{Actions: []propagation.Action{{Op: propagation.OpCreate, Key: key, Want: want}}})
	}()
	<-entered
	if g.Wait(ctx, 10*time.Millisecond) {
		t.Fatal("the gate was idle while a copy's create was in flight")
	}
	close(release)
	res := <-done
	if res.writeErr != nil || res.written[propagation.OpCreate] != 1 {
		t.Fatalf("apply = %+v, want the copy created", res)
	}
	if !g.Wait(ctx, 0) {
		t.Fatal("the gate is still busy after the pass")
	}
}
