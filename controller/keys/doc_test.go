package keys

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strings"
	"testing"
)

const (
	architectureDoc = "../../docs/architecture.md"
	tableBegin      = "<!-- keys:begin -->"
	tableEnd        = "<!-- keys:end -->"
)

// keysTable renders every label and annotation key of keys.go as a Markdown table: the value
// from the type checker, the meaning from the constant's doc comment, grouped as the file groups
// them. Nothing in it is written by hand, so the docs cannot drift from the code.
func keysTable(t *testing.T) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "keys.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{}).Check("keys", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(tableBegin + "\n<!-- Generated from controller/keys/keys.go by TestKeysDocIsCurrent:\n" +
		"     UPDATE_DOCS=1 go test -run TestKeysDocIsCurrent ./controller/keys/ -->\n\n" +
		"| key | kind | on | constant | what it does |\n|---|---|---|---|---|\n")
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		group := strings.TrimSuffix(strings.TrimSpace(gen.Doc.Text()), ".")
		for _, spec := range gen.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				kind := ""
				switch {
				case strings.HasPrefix(name.Name, "Label"):
					kind = "label"
				case strings.HasPrefix(name.Name, "Annotation"):
					kind = "annotation"
				default:
					continue // Prefix, ManagedByValue: not keys
				}
				value := constant.StringVal(info.Defs[name].(*types.Const).Val())
				doc := strings.Join(strings.Fields(spec.(*ast.ValueSpec).Doc.Text()), " ")
				// "LabelX marks ...", "AnnotationY, on a ConfigMap, ...": the sentence without its subject.
				doc = strings.TrimPrefix(strings.TrimPrefix(doc, name.Name), ",")
				doc = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(strings.TrimSpace(doc))
				fmt.Fprintf(&b, "| `%s` | %s | %s | `keys.%s` | %s |\n", value, kind, group, name.Name, doc)
			}
		}
	}
	b.WriteString(tableEnd)
	return b.String()
}

// TestKeysDocIsCurrent keeps the key table of docs/architecture.md equal to keys.go.
func TestKeysDocIsCurrent(t *testing.T) {
	raw, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %s ... %s section", architectureDoc, tableBegin, tableEnd)
	}
	want := doc[:i] + keysTable(t) + doc[j+len(tableEnd):]
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(architectureDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Errorf("the key table of docs/architecture.md is not keys.go's: run UPDATE_DOCS=1 go test -run TestKeysDocIsCurrent ./controller/keys/")
	}
}
