package testbed

import (
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Release names a chart installation.
type Release struct {
	Name       string
	Namespace  string
	ChartDir   string
	Kubeconfig string
	// Values are merged over the chart's values.yaml, as `-f`/`--set` would.
	Values map[string]any
	// Timeout bounds the wait for the release's resources to become ready.
	Timeout time.Duration
	// ResetThenReuseValues, on an upgrade, does what `helm upgrade --reset-then-reuse-values`
	// does (docs/upgrade.md): the new chart's values.yaml, the release's last user values on top,
	// then Values.
	ResetThenReuseValues bool
}

// UpgradeInstall does what `helm upgrade -i --create-namespace --wait` does: install the
// release when it does not exist, upgrade it otherwise. The Go SDK is used rather than the CLI
// so values reach the chart byte-exact (no shell expansion of `$` in a robot account name).
func UpgradeInstall(r Release, logf func(string, ...any)) (*release.Release, error) {
	settings := cli.New()
	settings.KubeConfig = r.Kubeconfig
	cfg := new(action.Configuration)
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := cfg.Init(settings.RESTClientGetter(), r.Namespace, "secret", logf); err != nil {
		return nil, fmt.Errorf("helm init: %w", err)
	}
	chrt, err := loader.Load(r.ChartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", r.ChartDir, err)
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	hist := action.NewHistory(cfg)
	hist.Max = 1
	if _, err := hist.Run(r.Name); errors.Is(err, driver.ErrReleaseNotFound) {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = r.Name, r.Namespace, true
		in.Wait, in.Timeout = true, timeout
		rel, err := in.Run(chrt, r.Values)
		if err != nil {
			return nil, fmt.Errorf("helm install %s: %w", r.Name, err)
		}
		return rel, nil
	} else if err != nil {
		return nil, fmt.Errorf("helm history %s: %w", r.Name, err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.Wait, up.Timeout = r.Namespace, true, timeout
	up.ResetThenReuseValues = r.ResetThenReuseValues
	rel, err := up.Run(r.Name, chrt, r.Values)
	if err != nil {
		return nil, fmt.Errorf("helm upgrade %s: %w", r.Name, err)
	}
	return rel, nil
}

// ReleaseValues returns the values the release was last installed or upgraded with (what
// `helm get values` prints), so an upgrade can change one value and keep the rest.
func ReleaseValues(kubeconfig, namespace, name string) (map[string]any, error) {
	settings := cli.New()
	settings.KubeConfig = kubeconfig
	cfg := new(action.Configuration)
	if err := cfg.Init(settings.RESTClientGetter(), namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm init: %w", err)
	}
	vals, err := action.NewGetValues(cfg).Run(name)
	if err != nil {
		return nil, fmt.Errorf("helm get values %s: %w", name, err)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	return vals, nil
}
