package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operators/platform-operators/controller/at"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/scheduledjob"
	"github.com/platform-operators/platform-operators/controller/writegate"
)

// setupJobControllers wires the At and ScheduledJob controllers and the Job index they share;
// their metrics register with reg. podsStuckAfter is --job-pods-stuck-after; perObjectMetricsLimit
// is --per-object-metrics-limit.
func setupJobControllers(ctx context.Context, mgr ctrl.Manager, reg prometheus.Registerer, jobImage string, podsStuckAfter time.Duration, atOn, scheduledJobOn bool, scheduledJobWorkers, perObjectMetricsLimit int, writes *writegate.Gate) error {
	if !atOn && !scheduledJobOn {
		return nil
	}
	if err := jobs.IndexByControllerUID(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing Jobs by controller: %w", err)
	}
	if atOn {
		objects, err := at.NewObjectMetrics(reg, perObjectMetricsLimit)
		if err != nil {
			return fmt.Errorf("registering at metrics: %w", err)
		}
		r := &at.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(at.Name),
			Clock: clock.RealClock{}, JobImage: jobImage, PodsStuckAfter: podsStuckAfter, Workers: 4, Objects: objects,
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", at.Name, err)
		}
	}
	if scheduledJobOn {
		m, err := scheduledjob.NewMetrics(reg)
		if err != nil {
			return err
		}
		objects, err := scheduledjob.NewObjectMetrics(reg, perObjectMetricsLimit)
		if err != nil {
			return fmt.Errorf("registering scheduledjob metrics: %w", err)
		}
		r := &scheduledjob.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(scheduledjob.Name),
			Clock: clock.RealClock{}, Metrics: m, Objects: objects, Workers: scheduledJobWorkers, Writes: writes, PodsStuckAfter: podsStuckAfter,
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", scheduledjob.Name, err)
		}
	}
	return nil
}
