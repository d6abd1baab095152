package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	kindCluster = "po-e2e"
	kindImage   = "platform-operators/manager:e2e"
)

// kindProvider builds the image with Docker, loads it into a kind cluster and installs the chart
// with it, so the manager runs in-cluster exactly as users run it. KIND_NODE_IMAGE picks the
// Kubernetes version (CI runs a matrix).
type kindProvider struct{}

func (p *kindProvider) Setup(ctx context.Context, cfg *envconf.Config, values map[string]any) (context.Context, error) {
	var opts []support.ClusterOpts
	opts = append(opts, kind.WithPath(filepath.Join(root, "bin", "kind")))
	if img := os.Getenv("KIND_NODE_IMAGE"); img != "" {
		opts = append(opts, kind.WithImage(img))
	}
	ctx, err := envfuncs.CreateClusterWithOpts(kind.NewProvider(), kindCluster, opts...)(ctx, cfg)
	if err != nil {
		return ctx, err
	}
	build := exec.CommandContext(ctx, "docker", "build", "-t", kindImage, ".")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return ctx, fmt.Errorf("docker build: %w", err)
	}
	if ctx, err = envfuncs.LoadImageToCluster(kindCluster, kindImage)(ctx, cfg); err != nil {
		return ctx, err
	}
	repo, tag, _ := strings.Cut(kindImage, ":")
	values["image"] = map[string]any{"registry": "", "repository": repo, "tag": tag, "pullPolicy": "Never"}
	if err := createRBACNamespaces(ctx, cfg, values); err != nil {
		return ctx, err
	}
	_, err = testbed.UpgradeInstall(testbed.Release{
		Name: releaseName, Namespace: releaseNamespace, ChartDir: filepath.Join(root, "charts", "platform-operators"),
		Kubeconfig: cfg.KubeconfigFile(), Values: values,
	}, nil)
	return ctx, err
}

func (p *kindProvider) Finish(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	return envfuncs.DestroyCluster(kindCluster)(ctx, cfg)
}

func (p *kindProvider) ExportLogs(ctx context.Context, dir string) error {
	_, err := envfuncs.ExportClusterLogs(kindCluster, dir)(ctx, nil)
	return err
}

func (p *kindProvider) managerPod(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=platform-operators,app.kubernetes.io/instance=" + releaseName})
	if err != nil {
		return nil, err
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("no manager pod in %s", releaseNamespace)
	}
	return &pods.Items[0], nil
}

func (p *kindProvider) ManagerLogs(ctx context.Context, cfg *envconf.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return "", err
	}
	pod, err := p.managerPod(ctx, cs)
	if err != nil {
		return "", err
	}
	rc, err := cs.CoreV1().Pods(releaseNamespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "manager"}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func (p *kindProvider) ManagerMetrics(ctx context.Context, cfg *envconf.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return "", err
	}
	b, err := cs.CoreV1().Services(releaseNamespace).ProxyGet("http", releaseName+"-metrics", "metrics", "/metrics", nil).DoRaw(ctx)
	return string(b), err
}

func (p *kindProvider) ManagerReady(ctx context.Context, cfg *envconf.Config) (bool, error) {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return false, err
	}
	pod, err := p.managerPod(ctx, cs)
	if err != nil {
		return false, nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

func (p *kindProvider) LeaseHolderPrefix(ctx context.Context, cfg *envconf.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return "", err
	}
	pod, err := p.managerPod(ctx, cs)
	if err != nil {
		return "", err
	}
	return pod.Name + "_", nil
}
