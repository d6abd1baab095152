// Package imagebuild assembles the manager's container image without a container daemon: one
// layer holding the static manager binary (plus the passwd/group entries of the nonroot user) on an
// empty base, with the configuration the chart expects (user 65532, entrypoint /manager). It can
// write the image as a tarball that `docker load` and `kind load image-archive` accept, or push it
// to a registry (e.g. a Harbor project). It is build tooling, not product code: it lives under
// tests/ next to the test bed (see docs/development.md).
package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// UID and GID of the nonroot user the image runs as (distroless' nonroot; the chart's runAsUser).
	UID = 65532
	// BinaryPath is where the manager binary lives in the image, and the entrypoint.
	BinaryPath = "/manager"
)

// Options describe the image.
type Options struct {
	// Binary is the path of the static linux manager binary.
	Binary string
	// OS and Arch of the binary; default linux/amd64.
	OS, Arch string
	// Version and Revision go into the OCI labels.
	Version, Revision string
	// Source is the org.opencontainers.image.source label.
	Source string
	// Created is the image's creation time; the zero time keeps builds reproducible.
	Created time.Time
}

// Labels returns the OCI annotation labels of the image.
func (o Options) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "platform-operators",
		"org.opencontainers.image.description": "Platform add-on manager for shared (multi-tenant) Kubernetes clusters",
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
	}
}

// Build assembles the image.
func Build(o Options) (v1.Image, error) {
	if o.OS == "" {
		o.OS = "linux"
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the manager binary: %w", err)
	}
	layerTar, err := rootfs(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	// An OCI manifest and config (not Docker's v2 schema), so registries show the OCI labels.
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "platform-operators imagebuild: COPY manager " + BinaryPath, Created: v1.Time{Time: o.Created}},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = o.OS, o.Arch
	cf.Created = v1.Time{Time: o.Created}
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.Labels = o.Labels()
	return mutate.ConfigFile(img, cf)
}

// rootfs is the single layer: /manager (0755) and the nonroot user's passwd/group entries, so
// tools that resolve the user by name (and `id` in a debug container) see "nonroot".
func rootfs(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)},
		{"etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", UID)},
		{BinaryPath[1:], 0o755, bin},
	}
	for _, dir := range []string{"etc/", "home/", "home/nonroot/", "tmp/"} {
		h := &tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, Format: tar.FormatPAX}
		switch dir {
		case "tmp/":
			h.Mode = 0o1777
		case "home/nonroot/":
			h.Mode, h.Uid, h.Gid = 0o700, UID, UID
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTarball writes img tagged as tag to path in the `docker save` format (a manifest.json with
// RepoTags), which `docker load` and `kind load image-archive` accept.
func WriteTarball(path, tag string, img v1.Image) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("image tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(path, t, img)
}

// Push pushes img to ref (e.g. harbor.example.com/platform/manager:v0.1.0) with the credentials of
// the default keychain (~/.docker/config.json, as `docker login` or `crane auth login` write it).
// insecure allows plain HTTP (a local test registry).
func Push(ref string, img v1.Image, insecure bool) (name.Digest, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}
