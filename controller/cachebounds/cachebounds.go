package cachebounds

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/digest"
)

// MaxObjectBytes is what one cached object may cost at most, serialized, whatever a tenant
// wrote: the bound the enumerating test asserts for every informer.
const MaxObjectBytes = 8 << 10

// Kind is one kind a cache holds and its bound.
type Kind struct {
	// Object is the kind (a typed object, or a metav1.PartialObjectMetadata for metadata only).
	Object client.Object
	// Label, when set, limits the cache to the objects carrying a key (how many are cached).
	Label labels.Selector
	// Namespaces, when set, limits the cache to these namespaces (cache.ByObject.Namespaces).
	// store: configuration; paid by the admin (one entry per --watch-namespaces namespace).
	Namespaces map[string]cache.Config
	// Transform reduces each object to the bounded form the cache keeps (what one costs).
	// Required: it must be idempotent and leave the objects it does not know unchanged.
	Transform toolscache.TransformFunc
	// Bound says in words what the cache keeps of an object, for error messages and docs.
	Bound string
}

// InNamespaces is the cache configuration that limits a cache (or a Kind) to namespaces: nil,
// every namespace, when there are none.
func InNamespaces(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// Inventory is every kind one cache holds.
type Inventory struct {
	// Name names the cache ("manager", "source/<namespace>", "copyrequest-offers").
	Name  string
	Kinds []Kind
}

// options returns base with the inventory's kinds as its ByObject, Identity as the default
// transform (a second line behind the refusal of undeclared kinds), ReaderFailOnMissingInformer,
// and a NewInformer that records each informer built into rec (Built) and bounds its watches
// (boundWatches). base must set neither ByObject nor DefaultTransform: everything a cache holds
// goes through the inventory. Unexported: options alone would build a cache that starts
// undeclared informers; New and ManagerOptions refuse them.
func options(inv Inventory, base cache.Options, rec *record) (cache.Options, error) {
	if len(base.ByObject) > 0 || base.DefaultTransform != nil {
		return base, fmt.Errorf("cache %s: ByObject and DefaultTransform come from its inventory (cachebounds.Kind), not the options", inv.Name)
	}
	declared := map[string]bool{}
	base.ByObject = make(map[client.Object]cache.ByObject, len(inv.Kinds))
	var errs []error
	for _, k := range inv.Kinds {
		t := typeName(k.Object)
		_, metadata := k.Object.(*metav1.PartialObjectMetadata)
		switch {
		case k.Transform == nil:
			errs = append(errs, fmt.Errorf("cache %s: %s has no bound (a Transform to a bounded form)", inv.Name, t))
		case declared[t] && !metadata:
			errs = append(errs, fmt.Errorf("cache %s: %s is declared twice", inv.Name, t))
		default:
			declared[t] = true
			base.ByObject[k.Object] = cache.ByObject{Label: k.Label, Namespaces: k.Namespaces, Transform: k.Transform}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return base, err
	}
	base.DefaultTransform = Identity
	base.ReaderFailOnMissingInformer = true
	next := base.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	base.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		inf := next(boundWatches(lw), obj, resync, idx)
		t := typeName(obj)
		if !declared[t] {
			// Not reached through New or ManagerOptions, which refuse an undeclared kind before
			// any informer starts; should one start another way, it keeps identities only.
			logf.Log.WithName("cachebounds").Error(nil, "An informer of a kind no inventory declares keeps only each object's identity; declare the kind with its bound", "cache", inv.Name, "type", t)
		}
		rec.add(Informer{Cache: inv.Name, Type: t, Declared: declared[t], Store: inf.GetStore()})
		return inf
	}
	return base, nil
}

// Identity is the default transform of every cache built here: it keeps of an object only its
// identity (kind, name, namespace, UID, resourceVersion, generation, deletion), in an object of
// the same type. The caches New and ManagerOptions build refuse an undeclared kind before an
// informer starts (UndeclaredError); Identity is the second line, should an informer of one start
// another way: never a tenant's megabytes.
func Identity(in any) (any, error) {
	m, ok := in.(metav1.Object)
	if !ok {
		return in, nil // a tombstone or another wrapper: the informer unwraps it later
	}
	// An empty object of the same type (an Unstructured too: it gets its kind below).
	out, ok := reflect.New(reflect.TypeOf(in).Elem()).Interface().(metav1.Object)
	if !ok {
		return in, nil
	}
	if r, ok := in.(runtime.Object); ok {
		if ro, ok := out.(runtime.Object); ok {
			ro.GetObjectKind().SetGroupVersionKind(r.GetObjectKind().GroupVersionKind())
		}
	}
	out.SetName(m.GetName())
	out.SetNamespace(m.GetNamespace())
	out.SetUID(m.GetUID())
	out.SetResourceVersion(m.GetResourceVersion())
	out.SetGeneration(m.GetGeneration())
	out.SetDeletionTimestamp(m.GetDeletionTimestamp())
	return out, nil
}

// Informer is an informer a running cache built here started, or a kind it refused, as Built
// reports it.
type Informer struct {
	// Cache is the name of its inventory; Type the Go type (and, for metadata, nothing more) of
	// what it holds.
	Cache, Type string
	// Declared is false for a kind no inventory declared (kept as Identity).
	Declared bool
	// Store is what the informer holds, for tests that weigh it; nil for a refusal.
	Store toolscache.Store
	// Refused, when set, says this is no informer but a request for a kind the cache refused
	// (UndeclaredError): the form and GroupVersionKind asked for.
	Refused string
}

// record is what one cache built here started and refused, oldest first.
type record struct {
	mu  sync.Mutex
	all []Informer
}

func (r *record) add(i Informer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, i)
}

