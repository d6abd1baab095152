// Package release builds and publishes a release: the manager image index, the chart as an OCI
// artifact, and the SBOM and provenance attached to the image. It also checks that every place
// that states the version agrees with the VERSION file (`make verify`).
package release

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// semver is a SemVer 2.0.0 version without a leading "v" (Helm charts and Keep a Changelog use
// that form; image tags and git tags add nothing else).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// chartMeta is the part of Chart.yaml that states versions.
type chartMeta struct {
	Version     string            `json:"version"`
	AppVersion  string            `json:"appVersion"`
	Annotations map[string]string `json:"annotations"`
}

// artifactHubImage is one entry of Chart.yaml's artifacthub.io/images annotation.
type artifactHubImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// ReadVersion returns the version in root/VERSION (one line, SemVer without "v").
func ReadVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if !semver.MatchString(v) {
		return "", fmt.Errorf("VERSION: %q is not a SemVer version like 1.2.3 (no leading v)", v)
	}
	return v, nil
}

// CheckVersions reads VERSION, the chart's Chart.yaml and CHANGELOG.md under root and returns
// an error listing every place that disagrees with VERSION.
func CheckVersions(root string) error {
	version, err := ReadVersion(root)
	if err != nil {
		return err
	}
	chart, err := os.ReadFile(filepath.Join(root, "charts", "platform-operators", "Chart.yaml"))
	if err != nil {
		return err
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	if problems := versionProblems(version, chart, string(changelog)); len(problems) > 0 {
		return fmt.Errorf("the version is %s (VERSION) but:\n  %s\nchange them together (docs/release.md)", version, strings.Join(problems, "\n  "))
	}
	return nil
}

// versionProblems lists what in Chart.yaml and the changelog disagrees with version.
func versionProblems(version string, chartYAML []byte, changelog string) []string {
	var problems []string
	var c chartMeta
	if err := yaml.Unmarshal(chartYAML, &c); err != nil {
		return []string{fmt.Sprintf("Chart.yaml: %v", err)}
	}
	if c.Version != version {
		problems = append(problems, fmt.Sprintf("Chart.yaml version is %q", c.Version))
	}
	if c.AppVersion != version {
		problems = append(problems, fmt.Sprintf("Chart.yaml appVersion is %q", c.AppVersion))
	}
	var images []artifactHubImage
	if err := yaml.Unmarshal([]byte(c.Annotations["artifacthub.io/images"]), &images); err != nil {
		problems = append(problems, fmt.Sprintf("Chart.yaml artifacthub.io/images: %v", err))
	}
	found := false
	for _, im := range images {
		if im.Name != "manager" {
			continue
		}
		found = true
		if _, tag, _ := strings.Cut(im.Image[strings.LastIndex(im.Image, "/")+1:], ":"); tag != version {
			problems = append(problems, fmt.Sprintf("Chart.yaml artifacthub.io/images manager image is %q (tag %q)", im.Image, tag))
		}
	}
	if !found {
		problems = append(problems, "Chart.yaml artifacthub.io/images has no manager image")
	}
	if !strings.Contains(changelog, "\n## ["+version+"]") {
		problems = append(problems, fmt.Sprintf("CHANGELOG.md has no %q section", "## ["+version+"]"))
	}
	return problems
}
