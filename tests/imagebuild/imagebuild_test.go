package imagebuild

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/platform-operators/platform-operators/tests/imagebuild/imagebuildtest"
)

// files returns the headers of the image's flattened filesystem by absolute path (directories
// without a trailing slash).
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
		out["/"+strings.Trim(h.Name, "/")] = h
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

// writeFile writes data into a temporary file and returns its path.
func writeFile(t *testing.T, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInspect(t *testing.T) {
	cases := []struct {
		name    string
		data    []byte
		want    Platform
		wantErr string
	}{
		{name: "a static x86-64 executable is linux/amd64", data: imagebuildtest.ELF(elf.EM_X86_64, "", nil), want: Platform{"linux", "amd64"}},
		{name: "a static AArch64 executable is linux/arm64", data: imagebuildtest.ELF(elf.EM_AARCH64, "", nil), want: Platform{"linux", "arm64"}},
		{name: "a binary naming a dynamic loader is refused, since the image has no libc",
			data: imagebuildtest.ELF(elf.EM_X86_64, "/lib64/ld-linux-x86-64.so.2", nil), wantErr: "dynamically linked (needs /lib64/ld-linux-x86-64.so.2)"},
		{name: "a machine the images are not built for is refused", data: imagebuildtest.ELF(elf.EM_MIPS, "", nil), wantErr: "not a supported architecture"},
		{name: "a shell script is not an ELF binary", data: []byte("#!/bin/sh\necho hi\n"), wantErr: "not a Linux executable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Inspect(writeFile(t, "bin", tc.data, 0o755))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Inspect = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParsePlatform(t *testing.T) {
	if p, err := ParsePlatform("linux/arm64"); err != nil || p != (Platform{"linux", "arm64"}) || p.String() != "linux/arm64" {
		t.Errorf("ParsePlatform(linux/arm64) = %v, %v", p, err)
	}
	for _, bad := range []string{"", "linux", "linux/", "/amd64", "linux/arm/v7"} {
		if _, err := ParsePlatform(bad); err == nil {
			t.Errorf("ParsePlatform(%q) succeeded", bad)
		}
	}
}

// managerIndex builds the index of stand-in amd64 and arm64 binaries.
func managerIndex(t *testing.T) (v1.ImageIndex, Manager, map[string][]byte) {
	t.Helper()
	amd64, amd64Data := imagebuildtest.Binary(t, "amd64")
	arm64, arm64Data := imagebuildtest.Binary(t, "arm64")
	m := Manager{Binaries: []string{amd64, arm64}, Version: "v1.2.3", Revision: "abc1234", Source: "https://example.com/src"}
	idx, err := m.Index()
	if err != nil {
		t.Fatal(err)
	}
	return idx, m, map[string][]byte{"amd64": amd64Data, "arm64": arm64Data}
}

// checkIndex asserts what the chart and a node's runtime rely on: an OCI index with one
// manifest per platform, each image run as 65532 with entrypoint /manager and the right binary.
func checkIndex(t *testing.T, idx v1.ImageIndex, m Manager, bins map[string][]byte) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type = %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	if !reflect.DeepEqual(im.Annotations, m.Labels()) {
		t.Errorf("index annotations = %v, want the labels %v", im.Annotations, m.Labels())
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s manifest media type = %s, want %s", d.Platform.Architecture, d.MediaType, types.OCIManifestSchema1)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkManagerImage(t, img, Platform{d.Platform.OS, d.Platform.Architecture}, bins[d.Platform.Architecture], m)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !reflect.DeepEqual(platforms, want) {
		t.Errorf("platforms = %v, want %v", platforms, want)
	}
}

func checkManagerImage(t *testing.T, img v1.Image, p Platform, bin []byte, m Manager) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Arch {
		t.Errorf("config platform = %s/%s, want %s (the index says so)", cf.OS, cf.Architecture, p)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("%s: user = %q, want 65532:65532 (the chart's runAsUser)", p, cf.Config.User)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/manager"}) || len(cf.Config.Cmd) != 0 {
		t.Errorf("%s: entrypoint/cmd = %q/%q, want [/manager]/[]", p, cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if !reflect.DeepEqual(cf.Config.Labels, m.Labels()) || cf.Config.Labels["org.opencontainers.image.version"] != m.Version {
		t.Errorf("%s: labels = %v, want %v", p, cf.Config.Labels, m.Labels())
	}
	if !cf.Created.IsZero() {
		t.Errorf("%s: created = %v, want the zero time (reproducible builds)", p, cf.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: layers = %d (%v), want 1 on an empty base", p, len(layers), err)
	}
	fs := files(t, img)
	h, ok := fs["/manager"]
	if !ok {
		t.Fatalf("%s: /manager not in the image: %v", p, fs)
	}
	if h.Mode&0o777 != 0o755 {
		t.Errorf("%s: /manager mode = %o, want 755", p, h.Mode)
	}
	if h := fs["/tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("%s: /tmp = %+v, want a 1777 directory", p, h)
	}
	if got := fileData(t, img, "/manager"); !bytes.Equal(got, bin) {
		t.Errorf("%s: /manager holds %q, want that platform's binary %q", p, got, bin)
	}
	if passwd := string(fileData(t, img, "/etc/passwd")); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd = %q, want the nonroot user", p, passwd)
	}
}

func TestIndexHasOneImagePerPlatform(t *testing.T) {
	idx, m, bins := managerIndex(t)
	checkIndex(t, idx, m, bins)

	img, err := ImageFor(idx, Platform{"linux", "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	checkManagerImage(t, img, Platform{"linux", "arm64"}, bins["arm64"], m)
	if _, err := ImageFor(idx, Platform{"linux", "s390x"}); err == nil || !strings.Contains(err.Error(), "it has linux/amd64, linux/arm64") {
		t.Errorf("ImageFor(linux/s390x) error = %v, want one naming the platforms there are", err)
	}
}

func TestIndexIsReproducible(t *testing.T) {
	amd64, _ := imagebuildtest.Binary(t, "amd64")
	arm64, _ := imagebuildtest.Binary(t, "arm64")
	digest := func(m Manager) v1.Hash {
		t.Helper()
		idx, err := m.Index()
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	m := Manager{Binaries: []string{amd64, arm64}, Version: "v1", Revision: "r"}
	first, second := digest(m), digest(m)
	if first != second {
		t.Errorf("two builds of the same binaries gave %s and %s", first, second)
	}
	m.Version = "v2"
	if other := digest(m); other == first {
		t.Errorf("another version label gave the same digest %s", other)
	}
}

func TestIndexRefusesWhatCannotRun(t *testing.T) {
	amd64, _ := imagebuildtest.Binary(t, "amd64")
	otherAmd64, _ := imagebuildtest.Binary(t, "amd64")
	dynamic := writeFile(t, "dynamic", imagebuildtest.ELF(elf.EM_AARCH64, "/lib/ld-linux-aarch64.so.1", nil), 0o755)
	cases := []struct {
		name     string
		binaries []string
		wantErr  string
	}{
		{name: "no binary is an error", wantErr: "no manager binary"},
		{name: "a missing binary is an error", binaries: []string{filepath.Join(t.TempDir(), "missing")}, wantErr: "no such file"},
		{name: "two binaries of one platform are an error", binaries: []string{amd64, otherAmd64}, wantErr: "both linux/amd64 binaries"},
		{name: "a dynamically linked binary is an error", binaries: []string{amd64, dynamic}, wantErr: "dynamically linked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Manager{Binaries: tc.binaries}.Index()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// newRegistry starts an in-process registry on 127.0.0.1 (plain HTTP). With a user, every
// request must carry that user's Basic credentials, as a docker-registry with htpasswd demands.
func newRegistry(t *testing.T, user, password string) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := reg
	if user != "" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="imagebuild test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			reg.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// dockerConfig points DOCKER_CONFIG at a config.json with these credentials for host, as
// `docker login host` writes it; an empty user writes no credentials.
func dockerConfig(t *testing.T, host, user, password string) {
	t.Helper()
	auths := map[string]any{}
	if user != "" {
		auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	}
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}

func TestPushIndexAndPullBack(t *testing.T) {
	dockerConfig(t, "", "", "")
	host := newRegistry(t, "", "")
	idx, m, bins := managerIndex(t)
	ref := host + "/platform/manager:v1.2.3"
	d, err := Push(ref, idx, true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if d.DigestStr() != want.String() {
		t.Errorf("pushed digest %s, want %s", d.DigestStr(), want)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(r)
	if err != nil {
		t.Fatalf("pulling %s back: %v", ref, err)
	}
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled digest %s, want %s", got, want)
	}
	checkIndex(t, pulled, m, bins)
}

func TestPushWithBasicAuth(t *testing.T) {
	cases := []struct {
		name           string
		user, password string
		wantErr        string
	}{
		{name: "the Docker config's credentials are sent", user: "ci", password: "s3cret"},
		{name: "a wrong password fails the push", user: "ci", password: "wrong", wantErr: "401 Unauthorized"},
		{name: "no credentials fail the push", wantErr: "401 Unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := newRegistry(t, "ci", "s3cret")
			dockerConfig(t, host, tc.user, tc.password)
			idx, _, _ := managerIndex(t)
			ref := host + "/platform/manager:v1"
			_, err := Push(ref, idx, true)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, _ := name.ParseReference(ref, name.Insecure)
			pulled, err := remote.Index(r, remote.WithAuthFromKeychain(authn.DefaultKeychain))
			if err != nil {
				t.Fatalf("pulling back with the same credentials: %v", err)
			}
			if got, want := mustDigest(t, pulled), mustDigest(t, idx); got != want {
				t.Errorf("pulled digest %s, want %s", got, want)
			}
		})
	}
}

func mustDigest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTarballCarriesTheTagKindLoads(t *testing.T) {
	idx, m, bins := managerIndex(t)
	img, err := ImageFor(idx, Platform{"linux", "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "manager.tar")
	if err := WriteTarball(path, "platform-operators/manager:e2e", img); err != nil {
		t.Fatal(err)
	}
	// `kind load image-archive` imports with containerd, which takes the image's name from
	// manifest.json's RepoTags (a `docker save` archive); docker 20.10 loads only that format.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	blobs := map[string][]byte{}
	var m0 []struct {
		Config           string
		RepoTags, Layers []string
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		blobs[h.Name] = data
	}
	if err := json.Unmarshal(blobs["manifest.json"], &m0); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(m0) != 1 || !reflect.DeepEqual(m0[0].RepoTags, []string{"platform-operators/manager:e2e"}) || len(m0[0].Layers) != 1 {
		t.Fatalf("manifest.json = %+v, want one image tagged platform-operators/manager:e2e with one layer", m0)
	}
	var cf v1.ConfigFile
	if err := json.Unmarshal(blobs[m0[0].Config], &cf); err != nil {
		t.Fatalf("config %s: %v", m0[0].Config, err)
	}
	if cf.Architecture != "amd64" || cf.Config.User != "65532:65532" {
		t.Errorf("config = %s, user %q; want amd64 as asked, user 65532:65532", cf.Architecture, cf.Config.User)
	}
	checkManagerImage(t, img, Platform{"linux", "amd64"}, bins["amd64"], m)
}

func TestLayoutHoldsTheWholeIndex(t *testing.T) {
	idx, m, bins := managerIndex(t)
	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteLayout(dir, "example.com/platform/manager:v1.2.3", idx); err != nil {
		t.Fatal(err)
	}
	// Writing again (e.g. a second make run) replaces the entry rather than adding one.
	if err := WriteLayout(dir, "example.com/platform/manager:v1.2.3", idx); err != nil {
		t.Fatal(err)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d entries, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	wantAnn := map[string]string{"io.containerd.image.name": "example.com/platform/manager:v1.2.3", "org.opencontainers.image.ref.name": "v1.2.3"}
	if !reflect.DeepEqual(d.Annotations, wantAnn) || d.MediaType != types.OCIImageIndex || d.Digest != mustDigest(t, idx) {
		t.Errorf("index.json entry = %+v, want the index %s with annotations %v", d, mustDigest(t, idx), wantAnn)
	}
	nested, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, nested, m, bins)
}
