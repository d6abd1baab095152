package imagebuild

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The docker tests build the real images, load them into a Docker engine and run them. They
// run when PO_DOCKER_TESTS=1 (`make test-image` sets it); then a Docker engine that does not
// answer fails them, rather than skipping what was asked for.
const (
	dockerGate = "PO_DOCKER_TESTS"
	// busyboxEnv names the static busybox binary (busybox-static's bin/busybox) the busybox test
	// builds its image from; by default the one `scripts/host.sh busybox` (make host) fetches,
	// relative to this package's directory, where go test runs.
	busyboxEnv     = "PO_BUSYBOX_BINARY"
	defaultBusybox = "../../bin/busybox/busybox"
	modulePath     = "github.com/platform-operators/platform-operators"
)

// requireDocker skips unless the docker tests were asked for, and fails if the engine does not
// answer.
func requireDocker(t *testing.T) {
	t.Helper()
	if os.Getenv(dockerGate) != "1" {
		t.Skipf("runs images in Docker: set %s=1 with a Docker engine running (make test-image)", dockerGate)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		t.Fatalf("%s=1 but the Docker engine does not answer: docker version: %v\n%s", dockerGate, err, out)
	}
	t.Logf("Docker engine %s", bytes.TrimSpace(out))
}

// docker runs the docker client and returns its stdout; a non-zero exit fails the test unless
// wantFail, in which case stderr is returned instead.
func docker(t *testing.T, wantFail bool, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	switch {
	case wantFail && err == nil:
		t.Fatalf("docker %s succeeded, want a failure; stdout:\n%s", strings.Join(args, " "), stdout.String())
	case wantFail:
		return stderr.String()
	case err != nil:
		t.Fatalf("docker %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// loadImage writes img's tarball under a fresh tag, `docker load`s it and removes it when the
// test ends.
func loadImage(t *testing.T, repo string, write func(path, tag string) error) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tag := repo + ":test-" + hex.EncodeToString(b)
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := write(path, tag); err != nil {
		t.Fatal(err)
	}
	docker(t, false, "", "load", "--input", path)
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "rmi", "--force", tag).CombinedOutput(); err != nil {
			t.Logf("docker rmi %s: %v: %s", tag, err, out)
		}
	})
	return tag
}

// buildManager builds the manager for linux on this machine's architecture as `make
// manager-linux` does (static, trimmed, version stamped) and returns the binary's path.
func buildManager(t *testing.T, version, commit string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "manager-linux-"+runtime.GOARCH)
	ldflags := "-s -w -X " + modulePath + "/controller/version.Version=" + version + " -X " + modulePath + "/controller/version.Commit=" + commit
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./controller/cmd/manager")
	// In the product module (the repository root), as make builds it: from this package's directory,
	// the tests module would build it with the tests module's dependency versions.
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the manager: %v\n%s", err, b)
	}
	t.Logf("built the manager in %s", time.Since(start).Round(time.Second))
	return out
}

