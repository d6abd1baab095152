// Command pause is the pod sandbox process of the kind node image built by scripts/kind-node.sh
// (the image kubeadm names registry.k8s.io/pause). It holds the pod's namespaces open: it waits
// for SIGINT or SIGTERM and exits 0, and reaps any zombie that is reparented to it (PID 1 of the
// pod's PID namespace when the pod shares it).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (platform-operators test bed)")
		return
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
