package imagebuild

import (
	"fmt"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BinaryPath is where the manager binary lives in the manager image, and its entrypoint.
const BinaryPath = "/manager"

// Manager describes the manager image.
type Manager struct {
	// Binaries are the paths of static linux manager binaries, one per platform (the platform
	// is read from each binary's ELF header).
	Binaries []string
	// Version and Revision go into the OCI labels.
	Version, Revision string
	// Source is the org.opencontainers.image.source label.
	Source string
	// Created is the images' creation time; the zero time keeps builds reproducible.
	Created time.Time
}

// Labels returns the OCI labels of each image, also set as the annotations of the index.
func (m Manager) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "platform-operators",
		"org.opencontainers.image.description": "Platform add-on manager for shared (multi-tenant) Kubernetes clusters",
		"org.opencontainers.image.source":      m.Source,
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.revision":    m.Revision,
	}
}

// Index builds the image of each binary and an OCI image index over them, in the order of
// Binaries, each manifest with its platform (what a node's runtime picks by).
func (m Manager) Index() (v1.ImageIndex, error) {
	if len(m.Binaries) == 0 {
		return nil, fmt.Errorf("no manager binary given")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[Platform]string{}
	for _, bin := range m.Binaries {
		p, err := Inspect(bin)
		if err != nil {
			return nil, err
		}
		if other, ok := seen[p]; ok {
			return nil, fmt.Errorf("%s and %s are both %s binaries: give one per platform", other, bin, p)
		}
		seen[p] = bin
		img, err := m.image(bin, p)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	annotated, ok := mutate.Annotations(idx, m.Labels()).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotating the index: not an index")
	}
	return annotated, nil
}

// image is the manager image of one binary: /manager and the nonroot user's passwd entries on an
// empty base, run as 65532 (the chart's runAsUser) with /manager as entrypoint.
func (m Manager) image(bin string, p Platform) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("reading the manager binary: %w", err)
	}
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: UID},
		{name: "tmp/", mode: 0o1777},
	}
	entries = append(entries, passwdEntries("/sbin/nologin")...)
	entries = append(entries, entry{name: BinaryPath[1:], mode: 0o755, data: data})
	l, err := newLayer(entries)
	if err != nil {
		return nil, err
	}
	return assemble(l, p, m.Created, "platform-operators imagebuild: COPY manager "+BinaryPath, v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint: []string{BinaryPath},
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     m.Labels(),
	})
}
