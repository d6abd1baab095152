package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// CLIPlatforms are the platforms kubectl-platform is released for (`make cli-dist` builds them).
var CLIPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// Media types of the CLI artifact REGISTRY/kubectl-platform:VERSION.
const (
	// CLIArtifactType is the artifact's config media type (its artifactType).
	CLIArtifactType = "application/vnd.platform-operators.kubectl-platform.v1"
	// CLIArchiveMediaType is one platform's archive; ChecksumsMediaType the checksums file.
	CLIArchiveMediaType = "application/vnd.oci.image.layer.v1.tar+gzip"
	ChecksumsMediaType  = "text/plain"
	// CLIChecksums is the name of the checksums file (sha256sum's format).
	CLIChecksums = "checksums.txt"
)

// CLIArchive is one platform's kubectl-platform archive.
type CLIArchive struct {
	Platform string // os/arch
	File     string // path of the .tar.gz
	SHA256   string
}

// CLIArchives checks each platform's kubectl-platform binary in binDir (built by `make
// cli-dist` as kubectl-platform-<os>-<arch>; checkCLIBinary: that platform, CGO off, and this
// machine's says version); then writes one reproducible .tar.gz per platform (kubectl-platform and
// LICENSE, the layout krew installs from) and checksums.txt into outDir. It returns the archives
// and the checksums file.
func CLIArchives(ctx context.Context, root, binDir, outDir, version string) ([]CLIArchive, string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, "", err
	}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return nil, "", err
	}
	var out []CLIArchive
	var sums strings.Builder
	for _, p := range CLIPlatforms {
		goos, goarch, _ := strings.Cut(p, "/")
		bin := filepath.Join(binDir, "kubectl-platform-"+goos+"-"+goarch)
		if err := checkCLIBinary(ctx, bin, goos, goarch, version); err != nil {
			return nil, "", err
		}
		exe, err := os.ReadFile(bin)
		if err != nil {
			return nil, "", err
		}
		archive, err := tarGz([]tarEntry{{"kubectl-platform", 0o755, exe}, {"LICENSE", 0o644, license}})
		if err != nil {
			return nil, "", err
		}
		name := fmt.Sprintf("kubectl-platform_%s_%s_%s.tar.gz", version, goos, goarch)
		file := filepath.Join(outDir, name)
		if err := os.WriteFile(file, archive, 0o644); err != nil {
			return nil, "", err
		}
		sum := sha256Hex(archive)
		fmt.Fprintf(&sums, "%s  %s\n", sum, name)
		out = append(out, CLIArchive{Platform: p, File: file, SHA256: sum})
	}
	checksums := filepath.Join(outDir, CLIChecksums)
	return out, checksums, os.WriteFile(checksums, []byte(sums.String()), 0o644)
}

// checkCLIBinary refuses a binary built for another platform or with cgo (the build info Go
// records in every binary, any OS format, says; it keeps no -ldflags under -trimpath), and runs
// the one of this machine's platform: its `version -o json` must say version, as the manager's
// --version must. The others are built by the same make cli-dist with the same stamp.
func checkCLIBinary(ctx context.Context, bin, goos, goarch, version string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("%s: %w (make cli-dist builds it)", bin, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	switch {
	case settings["GOOS"] != goos || settings["GOARCH"] != goarch:
		return fmt.Errorf("%s is built for %s/%s, not %s/%s", bin, settings["GOOS"], settings["GOARCH"], goos, goarch)
	case settings["CGO_ENABLED"] != "0":
		return fmt.Errorf("%s is built with cgo: the release's binaries are static (CGO_ENABLED=0)", bin)
	}
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return nil
	}
	out, err := exec.CommandContext(ctx, bin, "version", "-o", "json").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(out, &v); err != nil || strings.TrimPrefix(v.Version, "v") != version {
		return fmt.Errorf("%s version says %q, not %s: rebuild it (make cli-dist)", bin, strings.TrimSpace(string(out)), version)
	}
	return nil
}

type tarEntry struct {
	name string
	mode int64
	data []byte
}

// tarGz is a gzip'd tar of entries with fixed times and owners: the same inputs give the same
// bytes, so a rebuilt release has the same checksums.
func tarGz(entries []tarEntry) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: time.Unix(0, 0).UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CLIArtifact is the OCI artifact of the CLI: one layer per archive and one for checksums.txt,
// each titled with its file name (org.opencontainers.image.title), so `oras pull` writes them
// as files. It is pushed as REGISTRY/kubectl-platform:VERSION and signed like the image.
func CLIArtifact(archives []CLIArchive, checksums string) (v1.Image, error) {
	var adds []mutate.Addendum
	add := func(file, mediaType string) error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		adds = append(adds, mutate.Addendum{Layer: static.NewLayer(b, types.MediaType(mediaType)),
			Annotations: map[string]string{"org.opencontainers.image.title": filepath.Base(file)}})
		return nil
	}
	for _, a := range archives {
		if err := add(a.File, CLIArchiveMediaType); err != nil {
			return nil, err
		}
	}
	if err := add(checksums, ChecksumsMediaType); err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, CLIArtifactType), nil
}
