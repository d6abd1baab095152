package podwatcher

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/platform-operators/platform-operators/controller/cachebounds"
)

// Name is the controller's name in --controllers.
const Name = "podwatcher"

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Metrics are the pod watcher's Prometheus series.
type Metrics struct {
	// Transitions counts reported pod events by kind and phase before/after.
	Transitions *prometheus.CounterVec
}

// NewMetrics creates the pod watcher's series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_operators_pod_transitions_total",
		Help: "Pod lifecycle events seen by the pod watcher, by event (added, phaseChanged, deleted) and phase before (from) and after (to); \"none\" is no phase (before an add, after a delete).",
	}, []string{"event", "from", "to"})}
	if err := reg.Register(m.Transitions); err != nil {
		return nil, fmt.Errorf("registering pod watcher metrics: %w", err)
	}
	return m, nil
}

// CacheKind is the cache's Pod kind when the pod watcher runs: limited to the given namespaces
// (all when empty), and trimmed to what the watcher reads (identity and phase), so a cluster
// with many pods costs little memory. Only the pod watcher reads pods from the cache; a
// controller that needs more of a pod must change this transform.
func CacheKind(namespaces []string) cachebounds.Kind {
	return cachebounds.Kind{Object: &corev1.Pod{}, Namespaces: cachebounds.InNamespaces(namespaces), Transform: trimPod, Bound: "trimPod: identity and phase"}
}

func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// Tombstones and other wrappers pass through unchanged.
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, DeletionTimestamp: pod.DeletionTimestamp,
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}, nil
}

// Watcher is a manager Runnable that reports pod events from the shared pod informer. It runs
// only on the elected leader (the Runnable default), so replicas do not log each event twice.
type Watcher struct {
	Informers cache.Informers
	Log       logr.Logger
	Metrics   *Metrics
}

// Start registers the event handler and blocks until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	inf, err := w.Informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting the pod informer: %w", err)
	}
	reg, err := inf.AddEventHandler(w.handler())
	if err != nil {
		return fmt.Errorf("adding the pod event handler: %w", err)
	}
	w.Log.Info("Pod watcher started")
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

func (w *Watcher) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			// Pods that already existed when the watcher started are not news: the seed printed
			// them as adds after the cache synced, which floods logs on every restart.
			if isInInitialList {
				w.Log.V(1).Info("Pod present at start", "pod", klog.KObj(pod), "phase", phase(pod))
				return
			}
			w.record(OnAdd(pod))
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldPod, ok1 := oldObj.(*corev1.Pod)
			newPod, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			if t, changed := OnUpdate(oldPod, newPod); changed {
				w.record(t)
			}
		},
		DeleteFunc: func(obj any) {
			// A delete missed during a watch gap arrives as a tombstone holding the last state.
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				w.record(OnDelete(pod))
			}
		},
	}
}

var messages = map[Kind]string{Added: "Pod added", PhaseChanged: "Pod phase changed", Deleted: "Pod deleted"}

func (w *Watcher) record(t Transition) {
	w.Log.Info(messages[t.Kind], "pod", klog.KRef(t.Namespace, t.Name), "oldPhase", t.From, "newPhase", t.To)
	w.Metrics.Transitions.WithLabelValues(string(t.Kind), t.From, t.To).Inc()
}
