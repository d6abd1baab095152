// Package docs checks that the documentation names what the code, the chart and the Makefile
// have: every CRD kind in each place a user looks for the list of kinds, every values group in the
// chart's references, every values key and make target the docs name. Each list is read from its
// source (the generated CRDs, values.yaml and its schema, the Makefile), so a new kind, value group
// or target cannot be forgotten, and a failure says what is missing and where.
//
// The manager's own command line (its flags in docs/manager.md, the kinds in `manager --help`) is
// checked next to its FlagSet, in controller/cmd/manager.
package docs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// root is the repository's root, seen from this package.
const root = "../.."

const chartDir = "charts/platform-operators"

// crd is what the docs must say of one CustomResourceDefinition.
type crd struct {
	Kind, Plural, Group, Scope, Version string
}

// Name is the CRD's object name, as `kubectl delete crd` and Artifact Hub take it.
func (c crd) Name() string { return c.Plural + "." + c.Group }

// crds reads the kinds from the generated CRDs the chart installs (make manifests writes them).
func crds(t *testing.T) []crd {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, chartDir, "files", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []crd
	for _, f := range files {
		var obj struct {
			Spec struct {
				Group string `json:"group"`
				Scope string `json:"scope"`
				Names struct {
					Kind   string `json:"kind"`
					Plural string `json:"plural"`
				} `json:"names"`
				Versions []struct {
					Name    string `json:"name"`
					Storage bool   `json:"storage"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(read(t, f)), &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c := crd{Kind: obj.Spec.Names.Kind, Plural: obj.Spec.Names.Plural, Group: obj.Spec.Group, Scope: obj.Spec.Scope}
		for _, v := range obj.Spec.Versions {
			if v.Storage {
				c.Version = v.Name
			}
		}
		if c.Kind == "" || c.Plural == "" || c.Version == "" {
			t.Fatalf("%s: no kind, plural or storage version: is it a CRD?", f)
		}
		out = append(out, c)
	}
	// Four today (SecretSync, At, ScheduledJob, CopyRequest): fewer means the glob looks in the
	// wrong place and every check below would pass on nothing.
	if len(out) < 4 {
		t.Fatalf("found %d CRDs in %s/files/crds, want at least 4", len(out), chartDir)
	}
	return out
}

// read returns a file of the repository (path relative to its root, or as given when it already
// starts with root).
func read(t *testing.T, path string) string {
	t.Helper()
	if !strings.HasPrefix(path, root+"/") {
		path = filepath.Join(root, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the lines of a Markdown document from the heading that starts with heading (e.g.
// "## CRDs") up to the next heading of the same or a higher level; '#' lines in fenced code blocks
// are not headings. A missing section fails the test: a renamed heading is drift too.
func section(t *testing.T, path, heading string) string {
	t.Helper()
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	var out []string
	in, fenced := false, false
	for _, line := range strings.Split(read(t, path), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			l := strings.IndexFunc(line, func(r rune) bool { return r != '#' })
			if in && l > 0 && l <= level {
				break
			}
			if strings.HasPrefix(line, heading) {
				in = true
			}
		}
		if in {
			out = append(out, line)
		}
	}
	if !in {
		t.Fatalf("%s has no section %q", path, heading)
	}
	return strings.Join(out, "\n")
}

// word reports whether text names w as a word (SecretSync in "SecretSyncs" counts; At in "Attack"
// does not).
func word(text, w string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z])` + regexp.QuoteMeta(w) + `s?([^A-Za-z]|$)`).MatchString(text)
}

// TestEveryKindIsNamedWhereItMustBe: each CRD kind, read from the generated CRDs, is named in every
// list of kinds a user reads or a tool takes (a CRD missing from `kubectl delete crd` stays behind).
func TestEveryKindIsNamedWhereItMustBe(t *testing.T) {
	kinds := crds(t)

	// Chart.yaml's Artifact Hub annotations: the CRD list and an example object per kind.
	var chart struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal([]byte(read(t, chartDir+"/Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	var hubCRDs []struct{ Kind, Version, Name string }
	if err := yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/crds"]), &hubCRDs); err != nil {
		t.Fatalf("Chart.yaml artifacthub.io/crds: %v", err)
	}
	var hubExamples []struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/crdsExamples"]), &hubExamples); err != nil {
		t.Fatalf("Chart.yaml artifacthub.io/crdsExamples: %v", err)
	}

	// Each example decodes strictly into its Go type: a field renamed or removed since fails here
	// rather than on Artifact Hub's page, where users copy it from.
	var rawExamples []map[string]any
	if err := yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/crdsExamples"]), &rawExamples); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, ex := range rawExamples {
		apiVersion, _ := ex["apiVersion"].(string)
		kind, _ := ex["kind"].(string)
		obj, err := scheme.New(schema.FromAPIVersionAndKind(apiVersion, kind))
		if err != nil {
			t.Errorf("Chart.yaml: artifacthub.io/crdsExamples: %s %s: %v", apiVersion, kind, err)
			continue
		}
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Errorf("Chart.yaml: artifacthub.io/crdsExamples: the %s example is not a valid %s: %v", kind, kind, err)
		}
	}

	install := section(t, "docs/install.md", "## CRDs")
	security := read(t, "SECURITY.md")
	aggregated := section(t, "docs/tenants.md", "## Aggregated roles")
	var deleteCRD []string
	// A command continued with a trailing backslash is one line.
	for _, line := range strings.Split(strings.ReplaceAll(read(t, "docs/uninstall.md"), "\\\n", " "), "\n") {
		if strings.Contains(line, "kubectl delete crd") {
			deleteCRD = append(deleteCRD, line)
		}
	}
	if len(deleteCRD) == 0 {
		t.Fatal("docs/uninstall.md has no `kubectl delete crd` command")
	}

	for _, c := range kinds {
		t.Run(c.Kind, func(t *testing.T) {
			if !word(install, c.Kind) {
				t.Errorf("docs/install.md, section \"CRDs\", does not name %s", c.Kind)
			}
			if !slices.ContainsFunc(deleteCRD, func(l string) bool { return slices.Contains(strings.Fields(l), c.Name()) }) {
				t.Errorf("docs/uninstall.md: `kubectl delete crd` does not delete %s", c.Name())
			}
			if !slices.ContainsFunc(hubCRDs, func(h struct{ Kind, Version, Name string }) bool {
				return h.Kind == c.Kind && h.Name == c.Name() && h.Version == c.Version
			}) {
				t.Errorf("Chart.yaml: artifacthub.io/crds has no entry {kind: %s, version: %s, name: %s}", c.Kind, c.Version, c.Name())
			}
			if !slices.ContainsFunc(hubExamples, func(e struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}) bool {
				return e.Kind == c.Kind && e.APIVersion == c.Group+"/"+c.Version
			}) {
				t.Errorf("Chart.yaml: artifacthub.io/crdsExamples has no %s (apiVersion %s/%s)", c.Kind, c.Group, c.Version)
			}
			if !word(security, c.Kind) {
				t.Errorf("SECURITY.md (what the add-on can do in a cluster) does not name %s", c.Kind)
			}
			// The aggregated roles grant the namespaced kinds by resource name; a cluster-scoped
			// kind is never aggregated, and the section says so by name.
			if c.Scope == "Namespaced" && !strings.Contains(aggregated, "`"+c.Plural+"`") {
				t.Errorf("docs/tenants.md, section \"Aggregated roles\", does not list `%s` (namespaced %s)", c.Plural, c.Kind)
			}
			if c.Scope != "Namespaced" && !word(aggregated, c.Kind) {
				t.Errorf("docs/tenants.md, section \"Aggregated roles\", does not say what becomes of the cluster-scoped %s", c.Kind)
			}
		})
	}
}

// valuesGroups returns the top-level keys of the chart's values.yaml.
func valuesGroups(t *testing.T) []string {
	t.Helper()
	var values map[string]any
	if err := yaml.Unmarshal([]byte(read(t, chartDir+"/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	groups := make([]string, 0, len(values))
	for k := range values {
		groups = append(groups, k)
	}
	sort.Strings(groups)
	if len(groups) < 20 {
		t.Fatalf("values.yaml has only %d top-level keys: is it parsed right?", len(groups))
	}
	return groups
}

// TestEveryValuesGroupIsDocumented: each top-level key of values.yaml has rows in the chart README
// (helm-docs writes them from values.yaml; a key without a `# --` comment would still be listed,
// so a missing one means the README was not regenerated) and a line in docs/chart.md's "Value
// groups" table, which install.md promises describes every group.
func TestEveryValuesGroupIsDocumented(t *testing.T) {
	readme := read(t, chartDir+"/README.md")
	groupsTable := section(t, "docs/chart.md", "## Value groups")
	// Backquoted names in the table; `pod*` stands for every group starting with "pod".
	var named []string
	for _, m := range regexp.MustCompile("`([a-zA-Z][a-zA-Z0-9.*]*)`").FindAllStringSubmatch(groupsTable, -1) {
		named = append(named, m[1])
	}
	for _, g := range valuesGroups(t) {
		if !regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(g) + `[ .\[]`).MatchString(readme) {
			t.Errorf("%s/README.md has no row for the values group %s: run make manifests (helm-docs)", chartDir, g)
		}
		if !slices.ContainsFunc(named, func(n string) bool {
			if prefix, ok := strings.CutSuffix(n, "*"); ok {
				return strings.HasPrefix(g, prefix)
			}
			return n == g || strings.HasPrefix(n, g+".")
		}) {
			t.Errorf("docs/chart.md, section \"Value groups\", does not name the values group `%s`", g)
		}
	}
}

// docFiles are the Markdown files users read (the chart README is generated from its template).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "samples/README.md", chartDir + "/README.md.gotmpl"} {
		files = append(files, filepath.Join(root, f))
	}
	return files
}

// code returns the code of a Markdown document: its `spans` and its fenced blocks, each as one
// string.
func code(doc string) []string {
	var out []string
	fenced := false
	var block []string
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if fenced {
				out = append(out, strings.Join(block, "\n"))
				block = nil
			}
			fenced = !fenced
			continue
		}
		if fenced {
			block = append(block, line)
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// makeTargets returns the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):`).FindAllStringSubmatch(read(t, "Makefile"), -1) {
		targets[m[1]] = true
	}
	if len(targets) < 10 || !targets["test"] || !targets["up"] {
		t.Fatalf("found only %d targets in the Makefile: is it parsed right?", len(targets))
	}
	return targets
}

