package secretsync

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// Sources keeps one cache per source namespace, created when a SecretSync first names the
// namespace, with an informer per kind (Secret, ConfigMap) that a SecretSync copies from there;
// each informer's events are wired into the controller. It is a manager Runnable so its
// informers live as long as the elected manager; a namespace's cache stops when no SecretSync
// names it any more (Prune).
//
// Whoever may write in a source namespace decides how large its objects are, so the caches keep
// a bounded form (boundSource: no data, labels only up to a bound) and a pass reads the sources
// it copies from the API (Full), remembering the last read of each by resourceVersion (Reads,
// shared with the CopyRequest controller and bounded in bytes).
type Sources struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	// HTTPClient and Mapper are the manager's (mgr.GetHTTPClient, mgr.GetRESTMapper), shared by
	// every source cache. Without them each source namespace's cache builds a client of its own
	// (its own connections to the API server) and a REST mapper of its own from discovery, about
	// 1 MiB of heap per source namespace that the manager already holds once (the hostile
	// scenario's heap profiles). nil: each cache builds its own.
	HTTPClient *http.Client
	Mapper     meta.RESTMapper
	// Handler maps a source Secret's events to SecretSync requests.
	Handler handler.EventHandler
	// Reads reads a source whole (Full) and remembers it by resourceVersion, shared with the
	// CopyRequest controller (main.go builds one for both). Required.
	Reads *SourceReads

	mu      sync.Mutex
	ctx     context.Context
	started chan struct{}
	ctrl    controller.Controller
	// store: about 1 KiB (bytes of bookkeeping, the cache is in the informer inventory) per source
	// namespace a SecretSync names; paid by the admins.
	byNS map[string]sourceCache
	// store: about 50 bytes per source namespace a SecretSync names; paid by the admins.
	watched  map[string]bool // namespace + "/" + kind
	initOnce sync.Once
}

type sourceCache struct {
	cache.Cache
	stop context.CancelFunc
}

func (s *Sources) init() {
	s.initOnce.Do(func() {
		s.started = make(chan struct{})
		s.byNS = map[string]sourceCache{}
		s.watched = map[string]bool{}
	})
}

// SetController names the controller that receives the source events.
func (s *Sources) SetController(c controller.Controller) {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctrl = c
}

// Start records the manager's context for the informers and blocks until it ends.
func (s *Sources) Start(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	close(s.started)
	<-ctx.Done()
	return nil
}

// SourceCacheKinds are the kinds of a source namespace's cache and their bound.
func SourceCacheKinds() []cachebounds.Kind {
	return []cachebounds.Kind{
		{Object: &corev1.Secret{}, Transform: boundSource, Bound: "boundSource: identity, type, labels up to 4 KiB; no data (read from the API when a pass copies it)"},
		{Object: &corev1.ConfigMap{}, Transform: boundSource, Bound: "boundSource: identity, labels up to 4 KiB; no data (read from the API when a pass copies it)"},
	}
}

// Reader returns a synced reader of the objects of kind in namespace, in their bounded form
// (boundSource), starting its informer if needed.
func (s *Sources) Reader(ctx context.Context, namespace string, kind *objectKind) (client.Reader, error) {
	s.init()
	select {
	case <-s.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	c, ok := s.byNS[namespace]
	if !ok {
		cc, err := cachebounds.New(s.Config, cachebounds.Inventory{Name: "source/" + namespace, Kinds: SourceCacheKinds()}, cache.Options{
			Scheme:            s.Scheme,
			HTTPClient:        s.HTTPClient,
			Mapper:            s.Mapper,
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
		})
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("creating the source cache for namespace %s: %w", namespace, err)
		}
		cctx, stop := context.WithCancel(s.ctx)
		go func() { _ = cc.Start(cctx) }()
		c = sourceCache{Cache: cc, stop: stop}
		s.byNS[namespace] = c
	}
	if w := namespace + "/" + string(kind.name); !s.watched[w] {
		if err := s.ctrl.Watch(source.Kind[client.Object](c, kind.object(), s.Handler)); err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("watching source %ss in namespace %s: %w", kind.name, namespace, err)
		}
		s.watched[w] = true
	}
	s.mu.Unlock()
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The cache reads a kind once its informer was asked for (the watch above asks from a goroutine).
	if _, err := c.GetInformer(syncCtx, kind.object(), cache.BlockUntilSynced(false)); err != nil {
		return nil, err
	}
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("the %s cache of source namespace %s did not sync", kind.name, namespace)
	}
	return c, nil
}

