package testbed

import (
	"errors"
	"fmt"
	"io"
	"strings"
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
// with the hooks' last run phases. With logs it then writes each test pod's log there, as
// `helm test --logs` does (what CI systems and chart-testing users run): reading the log fails
// when the pod is gone, so a test hook deleted on success fails here as it fails for them.
func HelmTest(r Release, logs io.Writer) (*release.Release, error) {
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
	rel, err := rt.Run(r.Name)
	if logs == nil || rel == nil {
		return rel, err
	}
	// As the helm CLI: the logs of a failed run too, and the run's error first.
	if lerr := rt.GetPodLogs(logs, rel); lerr != nil {
		return rel, errors.Join(err, fmt.Errorf("helm test --logs: %w", lerr))
	}
	return rel, err
}

// CheckReleaseObjects gets every object of the release's manifest from the cluster and returns
// how many there are, or an error naming the first one missing.
func CheckReleaseObjects(r Release, rel *release.Release) (int, error) {
	cfg, err := helmConfig(r)
	if err != nil {
		return 0, err
	}
	objs, err := cfg.KubeClient.Build(strings.NewReader(rel.Manifest), false)
	if err != nil {
		return 0, fmt.Errorf("reading the manifest of %s: %w", rel.Name, err)
	}
	for _, o := range objs {
		if err := o.Get(); err != nil {
			return 0, fmt.Errorf("%s %s/%s of release %s: %w", o.Mapping.GroupVersionKind.Kind, o.Namespace, o.Name, rel.Name, err)
		}
	}
	return len(objs), nil
}
