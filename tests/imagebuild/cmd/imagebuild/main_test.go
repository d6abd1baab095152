package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/platform-operators/platform-operators/tests/imagebuild/imagebuildtest"
)

func TestCommandLine(t *testing.T) {
	if _, ok := imagebuildtest.Machines[runtime.GOARCH]; !ok {
		t.Skipf("no stand-in binary for this machine's architecture %s", runtime.GOARCH)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the machine's user
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	amd64, _ := imagebuildtest.Binary(t, "amd64")
	arm64, _ := imagebuildtest.Binary(t, "arm64")
	host64, _ := imagebuildtest.Binary(t, runtime.GOARCH)
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "image.tar")

	cases := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T)
	}{
		{
			name: "the flags make image-tar has always passed build the manager",
			args: []string{"--binary", host64, "--version", "v1", "--revision", "r", "--tag", "platform-operators/manager:dev", "--tar", tarPath},
			check: func(t *testing.T) {
				tag, _ := name.NewTag("platform-operators/manager:dev")
				img, err := tarball.ImageFromPath(tarPath, &tag)
				if err != nil {
					t.Fatal(err)
				}
				if cf, _ := img.ConfigFile(); cf.Architecture != runtime.GOARCH || cf.Config.Labels["org.opencontainers.image.version"] != "v1" {
					t.Errorf("tarball config = %s %v, want this machine's architecture and version v1", cf.Architecture, cf.Config.Labels)
				}
			},
		},
		{
			name: "the manager command pushes and lays out the index of both platforms, and tars the one asked for",
			args: []string{"manager", "--binary", amd64, "--binary", arm64, "--tag", host + "/platform/manager:v2", "--version", "v2",
				"--tar", tarPath, "--tar-platform", "linux/arm64", "--oci-layout", filepath.Join(dir, "oci"), "--push", "--insecure"},
			check: func(t *testing.T) {
				tag, _ := name.NewTag(host + "/platform/manager:v2")
				img, err := tarball.ImageFromPath(tarPath, &tag)
				if err != nil {
					t.Fatal(err)
				}
				if cf, _ := img.ConfigFile(); cf.Architecture != "arm64" {
					t.Errorf("tarball architecture = %s, want arm64", cf.Architecture)
				}
				idx, err := remote.Index(tag)
				if err != nil {
					t.Fatal(err)
				}
				if m, _ := idx.IndexManifest(); len(m.Manifests) != 2 {
					t.Errorf("pushed index has %d manifests, want 2", len(m.Manifests))
				}
				if _, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci")); err != nil {
					t.Errorf("OCI layout: %v", err)
				}
			},
		},
		{
			name: "the busybox command builds the job image from the applets it is given",
			args: []string{"busybox", "--binary", host64, "--applets", "sh,ls", "--version", "v1.35.0", "--tag", "platform-operators/busybox:e2e", "--tar", tarPath},
			check: func(t *testing.T) {
				tag, _ := name.NewTag("platform-operators/busybox:e2e")
				img, err := tarball.ImageFromPath(tarPath, &tag)
				if err != nil {
					t.Fatal(err)
				}
				if cf, _ := img.ConfigFile(); len(cf.Config.Cmd) != 1 || cf.Config.Cmd[0] != "sh" {
					t.Errorf("busybox cmd = %q, want [sh]", cf.Config.Cmd)
				}
			},
		},
		{name: "an unknown command is an error", args: []string{"buildx"}, wantErr: `unknown command "buildx"`},
		{name: "the manager needs a binary", args: []string{"--tar", tarPath}, wantErr: "give --binary"},
		{name: "the manager needs somewhere to put the image", args: []string{"--binary", host64}, wantErr: "nothing to do"},
		{name: "a tarball of a platform the index lacks is an error", args: []string{"--binary", amd64, "--tar", tarPath, "--tar-platform", "linux/s390x"}, wantErr: "no linux/s390x image"},
		{name: "busybox needs a binary", args: []string{"busybox", "--tar", tarPath}, wantErr: "give --binary"},
		{name: "a stray argument is an error", args: []string{"--binary", host64, "--tar", tarPath, "extra"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(tarPath); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("error = %v (stderr %s)", err, stderr.String())
			}
			tc.check(t)
		})
	}
}
