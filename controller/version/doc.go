// Package version holds the build's version, stamped at link time with
//
//	-ldflags "-X github.com/platform-operators/platform-operators/controller/version.Version=v0.1.0"
//
// It owns the version strings and their one-line report. It must not import anything of ours.
package version
