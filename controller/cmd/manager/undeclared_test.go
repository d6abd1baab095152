package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// A controller that reads a kind no inventory declares, through the manager's client as every
// controller does, gets an error naming the kind, and no informer starts for it (a tenant's
// objects of that kind never reach memory, whole or empty); one that watches such a kind stops
// the manager's start. Built as main.go builds the manager, every controller on.
func TestTheManagersCacheRefusesAnUndeclaredKind(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	o, err := parseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false",
		"--controllers=*,podwatcher", "--manager-namespace=default"})
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("reads", func(t *testing.T) {
		mgr := startTestManager(t, ctx, o, enabled, cfg, prometheus.NewRegistry(), nil)
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			t.Fatal("cache did not sync")
		}
		c := mgr.GetClient()
		secretList := &unstructured.UnstructuredList{}
		secretList.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		podMeta := &metav1.PartialObjectMetadataList{}
		podMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		for name, read := range map[string]func() error{
			"Get of an Event":         func() error { return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "x"}, &corev1.Event{}) },
			"List of PodTemplates":    func() error { return c.List(ctx, &corev1.PodTemplateList{}) },
			"informer of LimitRanges": func() error { _, err := mgr.GetCache().GetInformer(ctx, &corev1.LimitRange{}); return err },
			// Declared typed (copies); the unstructured form is another informer, unbounded.
			"Secrets, unstructured, from the cache": func() error { return mgr.GetCache().List(ctx, secretList) },
			// Declared typed (the pod watcher); metadata only is another informer.
			"Pods as metadata": func() error { return c.List(ctx, podMeta) },
		} {
			err := read()
			if !cachebounds.IsUndeclared(err) {
				t.Errorf("%s: error %v, want the cache's refusal", name, err)
			}
		}
		// Declared kinds read as before.
		if err := c.List(ctx, &corev1.NamespaceList{}); err != nil {
			t.Errorf("List of Namespaces (declared): %v", err)
		}
	})

	t.Run("watches", func(t *testing.T) {
		mctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		mgr, err := newManager(mctx, o, enabled, cfg, logr.Discard(), prometheus.NewRegistry(), func(opts *ctrl.Options) {
			opts.Controller.SkipNameValidation = ptr.To(true) // the first subtest registered the same names
			opts.Controller.CacheSyncTimeout = 3 * time.Second
		})
		if err != nil {
			t.Fatal(err)
		}
		// A new controller watching a kind nobody declared.
		if err := ctrl.NewControllerManagedBy(mgr).Named("events").For(&corev1.Event{}).
			Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })); err != nil {
			t.Fatal(err)
		}
		// controller-runtime retries the informer until the sync timeout and then fails the start
		// (its log, not the error, carries the refusal; Built lists it while the cache runs).
		refused := make(chan bool, 1)
		go func() {
			for mctx.Err() == nil {
				if slices.ContainsFunc(cachebounds.Built(), func(i cachebounds.Informer) bool {
					return i.Cache == "manager" && i.Refused == "typed /v1, Kind=Event"
				}) {
					refused <- true
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			refused <- false
		}()
		err = mgr.Start(mctx)
		if err == nil || !strings.Contains(err.Error(), "kind source: *v1.Event") {
			t.Fatalf("manager start: %v, want it failed on the Event watch", err)
		}
		cancel()
		if !<-refused {
			t.Errorf("the manager's cache did not refuse the Event informer: %+v", cachebounds.Built())
		}
	})
}
