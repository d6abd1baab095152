package main

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// startTestManager builds the manager as main.go does (newManager, registering its metrics in
// reg) and starts it on a context of its own below ctx; when the test ends it is stopped and
// waited for. Other tests of this package start managers in the same process (the same controller
// names), so names are not validated; tweak, when not nil, changes the options further.
func startTestManager(t *testing.T, ctx context.Context, o options, enabled []string, cfg *rest.Config, reg prometheus.Registerer, tweak func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	mctx, cancel := context.WithCancel(ctx)
	mgr, err := newManager(mctx, o, enabled, cfg, logr.Discard(), reg, func(opts *ctrl.Options) {
		opts.Controller.SkipNameValidation = ptr.To(true)
		if tweak != nil {
			tweak(opts)
		}
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return mgr
}
