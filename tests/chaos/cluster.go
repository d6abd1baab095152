package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leader returns the manager pod that holds the leader Lease and the holder identity.
func (h *harness) leader(ctx context.Context) (*corev1.Pod, string, error) {
	leases, err := h.cs.CoordinationV1().Leases(releaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	pods, err := h.cs.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
	if err != nil {
		return nil, "", err
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil {
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && strings.HasPrefix(*l.Spec.HolderIdentity, p.Name+"_") {
				h.rec.mu.Lock()
				h.rec.leaseKey = l.Name
				h.rec.mu.Unlock()
				return p, *l.Spec.HolderIdentity, nil
			}
		}
	}
	return nil, "", fmt.Errorf("no manager pod holds a Lease in %s", releaseNamespace)
}

// leaseDuration is the leader Lease's duration as the leader wrote it (leader must have run).
func (h *harness) leaseDuration(ctx context.Context) (time.Duration, error) {
	h.rec.mu.Lock()
	key := h.rec.leaseKey
	h.rec.mu.Unlock()
	l, err := h.cs.CoordinationV1().Leases(releaseNamespace).Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if l.Spec.LeaseDurationSeconds == nil {
		return 0, fmt.Errorf("lease %s/%s has no leaseDurationSeconds", releaseNamespace, key)
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second, nil
}

// containerPID finds the host pid (in the node container's pid namespace) of a pod's container:
// containerd's task list in the node names it by the container id the pod status reports.
func containerPID(ctx context.Context, pod *corev1.Pod, container string) (node string, pid int, err error) {
	id := ""
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == container || container == "" {
			_, id, _ = strings.Cut(c.ContainerID, "://")
		}
	}
	if id == "" {
		return "", 0, fmt.Errorf("pod %s: no running container %q", pod.Name, container)
	}
	node = pod.Spec.NodeName
	out, err := exec.CommandContext(ctx, dockerClient(), "exec", node, "ctr", "-n", "k8s.io", "task", "ls").Output()
	if err != nil {
		return "", 0, fmt.Errorf("ctr task ls on %s: %w", node, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			return node, pid, err
		}
	}
	return "", 0, fmt.Errorf("container %s of pod %s not in containerd's task list on %s", id, pod.Name, node)
}

// sendSignal sends sig (KILL, STOP, CONT) to one process the harness identified by pid in a node.
func sendSignal(ctx context.Context, node string, pid int, sig string) error {
	if pid <= 1 {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	if out, err := exec.CommandContext(ctx, dockerClient(), "exec", node, "kill", "-"+sig, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("kill -%s %d on %s: %w: %s", sig, pid, node, err, out)
	}
	return nil
}

// staticPod returns the mirror pod of a control-plane component (component=kube-apiserver, etcd).
func (h *harness) staticPod(ctx context.Context, component string) (*corev1.Pod, error) {
	pods, err := h.cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=" + component})
	if err != nil {
		return nil, err
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("no %s pod", component)
	}
	return &pods.Items[0], nil
}

// dockerClient is Debian's docker client when installed (it speaks the engine scripts/host.sh
// starts), else docker from PATH.
func dockerClient() string {
	if _, err := os.Stat("/usr/bin/docker"); err == nil {
		return "/usr/bin/docker"
	}
	return "docker"
}
