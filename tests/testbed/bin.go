package testbed

import (
	"os"
	"path/filepath"
)

// Bin is the directory of the pinned tools and built binaries: $BIN when set (the Makefile exports
// its BIN, so `make test BIN=/elsewhere/bin` reaches the tests as well as the scripts), else
// root/bin.
func Bin(root string) string {
	if b := os.Getenv("BIN"); b != "" {
		return b
	}
	return filepath.Join(root, "bin")
}
