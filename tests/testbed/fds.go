package testbed

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// detach runs c in a session of its own (it outlives the caller) and keeps descriptors the caller
// inherited from its own parent out of it. Go opens its files close-on-exec, but a descriptor
// handed down to the test process (flock(1) passes its lock to the command it runs) is not, and
// every child would carry it: a registry left behind by a failed run then holds the shared
// cluster lock until someone kills it.
func detach(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setsid = true
	closeInheritedOnExec()
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec. Harmless for the ones Go
// opened (already so) and for ExtraFiles (dup2 in the child clears the flag on the copy).
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
