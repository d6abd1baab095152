package secretsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Sources keeps one cache per source namespace, created when a SecretSync first names the
// namespace, with an informer per kind (Secret, ConfigMap) that a SecretSync copies from there;
// each informer's events are wired into the controller. It is a manager Runnable
// so its informers live as long as the elected manager. Informers are not stopped when the last
// SecretSync naming a namespace goes away (source namespaces are few, chosen by cluster admins);
// a restart drops them.
type Sources struct {
	Config *rest.Config
	Scheme *runtime.Scheme
	// Handler maps a source Secret's events to SecretSync requests.
	Handler handler.EventHandler

	mu       sync.Mutex
	ctx      context.Context
	started  chan struct{}
	ctrl     controller.Controller
	byNS     map[string]cache.Cache
	watched  map[string]bool // namespace + "/" + kind
	initOnce sync.Once
}

func (s *Sources) init() {
	s.initOnce.Do(func() {
		s.started = make(chan struct{})
		s.byNS = map[string]cache.Cache{}
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

// Reader returns a synced reader of the objects of kind in namespace, starting its informer if
// needed.
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
		var err error
		c, err = cache.New(s.Config, cache.Options{
			Scheme:            s.Scheme,
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
		})
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("creating the source cache for namespace %s: %w", namespace, err)
		}
		go func() { _ = c.Start(s.ctx) }()
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
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("the %s cache of source namespace %s did not sync", kind.name, namespace)
	}
	return c, nil
}
