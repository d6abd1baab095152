package version

import (
	"fmt"
	"runtime"
)

// Version and Commit are set by the linker; the defaults mark a development build.
var (
	Version = "v0.0.0-dev"
	Commit  = "unknown"
)

// String is the one-line version report printed by --version and logged at start-up.
func String() string {
	return fmt.Sprintf("platform-operators %s (commit %s, %s, %s/%s)", Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
