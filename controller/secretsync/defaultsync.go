package secretsync

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// DefaultFieldOwner is the server-side apply field manager of the default SecretSync.
const DefaultFieldOwner = "platform-operators-default"

// Default keeps a SecretSync the chart asks for applied: the seed's rule (every Secret of Type in
// SourceNamespace copied to every namespace), or one named Secret (SourceName), optionally added
// to ServiceAccounts' imagePullSecrets (the chart's Harbor pull secret). The chart cannot render it as a manifest, because
// Helm cannot create a custom resource in the same release that creates its CRD from templates/.
// It is applied with server-side apply, so fields a user adds (e.g. target.namespaceSelector)
// stay, while the fields set here follow the chart's values. It only runs on the leader.
type Default struct {
	Client          client.Client
	Name            string
	SourceNamespace string
	// SourceName selects one Secret; empty selects every Secret (of Type, when set).
	SourceName string
	Type       string
	// ImagePullSecretFor names ServiceAccounts that get the copies as image pull secrets.
	ImagePullSecretFor []string
	Log                logr.Logger
}

// Start applies the SecretSync, retrying with backoff (the CRD may be moments from ready), and
// then waits for ctx to end.
func (d *Default) Start(ctx context.Context) error {
	source := map[string]any{"namespace": d.SourceNamespace}
	if d.SourceName != "" {
		source["name"] = d.SourceName
	} else {
		source["selector"] = map[string]any{}
	}
	if d.Type != "" {
		source["type"] = d.Type
	}
	spec := map[string]any{"source": source}
	if len(d.ImagePullSecretFor) > 0 {
		sas := make([]any, len(d.ImagePullSecretFor))
		for i, n := range d.ImagePullSecretFor {
			sas[i] = n
		}
		spec["imagePullSecretFor"] = sas
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SecretSync",
		"metadata":   map[string]any{"name": d.Name},
		"spec":       spec,
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
	if src.Namespace != d.SourceNamespace || string(src.Type) != d.Type || src.Name != d.SourceName {
		return false
	}
	if d.SourceName == "" && (src.Selector == nil || len(src.Selector.MatchLabels) > 0 || len(src.Selector.MatchExpressions) > 0) {
		return false
	}
	for _, n := range d.ImagePullSecretFor {
		if !slices.Contains(cur.Spec.ImagePullSecretFor, n) {
			return false
		}
	}
	return true
}
