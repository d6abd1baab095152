package release

import (
	"strings"
	"testing"
)

const goodChart = `apiVersion: v2
name: platform-operators
version: 1.2.3
appVersion: "1.2.3"
annotations:
  artifacthub.io/images: |
    - name: manager
      image: ghcr.io/platform-operators/manager:1.2.3
    - name: job
      image: docker.io/library/busybox:1.37
`

const goodChangelog = "# Changelog\n\n## [Unreleased]\n\n## [1.2.3] - 2026-11-24\n"

func TestVersionProblems(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chart     string
		changelog string
		want      []string // substrings, one per problem
	}{
		{name: "all agree", chart: goodChart, changelog: goodChangelog},
		{name: "chart version behind", chart: strings.Replace(goodChart, "version: 1.2.3", "version: 1.2.2", 1), changelog: goodChangelog,
			want: []string{`version is "1.2.2"`}},
		{name: "appVersion behind", chart: strings.Replace(goodChart, `appVersion: "1.2.3"`, `appVersion: "1.2.2"`, 1), changelog: goodChangelog,
			want: []string{`appVersion is "1.2.2"`}},
		{name: "artifacthub image tag behind", chart: strings.Replace(goodChart, "manager:1.2.3", "manager:1.2.2", 1), changelog: goodChangelog,
			want: []string{`manager image is "ghcr.io/platform-operators/manager:1.2.2"`}},
		{name: "registry with a port is not the tag", chart: strings.Replace(goodChart, "ghcr.io/", "localhost:5000/", 1), changelog: goodChangelog},
		{name: "no manager image", chart: strings.Replace(goodChart, "name: manager", "name: other", 1), changelog: goodChangelog,
			want: []string{"no manager image"}},
		{name: "no changelog section", chart: goodChart, changelog: "# Changelog\n\n## [Unreleased]\n",
			want: []string{`no "## [1.2.3]" section`}},
		{name: "unreleased only mentions it", chart: goodChart, changelog: "# Changelog\n\nsee [1.2.3]\n",
			want: []string{"CHANGELOG.md"}},
		{name: "not YAML", chart: "version: [", changelog: goodChangelog, want: []string{"Chart.yaml:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := versionProblems("1.2.3", []byte(tc.chart), tc.changelog)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestReadVersionRefusesNonSemVer(t *testing.T) {
	for _, v := range []string{"v1.2.3", "1.2", "01.2.3", "1.2.3 extra", ""} {
		if semver.MatchString(v) {
			t.Errorf("%q accepted as a version", v)
		}
	}
	for _, v := range []string{"0.1.0", "1.2.3-rc.1", "1.2.3+build.5"} {
		if !semver.MatchString(v) {
			t.Errorf("%q refused", v)
		}
	}
}

// TestVersionSourcesAgree is what `make verify` runs: the repository's own version sources.
func TestVersionSourcesAgree(t *testing.T) {
	if err := CheckVersions("../.."); err != nil {
		t.Fatal(err)
	}
}