func TestDockerManagerImage(t *testing.T) {
	requireDocker(t)
	bin := buildManager(t, "v0.0.0-imagetest", "imagetest")
	idx, err := Manager{Binaries: []string{bin}, Version: "v0.0.0-imagetest", Revision: "imagetest"}.Index()
	if err != nil {
		t.Fatal(err)
	}
	img, err := ImageFor(idx, HostPlatform())
	if err != nil {
		t.Fatal(err)
	}
	tag := loadImage(t, "platform-operators-imagebuild/manager", func(path, tag string) error { return WriteTarball(path, tag, img) })
	// As the chart runs it: nonroot, read-only root, no capabilities, no privilege gain.
	locked := []string{"run", "--rm", "--read-only", "--user", "65532:65532", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", tag}

	t.Run("a ScheduledJob's time zone is known inside the image", func(t *testing.T) {
		got := docker(t, false, "", append(locked, "schedule", "--schedule", "0 9 * * *", "--time-zone", "Asia/Seoul", "--from", "2026-01-01T00:00:00Z", "--count", "1")...)
		if want := "2026-01-01T00:00:00Z\t2026-01-01T09:00:00+09:00\n"; got != want {
			t.Errorf("manager schedule printed %q, want %q", got, want)
		}
	})
	t.Run("an unknown time zone fails with the controller's error", func(t *testing.T) {
		got := docker(t, true, "", append(locked, "schedule", "--schedule", "0 9 * * *", "--time-zone", "Asia/Seol")...)
		if !strings.Contains(got, `unknown time zone "Asia/Seol"`) {
			t.Errorf("stderr = %q, want the unknown time zone error", got)
		}
	})
	t.Run("the version is the one stamped at build time", func(t *testing.T) {
		got := docker(t, false, "", "run", "--rm", tag, "--version")
		want := "platform-operators v0.0.0-imagetest (commit imagetest, "
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " linux/"+runtime.GOARCH+")\n") {
			t.Errorf("--version printed %q, want %q... linux/%s)", got, want, runtime.GOARCH)
		}
	})
	t.Run("the engine sees the user and labels the chart relies on", func(t *testing.T) {
		got := docker(t, false, "", "image", "inspect", "--format", `{{.Config.User}} {{index .Config.Labels "org.opencontainers.image.version"}} {{.Architecture}}`, tag)
		if want := "65532:65532 v0.0.0-imagetest " + runtime.GOARCH + "\n"; got != want {
			t.Errorf("docker image inspect = %q, want %q", got, want)
		}
	})
}

func TestDockerBusyboxImage(t *testing.T) {
	requireDocker(t)
	binary := os.Getenv(busyboxEnv)
	if binary == "" {
		binary = defaultBusybox
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("no static busybox: %v. Run scripts/host.sh busybox (make host), or set %s to one (apt-get download busybox-static && dpkg-deb -x busybox-static_*.deb DIR: DIR/bin/busybox)", err, busyboxEnv)
	}
	ctx := context.Background()
	applets, err := Applets(ctx, binary)
	if err != nil {
		t.Fatal(err)
	}
	version, err := BusyboxVersion(ctx, binary)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Busybox{Binary: binary, Applets: applets, Version: version, Revision: "imagetest"}.Image()
	if err != nil {
		t.Fatal(err)
	}
	fs := files(t, img)
	for _, a := range []string{"sh", "echo", "sleep", "date", "id", "env", "touch"} {
		if !slices.Contains(applets, a) || fs["/bin/"+a] == nil {
			t.Errorf("/bin/%s missing (busybox lists %d applets)", a, len(applets))
		}
	}
	tag := loadImage(t, "platform-operators-imagebuild/busybox", func(path, tag string) error { return WriteTarball(path, tag, img) })

	t.Run("sh keeps quoted spaces and does arithmetic", func(t *testing.T) {
		got := docker(t, false, "", "run", "--rm", tag, "sh", "-c", `x="a  b"; echo "$x" $((6*7))`)
		if got != "a  b 42\n" {
			t.Errorf("printed %q, want %q", got, "a  b 42\n")
		}
	})
	t.Run("the default command is a shell reading stdin", func(t *testing.T) {
		got := docker(t, false, "echo $((1+1)) $PATH\n", "run", "--rm", "-i", tag)
		if got != "2 /bin\n" {
			t.Errorf("printed %q, want %q", got, "2 /bin\n")
		}
	})
	t.Run("the nonroot user has a name and may write to /tmp", func(t *testing.T) {
		got := docker(t, false, "", "run", "--rm", "--user", "65532:65532", "--cap-drop", "ALL", tag, "sh", "-c", "id -un; touch /tmp/x && echo wrote /tmp/x")
		if got != "nonroot\nwrote /tmp/x\n" {
			t.Errorf("printed %q, want %q", got, "nonroot\nwrote /tmp/x\n")
		}
	})
}
