// Package imagebuild assembles container images without a container daemon (go-containerregistry),
// reproducibly (zero creation times, fixed file metadata), each as one layer on an empty base:
//
//   - the manager image (Manager): the static manager binary of each platform (linux/amd64 and
//     linux/arm64 for a release) as an OCI image index, run as the nonroot user 65532 with
//     entrypoint /manager, the configuration the chart expects;
//   - the job test image (Busybox): a static busybox (Debian's busybox-static) with a link per
//     applet, for the e2e suite's At and ScheduledJob commands on kind, where the chart's default
//     job image cannot be pulled.
//
// Every binary's platform is read from its ELF header, and a binary that needs a dynamic loader is
// refused: the images hold no libc. An image or index can be pushed to a registry (credentials from
// the Docker config, plain HTTP with --insecure), written as a `docker save` tarball for one
// platform (what `docker load` and `kind load image-archive` take), or, for an index, as an OCI
// layout directory.
//
// The docker tests (PO_DOCKER_TESTS=1, `make test-image`) build the real images and run them. It
// is build tooling, not product code: it lives under tests/ next to the test bed (see
// docs/development.md); cmd/imagebuild is its command line.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID and GID of the nonroot user (distroless' nonroot; the chart's runAsUser). The manager image
// runs as it; the job test image has it in /etc/passwd for pods that set runAsUser.
const UID = 65532

// Platform is the OS and architecture an image runs on, in Go's (and OCI's) names.
type Platform struct {
	OS, Arch string
}

// String is the usual os/arch form, e.g. linux/arm64.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// HostPlatform is the Linux platform of this machine's architecture: what a local Docker engine
// or kind node runs.
func HostPlatform() Platform { return Platform{OS: "linux", Arch: runtime.GOARCH} }

// ParsePlatform parses os/arch, e.g. linux/amd64.
func ParsePlatform(s string) (Platform, error) {
	goos, arch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", s)
	}
	return Platform{OS: goos, Arch: arch}, nil
}

// elfArch maps ELF machines to Go architectures. 32-bit ARM is left out: its variant (v6, v7)
// is not in the header, and an image index needs it.
var elfArch = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_386:     "386",
	elf.EM_PPC64:   "ppc64le", // big-endian ppc64 is refused below
	elf.EM_S390:    "s390x",
	elf.EM_RISCV:   "riscv64",
}

// Inspect returns the platform of a Linux executable from its ELF header. It refuses anything else,
// and a binary that names a dynamic loader (PT_INTERP): on an empty base it would fail to start with
// a puzzling "no such file or directory". A Go binary built with CGO_ENABLED=0 passes.
func Inspect(path string) (Platform, error) {
	file, err := os.Open(path)
	if err != nil {
		return Platform{}, err
	}
	defer file.Close()
	f, err := elf.NewFile(file)
	if err != nil {
		return Platform{}, fmt.Errorf("%s: not a Linux executable: %w", path, err)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return Platform{}, fmt.Errorf("%s: ELF type %s, not an executable", path, f.Type)
	}
	// Go writes ELFOSABI_NONE (System V), GNU toolchains ELFOSABI_LINUX; both run on Linux.
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return Platform{}, fmt.Errorf("%s: ELF OS ABI %s, not Linux", path, f.OSABI)
	}
	arch, ok := elfArch[f.Machine]
	if !ok || (f.Machine == elf.EM_PPC64 && f.Data != elf.ELFDATA2LSB) {
		return Platform{}, fmt.Errorf("%s: ELF machine %s (%s) is not a supported architecture", path, f.Machine, f.Data)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(p.Open(), 256))
			return Platform{}, fmt.Errorf("%s: dynamically linked (needs %s), but the image has no libc: build it static (CGO_ENABLED=0)", path, strings.TrimRight(string(interp), "\x00"))
		}
	}
	return Platform{OS: "linux", Arch: arch}, nil
}

// entry is one file system object of a layer: a directory when name ends in "/", a symlink to
// link when link is set, otherwise a regular file holding data.
type entry struct {
	name     string // relative, without a leading slash
	mode     int64
	uid, gid int
	data     []byte
	link     string
}

// newLayer writes entries, in order, as one gzipped OCI layer. Every header has the zero
// modification time and no user or group names, so the same entries give the same digest.
func newLayer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, Size: int64(len(e.data)), Format: tar.FormatPAX}
		switch {
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// passwdEntries are /etc/passwd and /etc/group with root and the nonroot user, so tools that
// resolve users by name (and `id` in a debug container) see "nonroot"; shell is their login shell.
func passwdEntries(shell string) []entry {
	return []entry{
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:%s\nnonroot:x:%d:%d:nonroot:/home/nonroot:%s\n", shell, UID, UID, shell)},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", UID)},
	}
}

// assemble puts one layer on an empty base with an OCI manifest and config (not Docker's v2
// schema, so registries show the OCI labels) for platform p, created at the given time.
func assemble(l v1.Layer, p Platform, created time.Time, createdBy string, cfg v1.Config) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:     l,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: createdBy, Created: v1.Time{Time: created}},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = v1.Time{Time: created}
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// ImageFor returns the image of platform p in an index.
func ImageFor(idx v1.ImageIndex, p Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Arch {
			return idx.Image(d.Digest)
		}
		if d.Platform != nil {
			have = append(have, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	return nil, fmt.Errorf("no %s image in the index (it has %s)", p, strings.Join(have, ", "))
}

// WriteTarball writes img tagged as tag to path in the `docker save` format (a manifest.json with
// RepoTags), which `docker load` (20.10 too) and `kind load image-archive` accept. That format holds
// one image per tag, not an index: pick the platform of the engine that loads it.
func WriteTarball(path, tag string, img v1.Image) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("image tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(path, t, img)
}

// WriteLayout writes idx into dir as an OCI image layout (created if missing, index.json
// replaced), named tag with the annotations containerd (io.containerd.image.name) and skopeo or
// crane (org.opencontainers.image.ref.name: the tag alone) look up.
func WriteLayout(dir, tag string, idx v1.ImageIndex) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("image tag %q: %w", tag, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          t.Name(),
		"org.opencontainers.image.ref.name": t.TagStr(),
	}))
}

// Push pushes an image or an index to ref (e.g. harbor.example.com/platform/manager:v0.1.0) with
// the credentials of the default keychain: $DOCKER_CONFIG/config.json or ~/.docker/config.json,
// as `docker login` or `crane auth login` write them (Basic auth and token auth both work).
// insecure allows plain HTTP, e.g. a local registry; loopback and private addresses use it anyway.
func Push(ref string, t remote.Taggable, insecure bool) (name.Digest, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	d, err := digest(t)
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.Push(r, t, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", r, err)
	}
	return r.Context().Digest(d.String()), nil
}

func digest(t remote.Taggable) (v1.Hash, error) {
	if d, ok := t.(interface{ Digest() (v1.Hash, error) }); ok {
		return d.Digest()
	}
	return v1.Hash{}, fmt.Errorf("%T has no digest", t)
}
