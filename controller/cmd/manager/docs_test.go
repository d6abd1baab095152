package main

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestTroubleshootingExplainsEveryReason keeps docs/troubleshooting.md in step with the code: every
// Reason constant of a controller package (a condition reason, a status.failures reason or an
// Event reason a user sees) is named there, in backquotes, with its meaning and fix. The reasons
// are read from the packages' source, so a new one cannot be forgotten.
func TestTroubleshootingExplainsEveryReason(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{} // value -> where
	for _, pkg := range []string{"at", "scheduledjob", "logic/slotplan", "secretsync", "logic/copyplan"} {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.CONST {
					continue
				}
				for _, spec := range gen.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("%s: %s is not a string literal", file, name.Name)
							continue
						}
						value, _ := strconv.Unquote(lit.Value)
						reasons[value] = pkg + "." + name.Name
					}
				}
			}
		}
	}
	if len(reasons) < 30 {
		t.Fatalf("found only %d reasons: is the parse looking in the right place?", len(reasons))
	}
	for value, where := range reasons {
		if !strings.Contains(string(doc), "`"+value+"`") {
			t.Errorf("docs/troubleshooting.md does not name %q (%s)", value, where)
		}
	}
}

// TestHelpNamesEveryKindAndDocEveryFlag: `manager --help` names every kind of the generated CRDs
// (read from the chart's files/crds, where make manifests writes them), and docs/manager.md lists
// every flag of the real FlagSet. The other lists of kinds (install, uninstall, Artifact Hub,
// SECURITY.md, the aggregated roles) are checked in tests/docs.
func TestHelpNamesEveryKindAndDocEveryFlag(t *testing.T) {
	files, err := filepath.Glob("../../../charts/platform-operators/files/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d CRDs, want at least 4: is the glob looking in the right place?", len(files))
	}
	help := usageText()
	for _, f := range files {
		var c struct {
			Spec struct {
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
			} `json:"spec"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &c); err != nil || c.Spec.Names.Kind == "" {
			t.Fatalf("%s: no kind (%v)", f, err)
		}
		if !strings.Contains(help, c.Spec.Names.Kind) {
			t.Errorf("manager --help (usageHeader in main.go) does not name the kind %s", c.Spec.Names.Kind)
		}
	}

	doc, err := os.ReadFile(managerDoc)
	if err != nil {
		t.Fatal(err)
	}
	var o options
	newFlagSet(&o).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(string(doc), "--"+f.Name+" ") && !strings.Contains(string(doc), "--"+f.Name+"\n") {
			t.Errorf("docs/manager.md does not list the flag --%s: run UPDATE_DOCS=1 go test -run TestManagerDocIsCurrent ./controller/cmd/manager/", f.Name)
		}
	})
}
