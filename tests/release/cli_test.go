package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildTiny builds testdata/tinycli for each CLI platform into dir as make cli-dist names them,
// stamped with version as the Makefile's LDFLAGS stamp it.
func buildTiny(t *testing.T, dir, version string) {
	t.Helper()
	for _, p := range CLIPlatforms {
		goos, goarch, _ := strings.Cut(p, "/")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/platform-operators/platform-operators/controller/version.Version="+version+" -X github.com/platform-operators/platform-operators/controller/version.Commit=abc",
			"-o", filepath.Join(dir, "kubectl-platform-"+goos+"-"+goarch), "./testdata/tinycli")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

func TestCLIArchivesAreCheckedReproducibleAndSummed(t *testing.T) {
	root, _ := filepath.Abs("../..")
	bin := t.TempDir()
	buildTiny(t, bin, "1.2.3")
	out := t.TempDir()
	archives, sums, err := CLIArchives(context.Background(), root, bin, out, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != 4 {
		t.Fatalf("%d archives, want linux and darwin on amd64 and arm64", len(archives))
	}
	list, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range archives {
		b, err := os.ReadFile(a.File)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		line := hex.EncodeToString(sum[:]) + "  " + filepath.Base(a.File) + "\n"
		if a.SHA256 != hex.EncodeToString(sum[:]) || !strings.Contains(string(list), line) {
			t.Errorf("%s: checksums.txt lacks %q:\n%s", a.Platform, line, list)
		}
		files := untar(t, b)
		if files["kubectl-platform"] != 0o755 || files["LICENSE"] != 0o644 || len(files) != 2 {
			t.Errorf("%s holds %v, want kubectl-platform (0755) and LICENSE", a.File, files)
		}
	}
	// The same binaries give the same bytes: checksums of a rebuilt release match.
	again, _, err := CLIArchives(context.Background(), root, bin, t.TempDir(), "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i].SHA256 != archives[i].SHA256 {
			t.Errorf("%s: %s then %s; want the same archive twice", again[i].Platform, archives[i].SHA256, again[i].SHA256)
		}
	}
	if img, err := CLIArtifact(archives, sums); err != nil {
		t.Error(err)
	} else if m, err := img.Manifest(); err != nil || len(m.Layers) != 5 || m.Layers[4].Annotations["org.opencontainers.image.title"] != CLIChecksums {
		t.Errorf("the CLI artifact: %v, %+v; want four archives and checksums.txt, titled", err, m)
	}
}

func TestCLIArchivesRefuseTheWrongBinaries(t *testing.T) {
	root, _ := filepath.Abs("../..")
	bin := t.TempDir()
	buildTiny(t, bin, "1.2.3")
	if _, _, err := CLIArchives(context.Background(), root, bin, t.TempDir(), "1.2.4"); err == nil || !strings.Contains(err.Error(), "not 1.2.4") {
		t.Errorf("binaries of another version: %v", err)
	}
	linux, _ := os.ReadFile(filepath.Join(bin, "kubectl-platform-linux-amd64"))
	if err := os.WriteFile(filepath.Join(bin, "kubectl-platform-darwin-arm64"), linux, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CLIArchives(context.Background(), root, bin, t.TempDir(), "1.2.3"); err == nil || !strings.Contains(err.Error(), "built for linux/amd64, not darwin/arm64") {
		t.Errorf("a binary of another platform: %v", err)
	}
	if err := os.Remove(filepath.Join(bin, "kubectl-platform-linux-arm64")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CLIArchives(context.Background(), root, bin, t.TempDir(), "1.2.3"); err == nil || !strings.Contains(err.Error(), "make cli-dist") {
		t.Errorf("a missing binary: %v", err)
	}
}

// untar lists a .tar.gz's files and their modes.
func untar(t *testing.T, b []byte) map[string]int64 {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.Mode
	}
}

// TestTheMakefileBuildsEveryCLIPlatform: make cli-dist builds exactly the platforms the release
// ships (CLI_PLATFORMS there, CLIPlatforms here).
func TestTheMakefileBuildsEveryCLIPlatform(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CLI_PLATFORMS := "); ok {
			if got, want := strings.Fields(v), CLIPlatforms; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("Makefile CLI_PLATFORMS = %v, release ships %v", got, want)
			}
			return
		}
	}
	t.Error("the Makefile has no CLI_PLATFORMS")
}
