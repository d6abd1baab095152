// Command tinycli stands in for kubectl-platform in the release's unit tests: its build info and
// `version -o json` are all CLIArchives reads, and it builds in a second.
package main

import (
	"fmt"

	"github.com/platform-operators/platform-operators/controller/version"
)

func main() {
	fmt.Printf("{\"version\": %q}\n", version.Version)
}
