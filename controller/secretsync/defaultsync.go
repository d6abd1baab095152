package secretsync

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// DefaultFieldOwner is the server-side apply field manager of the default SecretSync.
const DefaultFieldOwner = "platform-operators-default"

// Default keeps the chart's default SecretSync applied: Secrets of Type in SourceNamespace
// copied to every namespace (the seed's rule). The chart cannot render it as a manifest, because
// Helm cannot create a custom resource in the same release that creates its CRD from templates/.
// It is applied with server-side apply, so fields a user adds (e.g. target.namespaceSelector)
// stay, while the fields set here follow the chart's values. It only runs on the leader.
type Default struct {
	Client          client.Client
	Name            string
	SourceNamespace string
	Type            string
	Log             logr.Logger
}

// Start applies the SecretSync, retrying with backoff (the CRD may be moments from ready), and
// then waits for ctx to end.
func (d *Default) Start(ctx context.Context) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SecretSync",
		"metadata":   map[string]any{"name": d.Name},
		"spec": map[string]any{
			"source": map[string]any{"namespace": d.SourceNamespace, "selector": map[string]any{}, "type": d.Type},
		},
	}}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 8, Cap: time.Minute}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		// Already as the chart wants it (every restart): no write.
		cur := &v1alpha1.SecretSync{}
		if err := d.Client.Get(ctx, client.ObjectKey{Name: d.Name}, cur); err == nil && d.matches(cur) {
			return true, nil
		}
		//nolint:staticcheck // Apply with an unstructured object needs no generated apply configurations.
		if err := d.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner(DefaultFieldOwner), client.ForceOwnership); err != nil {
			d.Log.Error(err, "Applying the default SecretSync failed; retrying", "secretSync", d.Name)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		d.Log.Error(err, "Giving up on the default SecretSync", "secretSync", d.Name)
	} else {
		d.Log.Info("Default SecretSync applied", "secretSync", d.Name, "sourceNamespace", d.SourceNamespace, "type", d.Type)
	}
	<-ctx.Done()
	return nil
}

// matches reports whether the SecretSync already has the fields Default applies.
func (d *Default) matches(cur *v1alpha1.SecretSync) bool {
	src := cur.Spec.Source
	return src.Namespace == d.SourceNamespace && string(src.Type) == d.Type && src.Name == "" &&
		src.Selector != nil && len(src.Selector.MatchLabels) == 0 && len(src.Selector.MatchExpressions) == 0
}
