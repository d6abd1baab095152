package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A descriptor the test process inherited without close-on-exec (as `flock <lock> <command>`
// hands its lock to the command) must not reach a daemon the test bed detaches: a registry left
// running after a failed set-up would otherwise hold the shared cluster lock for good.
func TestDetachedProcessesDoNotInheritForeignDescriptors(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock")
	fd, err := syscall.Open(lock, syscall.O_CREAT|syscall.O_RDWR, 0o600) // no O_CLOEXEC, as flock(1) opens it
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	c := exec.Command("/bin/sh", "-c", fmt.Sprintf("test -e /proc/self/fd/%d && echo open || echo closed", fd))
	detach(c)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "closed" {
		t.Errorf("descriptor %d of %s is %s in the detached process, want closed", fd, lock, got)
	}
	// The test process keeps it.
	if _, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", fd)); err != nil {
		t.Errorf("the caller lost its descriptor: %v", err)
	}
}
