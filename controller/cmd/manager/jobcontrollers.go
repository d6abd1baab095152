package main

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/platform-operators/platform-operators/controller/at"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/scheduledjob"
)

// setupJobControllers wires the At and ScheduledJob controllers and the Job index they share.
func setupJobControllers(ctx context.Context, mgr ctrl.Manager, jobImage string, atOn, scheduledJobOn bool, scheduledJobWorkers int) error {
	if !atOn && !scheduledJobOn {
		return nil
	}
	if err := jobs.IndexByControllerUID(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing Jobs by controller: %w", err)
	}
	if atOn {
		r := &at.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(at.Name),
			Clock: clock.RealClock{}, JobImage: jobImage, Workers: 4,
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", at.Name, err)
		}
	}
	if scheduledJobOn {
		m, err := scheduledjob.NewMetrics(crmetrics.Registry)
		if err != nil {
			return err
		}
		r := &scheduledjob.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(scheduledjob.Name),
			Clock: clock.RealClock{}, Metrics: m, Workers: scheduledJobWorkers,
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", scheduledjob.Name, err)
		}
	}
	return nil
}