func (r *record) list() []Informer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// running is every cache built here whose Start has not returned.
var running struct {
	sync.Mutex
	caches []*bounded
}

// Built returns, for every cache built here that is running (Start called and not returned), each
// informer it built and each kind it refused (Refused), in the order the caches started. A cache
// leaves the list when it stops, with what it held: the list keeps no stopped cache's Store.
func Built() []Informer {
	running.Lock()
	defer running.Unlock()
	var out []Informer
	for _, b := range running.caches {
		out = append(out, b.rec.list()...)
	}
	return out
}

func typeName(o runtime.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return "unstructured:" + u.GroupVersionKind().String()
	}
	return fmt.Sprintf("%T", o)
}

// maxKeptValue bounds a label or annotation value BoundedMeta keeps: a longer one is kept as its
// digest (digest.Of), which still tells two values apart.
const maxKeptValue = 1024

// maxKeptKeys bounds how many keys of ours BoundedMeta keeps (labels and annotations each).
const maxKeptKeys = 16

// BoundedMeta is what a cache keeps of an object's metadata: identity, resourceVersion,
// generation, creation and deletion, the controller owner reference, and the labels and
// annotations of ours (keys.Prefix, the managed-by label): those the controller reads (read)
// first, then others by name, at most maxKeptKeys of each, each value over maxKeptValue as its
// digest. Nothing a tenant added under its own keys (the last-applied-configuration annotation of
// kubectl, which repeats the whole object, included), and no key of ours crowds out one read.
func BoundedMeta(m *metav1.ObjectMeta, read ...string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		Labels: ours(m.Labels, read), Annotations: ours(m.Annotations, read),
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return out
}

// ours returns the entries of m under our keys, bounded (BoundedMeta); nil when there are none.
func ours(m map[string]string, read []string) map[string]string {
	var names, others []string
	for k := range m {
		switch {
		case slices.Contains(read, k):
			names = append(names, k)
		case strings.HasPrefix(k, keys.Prefix) || k == keys.LabelManagedBy:
			others = append(others, k)
		}
	}
	if len(names)+len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	names = append(names, others...)
	names = names[:min(len(names), maxKeptKeys)]
	out := make(map[string]string, len(names))
	for _, k := range names {
		out[k] = BoundedValue(m[k])
	}
	return out
}

// BoundedValue is v, or its digest (digest.Of) when v is longer than maxKeptValue bytes.
func BoundedValue(v string) string {
	if len(v) <= maxKeptValue {
		return v
	}
	return digest.Of([]byte(v))
}
