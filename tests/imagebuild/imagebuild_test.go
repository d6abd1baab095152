package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fakeBinary writes a stand-in for the manager binary (the image does not run here).
func fakeBinary(t *testing.T) (string, []byte) {
	t.Helper()
	data := []byte("\x7fELF not really a manager " + t.Name())
	p := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p, data
}

// files returns the regular files of the image's flattened filesystem with their mode and content.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimPrefix(h.Name, "/")] = h
	}
}

func fileData(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the image: %v", path, err)
		}
		if "/"+strings.TrimPrefix(h.Name, "/") == path {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func checkImage(t *testing.T, img v1.Image, bin []byte, o Options) {
	t.Helper()
	mt, err := img.MediaType()
	if err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s (%v), want %s", mt, err, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform = %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532 (the chart's runAsUser)", cf.Config.User)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/manager"}) || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint/cmd = %q/%q, want [/manager]/[]", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if !reflect.DeepEqual(cf.Config.Labels, o.Labels()) || cf.Config.Labels["org.opencontainers.image.version"] != o.Version {
		t.Errorf("labels = %v, want %v", cf.Config.Labels, o.Labels())
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d (%v), want 1 on an empty base", len(layers), err)
	}
	fs := files(t, img)
	h, ok := fs["/manager"]
	if !ok {
		t.Fatalf("/manager not in the image: %v", fs)
	}
	if h.Mode&0o777 != 0o755 {
		t.Errorf("/manager mode = %o, want 755", h.Mode)
	}
	if got := fileData(t, img, "/manager"); !bytes.Equal(got, bin) {
		t.Errorf("/manager holds %q, want the binary %q", got, bin)
	}
	if passwd := string(fileData(t, img, "/etc/passwd")); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, want the nonroot user", passwd)
	}
}

func TestPushAndPullBack(t *testing.T) {
	// An in-process registry on 127.0.0.1 (httptest's default).
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	binPath, bin := fakeBinary(t)
	o := Options{Binary: binPath, Version: "v1.2.3", Revision: "abc1234", Source: "https://example.com/src"}
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/platform/manager:v1.2.3"
	d, err := Push(ref, img, true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if d.DigestStr() != want.String() {
		t.Errorf("pushed digest %s, want %s", d.DigestStr(), want)
	}

	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pulling %s back: %v", ref, err)
	}
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled digest %s, want %s", got, want)
	}
	checkImage(t, pulled, bin, o)
}

func TestTarballCarriesTheTagKindLoads(t *testing.T) {
	binPath, bin := fakeBinary(t)
	o := Options{Binary: binPath, Version: "v0.1.0", Revision: "r"}
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, img, bin, o)
	path := filepath.Join(t.TempDir(), "manager.tar")
	if err := WriteTarball(path, "platform-operators/manager:e2e", img); err != nil {
		t.Fatal(err)
	}
	// `kind load image-archive` imports with containerd, which takes the image's name from
	// manifest.json's RepoTags (a `docker save` archive).
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("manifest.json not in the tarball: %v", err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct {
			Config           string
			RepoTags, Layers []string
		}
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 || !reflect.DeepEqual(m[0].RepoTags, []string{"platform-operators/manager:e2e"}) || len(m[0].Layers) != 1 {
			t.Fatalf("manifest.json = %+v, want one image tagged platform-operators/manager:e2e with one layer", m)
		}
		return
	}
}

func TestBuildFailsWithoutTheBinary(t *testing.T) {
	if _, err := Build(Options{Binary: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("Build succeeded without a binary")
	}
}
