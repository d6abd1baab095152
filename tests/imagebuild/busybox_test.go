package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/platform-operators/platform-operators/tests/imagebuild/imagebuildtest"
)

func TestBusyboxImage(t *testing.T) {
	bin, data := imagebuildtest.Binary(t, "arm64")
	b := Busybox{Binary: bin, Applets: []string{"sh", "ls", "busybox", "[", "sh"}, Version: "v1.35.0", Revision: "abc1234", Source: "https://example.com/src"}
	img, err := b.Image()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("platform = %s/%s, want linux/arm64 (the binary's)", cf.OS, cf.Architecture)
	}
	if !reflect.DeepEqual(cf.Config.Cmd, []string{"sh"}) || len(cf.Config.Entrypoint) != 0 || cf.Config.User != "" {
		t.Errorf("cmd/entrypoint/user = %q/%q/%q, want [sh]/[]/\"\" as docker.io/library/busybox", cf.Config.Cmd, cf.Config.Entrypoint, cf.Config.User)
	}
	if !reflect.DeepEqual(cf.Config.Env, []string{"PATH=/bin"}) {
		t.Errorf("env = %q, want PATH=/bin", cf.Config.Env)
	}
	if !reflect.DeepEqual(cf.Config.Labels, b.Labels()) || cf.Config.Labels["org.opencontainers.image.version"] != "v1.35.0" {
		t.Errorf("labels = %v, want %v", cf.Config.Labels, b.Labels())
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d (%v), want 1", len(layers), err)
	}
	fs := files(t, img)
	if h := fs["/bin/busybox"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o755 {
		t.Fatalf("/bin/busybox = %+v, want a 0755 file", h)
	}
	if got := fileData(t, img, "/bin/busybox"); !bytes.Equal(got, data) {
		t.Errorf("/bin/busybox holds %q, want the binary", got)
	}
	var links []string
	for p, h := range fs {
		if h.Typeflag == tar.TypeSymlink {
			links = append(links, p)
			if h.Linkname != "busybox" {
				t.Errorf("%s links to %q, want busybox (beside it in /bin)", p, h.Linkname)
			}
		}
	}
	slices.Sort(links)
	if want := []string{"/bin/[", "/bin/ls", "/bin/sh"}; !reflect.DeepEqual(links, want) {
		t.Errorf("links = %q, want %q (one per applet, none for busybox itself)", links, want)
	}
	if h := fs["/tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("/tmp = %+v, want a 1777 directory", h)
	}
	if h := fs["/home/nonroot"]; h == nil || h.Uid != UID || h.Mode != 0o700 {
		t.Errorf("/home/nonroot = %+v, want nonroot's 0700 directory", h)
	}
	passwd := string(fileData(t, img, "/etc/passwd"))
	for _, want := range []string{"root:x:0:0:root:/root:/bin/sh\n", "nonroot:x:65532:65532:nonroot:/home/nonroot:/bin/sh\n"} {
		if !strings.Contains(passwd, want) {
			t.Errorf("/etc/passwd = %q, want the line %q", passwd, want)
		}
	}
}

func TestBusyboxImageRefusesBadApplets(t *testing.T) {
	bin, _ := imagebuildtest.Binary(t, "amd64")
	cases := []struct {
		name    string
		applets []string
		wantErr string
	}{
		{name: "no applets leave no sh", applets: nil, wantErr: "no applets"},
		{name: "only busybox itself leaves no sh", applets: []string{"busybox"}, wantErr: "no applets"},
		{name: "a name with a slash would link outside /bin", applets: []string{"sh", "../etc/x"}, wantErr: "not a file name"},
		{name: "an empty name is not a file", applets: []string{"sh", ""}, wantErr: "not a file name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Busybox{Binary: bin, Applets: tc.applets}.Image()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestBusyboxRunOnThisMachine(t *testing.T) {
	// Scripts stand in for busybox: Applets and BusyboxVersion only run it and read its output.
	listing := writeFile(t, "list", []byte("#!/bin/sh\nprintf '[\\n[[\\nbusybox\\nls\\nsh\\n'\n"), 0o755)
	noShell := writeFile(t, "noshell", []byte("#!/bin/sh\necho ls\n"), 0o755)
	banner := writeFile(t, "banner", []byte("#!/bin/sh\necho 'BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.'\necho 'BusyBox is copyrighted by many authors'\n"), 0o755)
	failing := writeFile(t, "failing", []byte("#!/bin/sh\nexit 3\n"), 0o755)
	ctx := context.Background()

	if got, err := Applets(ctx, listing); err != nil || !reflect.DeepEqual(got, []string{"[", "[[", "busybox", "ls", "sh"}) {
		t.Errorf("Applets = %q, %v", got, err)
	}
	if _, err := Applets(ctx, noShell); err == nil || !strings.Contains(err.Error(), "no sh applet") {
		t.Errorf("Applets of a list without sh: error = %v", err)
	}
	if _, err := Applets(ctx, failing); err == nil {
		t.Error("Applets of a failing binary succeeded")
	}
	if got, err := BusyboxVersion(ctx, banner); err != nil || got != "v1.35.0" {
		t.Errorf("BusyboxVersion = %q, %v; want v1.35.0", got, err)
	}
	if _, err := BusyboxVersion(ctx, listing); err == nil || !strings.Contains(err.Error(), "not BusyBox's version line") {
		t.Errorf("BusyboxVersion of something else: error = %v", err)
	}
}