// Prune stops the caches of the source namespaces no SecretSync names (inUse lists those that
// one does), and forgets what Full read there. inUse is called with the lock that Reader creates
// caches under: a SecretSync whose pass just started a cache was in the list already (its pass
// came from the same cache the list is read from), so a stale list cannot stop its cache.
func (s *Sources) Prune(ctx context.Context, inUse func() (map[string]bool, error)) error {
	s.init()
	s.mu.Lock()
	used, err := inUse()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var stopped []string
	for ns, c := range s.byNS {
		if used[ns] {
			continue
		}
		c.stop()
		delete(s.byNS, ns)
		for _, kind := range kinds {
			delete(s.watched, ns+"/"+string(kind.name))
		}
		stopped = append(stopped, ns)
	}
	s.mu.Unlock()
	if len(stopped) == 0 {
		return nil
	}
	for _, ns := range stopped {
		s.Reads.Forget(ns)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Stopped the caches of source namespaces no SecretSync names", "namespaces", stopped)
	return nil
}

// Full returns the source b (bounded, from Reader) whole: remembered from an earlier read at
// b's resourceVersion (by this controller or the CopyRequest controller), else read from the
// API. nil when it is gone. What it returns is shared: not to be changed.
func (s *Sources) Full(ctx context.Context, kind *objectKind, b *corev1.Secret) (*corev1.Secret, error) {
	if !sourceBounded(b) {
		return b, nil
	}
	return s.Reads.Read(ctx, "", kind, types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, b.ResourceVersion)
}

// sourceMark marks the bounded form of a source; sourceLabelsDropped one whose labels were over
// maxSourceLabelBytes and dropped. The ':' makes both keys the API server refuses.
const (
	sourceMark          = keys.Prefix + "cached:source"
	sourceLabelsDropped = keys.Prefix + "cached:labels-dropped"
	maxSourceLabelBytes = 4 << 10
)

// boundSource is a source cache's transform: identity, resourceVersion, deletion, type and the
// labels a selector matches on (all of them up to maxSourceLabelBytes, else none and a mark that
// makes the pass read the source before it matches). Nothing else: not the data, not the
// annotations. It is idempotent.
func boundSource(obj any) (any, error) {
	var m *metav1.ObjectMeta
	switch o := obj.(type) {
	case *corev1.Secret:
		m = &o.ObjectMeta
	case *corev1.ConfigMap:
		m = &o.ObjectMeta
	default:
		return obj, nil
	}
	if _, done := m.Annotations[sourceMark]; done {
		return obj, nil
	}
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, DeletionTimestamp: m.DeletionTimestamp,
		Annotations: map[string]string{sourceMark: ""},
	}
	n := 0
	for k, v := range m.Labels {
		n += len(k) + len(v)
	}
	if n <= maxSourceLabelBytes {
		out.Labels = m.Labels
	} else {
		out.Annotations[sourceLabelsDropped] = ""
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		return &corev1.Secret{ObjectMeta: out, Type: corev1.SecretType(intern(cachebounds.BoundedValue(string(o.Type)))), Immutable: o.Immutable}, nil
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: out, Immutable: o.Immutable}, nil
	}
	return obj, nil
}

// sourceBounded reports whether s is a source cache's bounded form (as kind.wrap gives it).
func sourceBounded(s *corev1.Secret) bool {
	_, ok := s.Annotations[sourceMark]
	return ok
}

// sourceLabelsUnknown reports whether the bounded form s dropped the labels.
func sourceLabelsUnknown(s *corev1.Secret) bool {
	_, ok := s.Annotations[sourceLabelsDropped]
	return ok
}

// pruneSources stops the source caches of namespaces no SecretSync names any more (a SecretSync
// deleted, or its source moved). A list of the cached SecretSyncs: cheap, once per whole pass.
func (r *Reconciler) pruneSources(ctx context.Context) error {
	return r.Sources.Prune(ctx, func() (map[string]bool, error) {
		list := &v1alpha1.SecretSyncList{}
		if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		inUse := make(map[string]bool, len(list.Items))
		for i := range list.Items {
			inUse[list.Items[i].Spec.Source.Namespace] = true
		}
		return inUse, nil
	})
}
