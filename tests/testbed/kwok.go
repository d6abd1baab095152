package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kwok is a kwokctl-managed cluster using the binary runtime and the binaries in Bin.
type Kwok struct {
	// Name is the cluster's name.
	Name string
	// Bin is the folder holding kwokctl, kwok, etcd and the kube-* binaries.
	Bin string
	// Workdir is KWOK_WORKDIR: where kwokctl keeps the cluster's files, so runs do not collide.
	Workdir string
	// Out receives kwokctl's progress output; nil discards it.
	Out io.Writer
	// Configs are kwokctl configuration files given to `create cluster` with --config (e.g.
	// kwok-stages.yaml next to this file). A file holding any Stage replaces kwokctl's default
	// stages, so such a file must carry the defaults too.
	Configs []string
	// AuditPolicy is an audit policy file (audit.k8s.io/v1 Policy) the API server logs by, given
	// to `create cluster` with --kube-audit-policy; AuditLog reads what it logged. Empty: no
	// audit log. A cluster that already exists keeps the policy it was created with.
	AuditPolicy string
}

func (k Kwok) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, filepath.Join(k.Bin, "kwokctl"), append(args, "--name", k.Name)...)
	c.Env = append(os.Environ(), "KWOK_WORKDIR="+k.Workdir)
	return c
}

func (k Kwok) run(ctx context.Context, args ...string) ([]byte, error) {
	c := k.cmd(ctx, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if k.Out != nil {
		c.Stderr = io.MultiWriter(&stderr, k.Out)
	}
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("kwokctl %s: %w: %s", strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	return out, nil
}

// Exists reports whether kwokctl knows the cluster in this workdir.
func (k Kwok) Exists(ctx context.Context) (bool, error) {
	c := exec.CommandContext(ctx, filepath.Join(k.Bin, "kwokctl"), "get", "clusters")
	c.Env = append(os.Environ(), "KWOK_WORKDIR="+k.Workdir)
	out, err := c.Output()
	if err != nil {
		return false, fmt.Errorf("kwokctl get clusters: %w", err)
	}
	for _, l := range strings.Fields(string(out)) {
		if l == k.Name {
			return true, nil
		}
	}
	return false, nil
}

// Up creates the cluster, or starts it again if it exists (a second `make up` is safe), and
// makes sure nodes pods can be scheduled on exist.
func (k Kwok) Up(ctx context.Context, nodes int) error {
	exists, err := k.Exists(ctx)
	if err != nil {
		return err
	}
	if exists {
		if _, err := k.run(ctx, "start", "cluster"); err != nil {
			return err
		}
	} else {
		args := []string{"create", "cluster", "--runtime", "binary",
			"--kube-apiserver-binary", filepath.Join(k.Bin, "kube-apiserver"),
			"--kube-controller-manager-binary", filepath.Join(k.Bin, "kube-controller-manager"),
			"--kube-scheduler-binary", filepath.Join(k.Bin, "kube-scheduler"),
			"--etcd-binary", filepath.Join(k.Bin, "etcd"),
			"--kwok-controller-binary", filepath.Join(k.Bin, "kwok"),
			"--wait", "2m"}
		for _, c := range k.Configs {
			args = append(args, "--config", c)
		}
		if k.AuditPolicy != "" {
			args = append(args, "--kube-audit-policy", k.AuditPolicy)
		}
		if _, err := k.run(ctx, args...); err != nil {
			return err
		}
	}
	_, err = k.run(ctx, "scale", "node", "--replicas", fmt.Sprint(nodes))
	return err
}

// AuditLog returns the API server's audit log (JSON lines, one audit.k8s.io/v1 Event each) as
// far as it is written: empty unless the cluster was created with an AuditPolicy.
func (k Kwok) AuditLog(ctx context.Context) ([]byte, error) {
	return k.run(ctx, "logs", "audit")
}

// UpWithKubeconfig brings the cluster up (Up) and writes its admin kubeconfig to path (0600),
// returning it too: what `make up`, the e2e suite and the benchmarks all start with.
func (k Kwok) UpWithKubeconfig(ctx context.Context, nodes int, path string) ([]byte, error) {
	if err := k.Up(ctx, nodes); err != nil {
		return nil, err
	}
	kc, err := k.Kubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	return kc, os.WriteFile(path, kc, 0o600)
}

// Kubeconfig returns the admin kubeconfig, pointed at 127.0.0.1 (kwokctl binds 0.0.0.0; test
// traffic goes only to loopback).
func (k Kwok) Kubeconfig(ctx context.Context) ([]byte, error) {
	out, err := k.run(ctx, "get", "kubeconfig")
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(out, []byte("://0.0.0.0:"), []byte("://127.0.0.1:")), nil
}

// ExportLogs copies the cluster components' logs into dir.
func (k Kwok) ExportLogs(ctx context.Context, dir string) error {
	_, err := k.run(ctx, "export", "logs", dir)
	return err
}

// Down deletes the cluster and its files; a cluster that does not exist is not an error.
func (k Kwok) Down(ctx context.Context) error {
	exists, err := k.Exists(ctx)
	if err != nil || !exists {
		return err
	}
	_, err = k.run(ctx, "delete", "cluster")
	return err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
