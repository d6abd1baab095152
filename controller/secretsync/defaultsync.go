package secretsync

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// DefaultFieldOwner is the server-side apply field manager of the default SecretSync.
const DefaultFieldOwner = "platform-operators-default"

// The retry delays of a failing apply of a default SecretSync: doubled after each failure.
const (
	defaultRetryFirst = time.Second
	defaultRetryMax   = 5 * time.Minute
)

// defaultRetry is the backoff of a failing apply: 1 s, 2 s, 4 s, ... 256 s, then 5 min on every
// later Step (wait.Backoff stops growing once the next delay would pass Cap).
func defaultRetry() wait.Backoff {
	return wait.Backoff{Duration: defaultRetryFirst, Factor: 2, Cap: defaultRetryMax, Steps: math.MaxInt32}
}

// Default keeps a SecretSync the chart asks for applied: the seed's rule (every Secret of Type in
// SourceNamespace copied to every namespace), or one named Secret (SourceName), optionally added
// to ServiceAccounts' imagePullSecrets (the chart's Harbor pull secret). The chart cannot render it as a manifest, because
// Helm cannot create a custom resource in the same release that creates its CRD from templates/.
// It is applied with server-side apply, so fields a user adds (e.g. target.namespaceSelector)
// stay, while the fields set here follow the chart's values. It is kept applied: when the
// SecretSync is deleted or a field set here is changed, it is applied again. It only runs on the
// leader (a manager Runnable that needs leader election).
type Default struct {
	Client client.Client
	// Reader reads the SecretSync past the cache (which drops managedFields), to tell the
	// imagePullSecretFor entries the chart applied from those a user added; nil is Client.
	Reader client.Reader
	// Cache supplies the SecretSync informer whose events wake Default (the manager's cache).
	// Required: without it the SecretSync would be applied once and not kept.
	Cache           cache.Informers
	Name            string
	SourceNamespace string
	// SourceName selects one Secret; empty selects every Secret (of Type, when set).
	SourceName string
	Type       string
	// ImagePullSecretFor names ServiceAccounts that get the copies as image pull secrets.
	ImagePullSecretFor []string
	Log                logr.Logger
}

// Start applies the SecretSync, and again whenever it is deleted or a field it sets changes,
// until ctx ends. A failed apply is retried after 1 s, 2 s, 4 s, ... up to 5 min.
func (d *Default) Start(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if d.Cache == nil {
		return fmt.Errorf("the default SecretSync %s has no cache to watch it with", d.Name)
	}
	inf, err := d.Cache.GetInformer(ctx, &v1alpha1.SecretSync{})
	if err != nil {
		return fmt.Errorf("watching the default SecretSync %s: %w", d.Name, err)
	}
	ours := func(obj any) bool {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(client.Object)
		return ok && o.GetName() == d.Name
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ours(obj) {
				poke()
			}
		},
		// Only spec changes: the status, written on every sync, cannot drift from the chart.
		UpdateFunc: func(old, obj any) {
			if ours(obj) && old.(client.Object).GetGeneration() != obj.(client.Object).GetGeneration() {
				poke()
			}
		},
		DeleteFunc: func(obj any) {
			if ours(obj) {
				poke()
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching the default SecretSync %s: %w", d.Name, err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()

	poke()
	retry := defaultRetry()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		applied, err := d.ensure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			delay := retry.Step()
			d.Log.Error(err, "Applying the default SecretSync failed; retrying", "secretSync", d.Name, "retryAfter", delay)
			// Events that arrive meanwhile are folded into the one retry.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			poke()
			continue
		}
		retry = defaultRetry()
		if applied {
			d.Log.Info("Default SecretSync applied", "secretSync", d.Name, "sourceNamespace", d.SourceNamespace, "type", d.Type)
		}
	}
}

// ensure applies the SecretSync unless it exists with the fields Default sets; it reports
// whether it applied.
func (d *Default) ensure(ctx context.Context) (bool, error) {
	cur := &v1alpha1.SecretSync{}
	err := d.Client.Get(ctx, client.ObjectKey{Name: d.Name}, cur)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	case err == nil && d.matches(cur):
		// As the chart wants it (every restart, every status or user-only change): no write.
		// Unless it lists a ServiceAccount the chart applied and no longer lists: the apply
		// (imagePullSecretFor is a set) removes it, and keeps those a user added.
		dropped, err := d.dropsAServiceAccount(ctx, cur)
		if err != nil || !dropped {
			return false, err
		}
	}
	// Force: the fields in this object are the chart's, whoever changed them since. Only they
	// are in it, so fields a user added keep their owner and their value.
	//nolint:staticcheck // Apply with an unstructured object needs no generated apply configurations.
	if err := d.Client.Patch(ctx, d.object(), client.Apply, client.FieldOwner(DefaultFieldOwner), client.ForceOwnership); err != nil {
		return false, err
	}
	return true, nil
}

// dropsAServiceAccount reports whether cur lists in imagePullSecretFor a ServiceAccount that
// Default's field manager applied and that the chart no longer names. Only a SecretSync that
// lists more than the chart names is read again (past the cache, for its managedFields).
func (d *Default) dropsAServiceAccount(ctx context.Context, cur *v1alpha1.SecretSync) (bool, error) {
	extra := slices.DeleteFunc(slices.Clone(cur.Spec.ImagePullSecretFor), func(n string) bool {
		return slices.Contains(d.ImagePullSecretFor, n)
	})
	if len(extra) == 0 {
		return false, nil
	}
	reader := d.Reader
	if reader == nil {
		reader = d.Client
	}
	live := &v1alpha1.SecretSync{}
	if err := reader.Get(ctx, client.ObjectKey{Name: d.Name}, live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	applied := appliedServiceAccounts(live.ManagedFields)
	return slices.ContainsFunc(extra, func(n string) bool { return applied[n] }), nil
}

// appliedServiceAccounts returns the imagePullSecretFor entries DefaultFieldOwner's apply owns,
// read from managedFields: in FieldsV1 a set's item is the key `v:<item as JSON>`.
func appliedServiceAccounts(fields []metav1.ManagedFieldsEntry) map[string]bool {
	out := map[string]bool{}
	for _, f := range fields {
		if f.Manager != DefaultFieldOwner || f.Operation != metav1.ManagedFieldsOperationApply || f.FieldsV1 == nil {
			continue
		}
		var tree struct {
			// store: per pass; paid by the manager's own apply (its managed fields).
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(f.FieldsV1.GetRawBytes(), &tree) != nil {
			continue
		}
		var items map[string]json.RawMessage
		if json.Unmarshal(tree.Spec["f:imagePullSecretFor"], &items) != nil {
			continue
		}
		for k := range items {
			var name string
			if v, ok := strings.CutPrefix(k, "v:"); ok && json.Unmarshal([]byte(v), &name) == nil {
				out[name] = true
			}
		}
	}
	return out
}

// object is the apply configuration: exactly the fields Default owns.
func (d *Default) object() *unstructured.Unstructured {
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
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "SecretSync",
		"metadata":   map[string]any{"name": d.Name},
		"spec":       spec,
	}}
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
