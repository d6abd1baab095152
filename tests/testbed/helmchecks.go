package testbed

import (
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"
)

func helmConfig(r Release) (*action.Configuration, error) {
	settings := cli.New()
	settings.KubeConfig = r.Kubeconfig
	cfg := new(action.Configuration)
	if err := cfg.Init(settings.RESTClientGetter(), r.Namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm init: %w", err)
	}
	return cfg, nil
}

// UpgradeServerDryRun does what `helm upgrade --dry-run=server` does: render the chart against the
// live cluster (so `lookup` sees live objects) without applying anything. The error is the one a
// real upgrade would stop with before applying (a template's `fail`, a schema violation).
func UpgradeServerDryRun(r Release) error {
	cfg, err := helmConfig(r)
	if err != nil {
		return err
	}
	chrt, err := loader.Load(r.ChartDir)
	if err != nil {
		return fmt.Errorf("loading chart %s: %w", r.ChartDir, err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.DryRun, up.DryRunOption = r.Namespace, true, "server"
	_, err = up.Run(r.Name, chrt, r.Values)
	return err
}

// Upgrade does `helm upgrade` (no install, no wait) and returns the error Helm stops with.
func Upgrade(r Release) (*release.Release, error) {
	cfg, err := helmConfig(r)
	if err != nil {
		return nil, err
	}
	chrt, err := loader.Load(r.ChartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", r.ChartDir, err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = r.Namespace
	return up.Run(r.Name, chrt, r.Values)
}

// HelmTest runs the release's `helm test` hooks, as `helm test` does, and returns the release
// with the hooks' last run phases.
func HelmTest(r Release) (*release.Release, error) {
	cfg, err := helmConfig(r)
	if err != nil {
		return nil, err
	}
	rt := action.NewReleaseTesting(cfg)
	rt.Namespace = r.Namespace
	rt.Timeout = r.Timeout
	if rt.Timeout == 0 {
		rt.Timeout = 2 * time.Minute
	}
	return rt.Run(r.Name)
}
