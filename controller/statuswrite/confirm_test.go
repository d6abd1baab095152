package statuswrite

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// An owner read from the cache is current only at the version the API server has; a version this
// process confirmed or wrote costs no read afterwards. (A ConfigMap stands for the At, the
// ScheduledJob and the SecretSync: Confirmations reads only metadata.)
func TestConfirmationsReadOnlyWhatTheyHaveNotSeen(t *testing.T) {
	ctx := context.Background()
	owner := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "ns", ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name      string
		api       string // the API server's resourceVersion ("": not found)
		seen      string // the version this process confirmed or wrote before ("": none)
		cached    string
		want      bool
		wantReads int
	}{
		{name: "a first look reads once and confirms the cached version", api: "5", cached: "5", want: true, wantReads: 1},
		{name: "a cached version behind the API server's is not current", api: "6", cached: "5", want: false, wantReads: 1},
		{name: "a version confirmed before needs no read", api: "6", seen: "5", cached: "5", want: true, wantReads: 0},
		{name: "a version this process wrote needs no read", api: "7", seen: "7", cached: "7", want: true, wantReads: 0},
		{name: "another version than the one confirmed is read again", api: "8", seen: "7", cached: "8", want: true, wantReads: 1},
		{name: "an owner the API server no longer has is not current, and no error", cached: "5", want: false, wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			b := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				if err := c.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				obj.SetResourceVersion(tc.api) // the fake client keeps its own versions
				return nil
			}})
			if tc.api != "" {
				b = b.WithObjects(owner(""))
			}
			var c Confirmations
			if tc.seen != "" {
				c.Wrote(owner(tc.seen))
			}
			got, err := c.Current(ctx, b.Build(), owner(tc.cached), &corev1.ConfigMap{})
			if err != nil || got != tc.want || reads != tc.wantReads {
				t.Errorf("Current = %t, %v after %d reads; want %t, nil after %d", got, err, reads, tc.want, tc.wantReads)
			}
			if c.Confirmed(owner(tc.cached)) != tc.want {
				t.Errorf("Confirmed = %t after Current, want %t", !tc.want, tc.want)
			}
		})
	}
	t.Run("a failed read is an error, not an answer", func(t *testing.T) {
		boom := errors.New("timeout")
		api := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		}}).Build()
		var c Confirmations
		if got, err := c.Current(ctx, api, owner("5"), &corev1.ConfigMap{}); got || !errors.Is(err, boom) {
			t.Errorf("Current = %t, %v; want false, %v", got, err, boom)
		}
	})
	t.Run("a deleted owner is forgotten", func(t *testing.T) {
		var c Confirmations
		c.Wrote(owner("5"))
		c.Forget(client.ObjectKeyFromObject(owner("5")))
		if c.Confirmed(owner("5")) {
			t.Errorf("still confirmed after Forget")
		}
	})
}
