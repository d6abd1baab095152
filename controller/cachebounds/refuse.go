package cachebounds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// UndeclaredError is what a cache built here answers a GetInformer, GetInformerForKind or
// IndexField of a kind its inventory does not declare (a Get or List of one gets
// controller-runtime's ErrResourceNotCached): no informer is started, so a tenant's objects of
// that kind never reach memory, and the caller fails loudly instead of reading empty objects.
type UndeclaredError struct {
	// Cache is the inventory's name; Kind the form and GroupVersionKind asked for.
	Cache, Kind string
}

func (e *UndeclaredError) Error() string {
	return fmt.Sprintf("cache %s refuses %s: the kind is not declared in its inventory (controller/cachebounds), so it has no bound; declare it with its bound, or read it from the API (APIReader)", e.Cache, e.Kind)
}

// IsUndeclared reports whether err is (or wraps) a cache's refusal of a kind it has no informer
// for: an UndeclaredError, or the ErrResourceNotCached of a Get or List.
func IsUndeclared(err error) bool {
	var u *UndeclaredError
	var n *cache.ErrResourceNotCached
	return errors.As(err, &u) || errors.As(err, &n)
}

// form is how a cache holds a kind: controller-runtime keeps a separate informer for the typed,
// the metadata-only and the unstructured form of one GroupVersionKind, and a declaration of one
// form says nothing of the others' bound (a transform written for *v1.Secret leaves an
// unstructured Secret whole).
type form string

const (
	typed          form = "typed"
	metadataOnly   form = "metadata"
	unstructuredOf form = "unstructured"
)

func formOf(o runtime.Object) form {
	switch o.(type) {
	case *metav1.PartialObjectMetadata:
		return metadataOnly
	case runtime.Unstructured:
		return unstructuredOf
	}
	return typed
}

// kindKey names a form of a kind: "typed /v1, Kind=Secret".
func kindKey(f form, gvk schema.GroupVersionKind) string {
	return string(f) + " " + gvk.String()
}

// bounded is a cache that starts informers only for the kinds its inventory declares.
type bounded struct {
	cache.Cache
	name   string
	scheme *runtime.Scheme
	// store: configuration; paid by nobody outside (the kinds the code declares).
	declared map[string]bool

	mu sync.Mutex
	// store: under 100 bytes per kind the code asks for undeclared, a few at most; paid by nobody
	// outside (kinds are the code's, not a client's).
	refused map[string]bool // recorded once each, however often a controller asks
	rec     *record         // what it built and refused (Built)
}

// Bounded reports whether c is a cache built by this package (New, or the manager's through
// ManagerOptions): one that refuses undeclared kinds.
func Bounded(c cache.Cache) bool {
	_, ok := c.(*bounded)
	return ok
}

// New builds a cache from the inventory: only its kinds, each through its bound; any other kind
// is refused. A kind is read (Get, List) once its informer was asked for (GetInformer: a watch).
func New(cfg *rest.Config, inv Inventory, base cache.Options) (cache.Cache, error) {
	rec := &record{}
	opts, err := options(inv, base, rec)
	if err != nil {
		return nil, err
	}
	return newBounded(cfg, inv, opts, rec)
}

// ManagerOptions sets the manager's cache from the inventory: opts.Cache from base and the
// inventory's kinds (as New), and opts.NewCache to build it as a cache that refuses any kind the
// inventory does not declare, with every declared kind's informer asked for at once. A controller
// reading or watching an undeclared kind through it gets an error (a reconcile fails and backs
// off; a watch fails the manager's start), not a tenant's objects whole or empty ones.
func ManagerOptions(inv Inventory, base cache.Options, opts *manager.Options) error {
	rec := &record{}
	co, err := options(inv, base, rec)
	if err != nil {
		return err
	}
	opts.Cache = co
	opts.NewCache = func(cfg *rest.Config, co cache.Options) (cache.Cache, error) {
		c, err := newBounded(cfg, inv, co, rec)
		for i := 0; err == nil && i < len(inv.Kinds); i++ { // before the start, only registered
			_, err = c.GetInformer(context.Background(), inv.Kinds[i].Object, cache.BlockUntilSynced(false))
		}
		return c, err
	}
	return nil
}

func newBounded(cfg *rest.Config, inv Inventory, opts cache.Options, rec *record) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return wrap(c, inv, opts.Scheme, rec)
}

// wrap makes c refuse every kind inv does not declare, recording into rec what it refuses; s is
// the scheme c maps types with (nil: client-go's, as cache.New).
func wrap(c cache.Cache, inv Inventory, s *runtime.Scheme, rec *record) (*bounded, error) {
	s = cmp.Or(s, scheme.Scheme)
	declared := make(map[string]bool, len(inv.Kinds))
	for _, k := range inv.Kinds {
		gvk, err := apiutil.GVKForObject(k.Object, s)
		if err != nil {
			return nil, fmt.Errorf("cache %s: %T: %w", inv.Name, k.Object, err)
		}
		declared[kindKey(formOf(k.Object), gvk)] = true
	}
	return &bounded{Cache: c, name: inv.Name, scheme: s, declared: declared, refused: map[string]bool{}, rec: rec}, nil
}

// Start runs the cache until ctx is done; while it runs, Built lists what it holds.
func (b *bounded) Start(ctx context.Context) error {
	running.Lock()
	running.caches = append(running.caches, b)
	running.Unlock()
	defer func() {
		running.Lock()
		running.caches = slices.DeleteFunc(running.caches, func(c *bounded) bool { return c == b })
		running.Unlock()
	}()
	return b.Cache.Start(ctx)
}

// refuse returns an UndeclaredError, and records the refusal (Built), when o's kind in o's form
// is not declared; for an object whose kind the scheme does not know, the error the cache below
// would return (it maps types with the same scheme).
func (b *bounded) refuse(o runtime.Object) error {
	gvk, err := apiutil.GVKForObject(o, b.scheme)
	if err != nil {
		return fmt.Errorf("cache %s: %w", b.name, err)
	}
	return b.refuseKey(kindKey(formOf(o), gvk), fmt.Sprintf("%T", o))
}

func (b *bounded) refuseKey(key, goType string) error {
	if b.declared[key] {
		return nil
	}
	b.mu.Lock()
	if !b.refused[key] {
		b.refused[key] = true
		b.rec.add(Informer{Cache: b.name, Type: goType, Refused: key})
	}
	b.mu.Unlock()
	return &UndeclaredError{Cache: b.name, Kind: key}
}

// GetInformer starts or returns the informer of a declared kind only.
func (b *bounded) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if err := b.refuse(obj); err != nil {
		return nil, err
	}
	return b.Cache.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind starts or returns the (typed) informer of a declared kind only.
func (b *bounded) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if err := b.refuseKey(kindKey(typed, gvk), gvk.String()); err != nil {
		return nil, err
	}
	return b.Cache.GetInformerForKind(ctx, gvk, opts...)
}

// IndexField indexes a declared kind only (the cache below starts its informer itself).
func (b *bounded) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if err := b.refuse(obj); err != nil {
		return err
	}
	return b.Cache.IndexField(ctx, obj, field, extract)
}

// NeedLeaderElection is false, as controller-runtime's cache: a standby keeps its caches warm.
func (b *bounded) NeedLeaderElection() bool { return false }