// TestEveryMakeTargetNamedExists: every `make <target>` in the docs (in code, where a reader copies
// it from) names a target of the Makefile.
func TestEveryMakeTargetNamedExists(t *testing.T) {
	targets := makeTargets(t)
	// make at the start of a command: of a line (after a `$ ` prompt and VAR=value settings) or
	// after ; && || | ( — not the word in prose ("requests to make before giving up").
	invocation := regexp.MustCompile(`(?m)(?:^[ \t]*(?:\$[ \t]+)?|[;&|(][ \t]*)(?:[A-Z_]+=\S*[ \t]+)*make((?:[ \t]+[^\s#;&|)]+)+)`)
	quoted := regexp.MustCompile(`'[^']*'|"[^"]*"|<[^>]*>`)
	seen := 0
	for _, f := range docFiles(t) {
		rel, _ := filepath.Rel(root, f)
		for _, c := range code(read(t, f)) {
			// A quoted or <placeholder> value (TEST_LANES='a b', BIN=<a checkout's bin/>) is one word.
			c = quoted.ReplaceAllString(c, "x")
			for _, m := range invocation.FindAllStringSubmatch(c, -1) {
				for _, arg := range strings.Fields(m[1]) {
					// VAR=value and -flags are not targets.
					if strings.Contains(arg, "=") || strings.HasPrefix(arg, "-") {
						continue
					}
					seen++
					if !targets[arg] {
						t.Errorf("%s names `make %s`, which the Makefile does not have", rel, arg)
					}
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found only %d make invocations in the docs: is the parse right?", seen)
	}
}

// schemaNode is the part of values.schema.json the key check walks.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Type                 any                    `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	Definitions          map[string]*schemaNode `json:"definitions"`
}

// valuesKeyExists walks path (a.b[].c) through the schema; a free-form map (additionalProperties
// allowed) accepts any key below it.
func valuesKeyExists(schema *schemaNode, path string) bool {
	node := schema
	for _, seg := range strings.Split(strings.ReplaceAll(path, "[]", ".[]"), ".") {
		for node.Ref != "" {
			node = schema.Definitions[strings.TrimPrefix(node.Ref, "#/definitions/")]
			if node == nil {
				return false
			}
		}
		if seg == "[]" {
			if node.Items == nil {
				return false
			}
			node = node.Items
			continue
		}
		if next, ok := node.Properties[seg]; ok {
			node = next
			continue
		}
		// additionalProperties: absent or true allows any key, false or a schema of its own does
		// not name one (a schema: the map's keys are the user's, not ours).
		extra := strings.TrimSpace(string(node.AdditionalProperties))
		return node.Properties == nil && extra != "false" || extra != "" && extra != "false"
	}
	return true
}

// TestEveryValuesKeyNamedExists: every values key the docs name in code (`metrics.secure`,
// `tenants[].tokenSecret`, `--set podWatcher.enabled=true`) exists in values.schema.json, which
// refuses unknown keys: a renamed or removed value is drift a user would copy into a failing
// install.
func TestEveryValuesKeyNamedExists(t *testing.T) {
	var schema schemaNode
	if err := json.Unmarshal([]byte(read(t, chartDir+"/values.schema.json")), &schema); err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	for _, g := range valuesGroups(t) {
		groups[g] = true
	}
	// A dotted lowerCamel path whose first segment is a values group, not followed by what makes it
	// something else (a file name, a Go call, a URL, a label key).
	key := regexp.MustCompile(`(?:^|[\s{,'"=(])([a-z][a-zA-Z0-9]*(?:\[\])?(?:\.[a-z][a-zA-Z0-9]*(?:\[\])?)+)(?:$|[\s=:,})'"])`)
	fileExt := regexp.MustCompile(`\.(go|ya?ml|md|json|tgz|txt|sh|io|com|org|k8s)$`)
	seen := 0
	for _, f := range docFiles(t) {
		rel, _ := filepath.Rel(root, f)
		for _, c := range code(read(t, f)) {
			for _, m := range key.FindAllStringSubmatch(c, -1) {
				path := m[1]
				first, _, _ := strings.Cut(strings.TrimSuffix(strings.SplitN(path, ".", 2)[0], "[]"), "[")
				if !groups[first] || fileExt.MatchString(path) {
					continue
				}
				seen++
				if !valuesKeyExists(&schema, path) {
					t.Errorf("%s names the value `%s`, which values.schema.json does not have", rel, path)
				}
			}
		}
	}
	if seen < 30 {
		t.Errorf("found only %d values keys in the docs: is the parse right?", seen)
	}
	t.Logf("checked %d values keys named in the docs", seen)
}
