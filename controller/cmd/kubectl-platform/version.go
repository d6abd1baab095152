package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/platform-operators/platform-operators/controller/version"
)

// versionInfo is what version prints with -o json|yaml.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func (c *cli) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this command",
		Args:  args(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			v := versionInfo{Version: version.Version, Commit: version.Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			return printReport(c, v, func(w io.Writer, v versionInfo) {
				fmt.Fprintf(w, "kubectl-platform %s (commit %s, %s, %s)\n", v.Version, v.Commit, v.GoVersion, v.Platform)
			})
		},
	}
}
