package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BusyboxPath is where busybox lives in the job test image; every applet is a symlink beside it.
const BusyboxPath = "/bin/busybox"

// Busybox describes the job test image: the image the e2e suite runs At and ScheduledJob commands
// in (`sh -c ...`), built from Debian's busybox-static since no image can be pulled on the test
// machines. Like docker.io/library/busybox it runs as root with CMD ["sh"]; /etc/passwd also has
// the nonroot user, for pods that set runAsUser 65532.
type Busybox struct {
	// Binary is the path of a static busybox, e.g. bin/busybox of busybox-static's .deb.
	Binary string
	// Applets get a symlink each in /bin (see Applets); "busybox" itself is skipped.
	Applets []string
	// Version is busybox's version (see BusyboxVersion), Revision and Source this repository's;
	// all go into the OCI labels.
	Version, Revision, Source string
	// Created is the image's creation time; the zero time keeps builds reproducible.
	Created time.Time
}

// Labels returns the OCI labels of the image.
func (b Busybox) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "platform-operators-busybox",
		"org.opencontainers.image.description": "BusyBox " + b.Version + " (static) for the platform-operators e2e tests' job commands",
		"org.opencontainers.image.source":      b.Source,
		"org.opencontainers.image.version":     b.Version,
		"org.opencontainers.image.revision":    b.Revision,
	}
}

// Image builds the job test image for the binary's platform: one layer with /bin/busybox, a
// relative symlink per applet, /tmp (1777), /root, /home/nonroot and the passwd files; PATH=/bin.
func (b Busybox) Image() (v1.Image, error) {
	p, err := Inspect(b.Binary)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(b.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading busybox: %w", err)
	}
	applets := slices.Sorted(slices.Values(b.Applets))
	applets = slices.Compact(applets)
	applets = slices.DeleteFunc(applets, func(a string) bool { return a == "busybox" })
	if len(applets) == 0 {
		return nil, fmt.Errorf("no applets: without them the image has no sh")
	}
	entries := []entry{
		{name: "bin/", mode: 0o755},
		{name: "etc/", mode: 0o755},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: UID},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
		{name: BusyboxPath[1:], mode: 0o755, data: data},
	}
	entries = append(entries, passwdEntries("/bin/sh")...)
	for _, a := range applets {
		// A name with a slash would place the link outside /bin (or fail to extract).
		if a == "" || a == "." || a == ".." || strings.Contains(a, "/") {
			return nil, fmt.Errorf("applet name %q is not a file name", a)
		}
		entries = append(entries, entry{name: "bin/" + a, mode: 0o777, link: "busybox"})
	}
	l, err := newLayer(entries)
	if err != nil {
		return nil, err
	}
	return assemble(l, p, b.Created, "platform-operators imagebuild: COPY busybox "+BusyboxPath+" and applet links", v1.Config{
		Cmd:        []string{"sh"},
		WorkingDir: "/",
		Env:        []string{"PATH=/bin"},
		Labels:     b.Labels(),
	})
}

// Applets runs `busybox --list` (so the binary must run on this machine) and returns the applet
// names it prints, one a line.
func Applets(ctx context.Context, binary string) ([]string, error) {
	out, err := exec.CommandContext(ctx, binary, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", binary, err)
	}
	applets := strings.Fields(string(out))
	if !slices.Contains(applets, "sh") {
		return nil, fmt.Errorf("%s --list names no sh applet: is it busybox?", binary)
	}
	return applets, nil
}

// BusyboxVersion runs busybox without arguments and returns the version its first line names,
// e.g. "v1.35.0" from "BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.".
func BusyboxVersion(ctx context.Context, binary string) (string, error) {
	out, err := exec.CommandContext(ctx, binary).Output()
	if err != nil {
		return "", fmt.Errorf("running %s: %w", binary, err)
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 2 || f[0] != "BusyBox" {
		return "", fmt.Errorf("%s printed %q, not BusyBox's version line", binary, line)
	}
	return f[1], nil
}
