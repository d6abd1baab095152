package jobs

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// The object Current read is not read again for the template: a pass that creates a Job from an
// owner whose template the cache dropped costs one GET, not two.
func TestWithTemplateReusesTheObjectCurrentRead(t *testing.T) {
	ctx := context.Background()
	reads := 0
	api := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "ns"}, Data: map[string]string{"template": "whole"}}).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	var first corev1.ConfigMap
	if err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "o"}, &first); err != nil {
		t.Fatal(err)
	}
	cached := first.DeepCopy()
	cached.Data = nil
	var c statuswrite.Confirmations
	live := &corev1.ConfigMap{}
	reads = 0
	if ok, err := c.Current(ctx, api, cached, live); !ok || err != nil {
		t.Fatalf("Current = %t, %v", ok, err)
	}
	ok, err := WithTemplate(ctx, api, cached, live, func(l *corev1.ConfigMap) { cached.Data = l.Data })
	if !ok || err != nil || cached.Data["template"] != "whole" {
		t.Fatalf("WithTemplate = %t, %v, data %v", ok, err, cached.Data)
	}
	if reads != 1 {
		t.Errorf("%d reads for Current and WithTemplate, want 1", reads)
	}
}
