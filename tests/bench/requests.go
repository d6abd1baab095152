package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/platform-operators/platform-operators/controller/keys"
)

var copyRequestGVR = schema.GroupVersionResource{Group: "ops.platform-operators.io", Version: "v1alpha1", Resource: "copyrequests"}

const (
	requestSourceNS = "load-offer"
	requestBigNS    = "load-req-big"
	requestSmallNS  = "load-req-small"
	requestSource   = "offered"
)

// requestResult is the CopyRequest part of the fairness benchmark: a small tenant's single
// CopyRequest alone, then created right after a big tenant's many.
type requestResult struct {
	smallAlone, smallBeside time.Duration // from the CopyRequest's create to its copy visible
	bigN                    int
	bigAll                  time.Duration // from the big tenant's first create to its last copy visible
	// bigBefore is how many of the big tenant's copies were visible when the small one's was.
	bigBefore int
}

// copyWatch records when each CopyRequest copy ("namespace/name") was first seen through a watch.
type copyWatch struct {
	mu   sync.Mutex
	seen map[string]time.Time
	stop chan struct{}
}

func newCopyWatch(ctx context.Context, cs kubernetes.Interface) (*copyWatch, error) {
	w := &copyWatch{seen: map[string]time.Time{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = keys.LabelCopyRequest }))
	record := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.seen[s.Namespace+"/"+s.Name]; !ok {
			w.seen[s.Namespace+"/"+s.Name] = now
		}
	}
	if err := runRecording(ctx, f.Core().V1().Secrets().Informer(), w.stop, record); err != nil {
		return nil, fmt.Errorf("copy watch: %w", err)
	}
	return w, nil
}

func (w *copyWatch) close() { close(w.stop) }

// wait waits until every key was seen and returns when the last one was.
func (w *copyWatch) wait(ctx context.Context, keys []string, timeout time.Duration) (time.Time, error) {
	var last time.Time
	got := 0
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		last, got = time.Time{}, 0
		for _, k := range keys {
			if t, ok := w.seen[k]; ok {
				got++
				if t.After(last) {
					last = t
				}
			}
		}
		return got == len(keys), nil
	}); err != nil {
		return time.Time{}, fmt.Errorf("%d of %d CopyRequest copies seen after %s", got, len(keys), timeout)
	}
	return last, nil
}

// countBefore is how many keys were seen before t.
func (w *copyWatch) countBefore(keys []string, t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, k := range keys {
		if s, ok := w.seen[k]; ok && s.Before(t) {
			n++
		}
	}
	return n
}

func createCopyRequest(ctx context.Context, dyn dynamic.Interface, namespace, name string) (time.Time, error) {
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "CopyRequest",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"source": map[string]any{"namespace": requestSourceNS, "name": requestSource}, "name": name},
	}}
	t := time.Now()
	_, err := dyn.Resource(copyRequestGVR).Namespace(namespace).Create(ctx, cr, metav1.CreateOptions{})
	return t, err
}

// loadFairRequests times a small tenant's single CopyRequest alone, then created right after a
// big tenant created n of its own (all copying one offered 2 KiB Secret into their namespaces):
// the manager's 2 CopyRequest workers take the big tenant's backlog and the small one from one
// queue.
func loadFairRequests(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, n int) (*requestResult, error) {
	logf("load: a tenant's single CopyRequest alone, then right after another tenant's %d", n)
	for _, ns := range []string{requestSourceNS, requestBigNS, requestSmallNS} {
		if err := ensureNamespace(ctx, cs, ns, nil); err != nil {
			return nil, err
		}
	}
	src := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: requestSource, Namespace: requestSourceNS,
			Labels:      map[string]string{keys.LabelOffer: "true"},
			Annotations: map[string]string{keys.AnnotationOfferNamespaces: "load-req-*"}},
		Data: payload("v1"),
	}
	if _, err := cs.CoreV1().Secrets(requestSourceNS).Create(ctx, src, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	w, err := newCopyWatch(ctx, cs)
	if err != nil {
		return nil, err
	}
	defer w.close()
	res := &requestResult{bigN: n}
	t0, err := createCopyRequest(ctx, dyn, requestSmallNS, "alone")
	if err != nil {
		return nil, err
	}
	last, err := w.wait(ctx, []string{requestSmallNS + "/alone"}, time.Minute)
	if err != nil {
		return nil, err
	}
	res.smallAlone = last.Sub(t0)
	time.Sleep(5 * time.Second)

	bigKeys := make([]string, n)
	for i := range bigKeys {
		bigKeys[i] = fmt.Sprintf("%s/big-%05d", requestBigNS, i)
	}
	b0 := time.Now()
	if err := parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		_, err := createCopyRequest(ctx, dyn, requestBigNS, fmt.Sprintf("big-%05d", i))
		return err
	}); err != nil {
		return nil, err
	}
	logf("requests: the big tenant's %d CopyRequests created in %s; %d of their copies visible", n, time.Since(b0).Round(time.Millisecond), w.countBefore(bigKeys, time.Now()))
	t0, err = createCopyRequest(ctx, dyn, requestSmallNS, "beside")
	if err != nil {
		return nil, err
	}
	last, err = w.wait(ctx, []string{requestSmallNS + "/beside"}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	res.smallBeside = last.Sub(t0)
	res.bigBefore = w.countBefore(bigKeys, last)
	if last, err = w.wait(ctx, bigKeys, 15*time.Minute); err != nil {
		return nil, err
	}
	res.bigAll = last.Sub(b0)
	logf("requests: the single one alone %s, beside %s (%d of the big tenant's copies before it); the big tenant's %d in %s",
		ms(res.smallAlone), ms(res.smallBeside), res.bigBefore, n, ms(res.bigAll))
	for _, ns := range []string{requestBigNS, requestSmallNS} {
		if err := deleteCollection(ctx, func() error {
			return dyn.Resource(copyRequestGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}); err != nil {
			return nil, err
		}
	}
	return res, cs.CoreV1().Secrets(requestSourceNS).Delete(ctx, requestSource, metav1.DeleteOptions{})
}

// loadRequestsSection is section load-requests.
func loadRequestsSection(r *requestResult, measured, cmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Fairness between tenants' CopyRequests\n\n")
	fmt.Fprintf(&b, "%s. Command: `%s`.\n\n", measured, cmd)
	fmt.Fprintf(&b, "One offered 2 KiB Secret; a small tenant's single CopyRequest timed from its create until its copy is visible through a watch, alone, then created right after a big tenant created %d CopyRequests of the same source (32 writers), which the manager's 2 CopyRequest workers take from the same queue. Target: the single one not delayed by more than 1 s.\n\n", r.bigN)
	fmt.Fprintf(&b, "| case | result | |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| the small tenant's single CopyRequest, alone | %s | |\n", ms(r.smallAlone))
	fmt.Fprintf(&b, "| the same, created right after the big tenant's %d | %s (%d of the big tenant's copies before it) | %s |\n", r.bigN, ms(r.smallBeside), r.bigBefore, verdict(r.smallBeside <= time.Second))
	fmt.Fprintf(&b, "| the big tenant's %d, from its first create to its last copy | %s | |\n", r.bigN, ms(r.bigAll))
	return b.String()
}
