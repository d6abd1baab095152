package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/platform-operators/platform-operators/controller/tenantconfig"
)

// dispatch runs a subcommand named by the first argument, or the manager (run) when there is
// none: `manager kubeconfig ...` prints a tenant kubeconfig, anything else is manager flags.
func dispatch(args []string) error {
	if len(args) > 0 && args[0] == "schedule" {
		return scheduleCommand(args[1:]) // `manager schedule ...` prints when a schedule runs
	}
	if len(args) > 0 && args[0] == "kubeconfig" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return tenantconfig.Main(ctx, args[1:], os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "probe" {
		return runProbe(args[1:]) // `manager probe URL` asks a URL until it answers 200 (helm test)
	}
	return run(args)
}
