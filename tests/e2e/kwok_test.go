package e2e

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// kwokProvider runs a kwok cluster from bin/ and the manager as a local process with the
// Deployment's args and env and a token of the chart's ServiceAccount, as `make up` does.
type kwokProvider struct {
	dir     string
	cluster testbed.Kwok
	manager *testbed.Manager
	exited  chan error
}

func (p *kwokProvider) Setup(values map[string]any) []env.Func {
	return []env.Func{func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		return p.setup(ctx, cfg, values)
	}}
}

func (p *kwokProvider) Finish() []env.Func { return []env.Func{p.finish} }

func (p *kwokProvider) setup(ctx context.Context, cfg *envconf.Config, values map[string]any) (context.Context, error) {
	dir, err := os.MkdirTemp("", "po-e2e-")
	if err != nil {
		return ctx, err
	}
	p.dir = dir
	bin := testbed.Bin(root)
	// The suite's stages (kwok's defaults plus one that fails labelled pods: failed Jobs) and its
	// components without leader election (kwok-stages.yaml says why).
	stages := filepath.Join(root, "tests", "testbed", "kwok-stages.yaml")
	p.cluster = testbed.Kwok{Name: "po-e2e", Bin: bin, Workdir: filepath.Join(dir, "kwok"), Out: os.Stderr, Configs: []string{stages}}
	// A cluster left over from an interrupted run of this work dir cannot exist (fresh temp dir).
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if _, err := p.cluster.UpWithKubeconfig(ctx, 2, kubeconfig); err != nil {
		return ctx, err
	}
	cfg.WithKubeconfigFile(kubeconfig)

	managerBin := filepath.Join(dir, "manager")
	if err := testbed.BuildManager(ctx, root, managerBin); err != nil {
		return ctx, err
	}
	if err := createRBACNamespaces(ctx, cfg, values); err != nil {
		return ctx, err
	}
	if _, err := testbed.UpgradeInstall(testbed.Release{
		Name: releaseName, Namespace: releaseNamespace, ChartDir: filepath.Join(root, "charts", "platform-operators"),
		Kubeconfig: kubeconfig, Values: values,
	}, nil); err != nil {
		return ctx, err
	}
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return ctx, err
	}
	p.manager, err = testbed.RunAsChart(ctx, cs, cfg.Client().RESTConfig(), managerBin, releaseName, releaseNamespace, dir, 2*time.Hour, testbed.StartOptions{})
	if err != nil {
		return ctx, err
	}
	p.exited = make(chan error, 1)
	go func() { p.exited <- p.manager.Cmd.Wait() }()
	readyCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return ctx, p.manager.WaitReady(readyCtx)
}

func (p *kwokProvider) finish(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if p.manager != nil {
		_ = p.manager.Stop(15 * time.Second)
		<-p.exited //nolint:errcheck // waits for the process to be reaped; a stopped manager's exit status says nothing
	}
	if p.dir == "" {
		return ctx, nil
	}
	err := p.cluster.Down(ctx)
	if err == nil {
		err = os.RemoveAll(p.dir)
	}
	return ctx, err
}

func (p *kwokProvider) ExportLogs(ctx context.Context, _ *envconf.Config, dir string) error {
	// kwokctl refuses to export into a folder a previous run left behind.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if p.manager != nil {
		if b, err := os.ReadFile(p.manager.LogPath); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "manager.log"), b, 0o644)
		}
	}
	return p.cluster.ExportLogs(ctx, filepath.Join(dir, "cluster"))
}

func (p *kwokProvider) ManagerLogs(context.Context, *envconf.Config) (string, error) {
	b, err := os.ReadFile(p.manager.LogPath)
	return string(b), err
}

func (p *kwokProvider) ManagerMetrics(ctx context.Context, _ *envconf.Config) (string, error) {
	return testbed.HTTPGet(ctx, "http://"+p.manager.MetricsAddr+"/metrics")
}

func (p *kwokProvider) ManagerReady(ctx context.Context, _ *envconf.Config) (bool, error) {
	_, err := testbed.HTTPGet(ctx, "http://"+p.manager.ProbeAddr+"/readyz")
	return err == nil, nil
}

func (p *kwokProvider) LeaseHolderPrefix(context.Context, *envconf.Config) (string, error) {
	// controller-runtime's identity is "<hostname>_<uuid>".
	host, err := os.Hostname()
	return host + "_", err
}
