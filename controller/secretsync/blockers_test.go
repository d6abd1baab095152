package secretsync

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// TestEveryBlockerIsOneTheCLISeesAsBlocking: every blocker the reconciler sets (a reason with
// which a pass copies and removes nothing, put first in Ready) is one copyplan.Blocks names, so
// `kubectl platform why` says Blocked rather than judging copies the controller does not touch.
// The blockers are read from this package's source, so a new one cannot be forgotten; the one
// blocker-shaped notice that does not block (obs.unconfirmed) is left out by its field.
func TestEveryBlockerIsOneTheCLISeesAsBlocking(t *testing.T) {
	values := map[string]string{} // copyplan's Reason constants: name -> value
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "logic", "copyplan", "reasons.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok && gen.Tok == token.CONST {
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						values[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		notices := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok {
				if sel, ok := as.Lhs[0].(*ast.SelectorExpr); ok && sel.Sel.Name == "unconfirmed" {
					if u, ok := as.Rhs[0].(*ast.UnaryExpr); ok {
						notices[u.X] = true
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || notices[lit] {
				return true
			}
			if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "blocker" || len(lit.Elts) == 0 {
				return true
			}
			sel, ok := lit.Elts[0].(*ast.SelectorExpr)
			if !ok || values[sel.Sel.Name] == "" {
				t.Errorf("%s: a blocker whose reason is not a copyplan constant", file)
				return true
			}
			found++
			if !copyplan.Blocks(values[sel.Sel.Name]) {
				t.Errorf("%s: the blocker %s is not in copyplan.Blocks: kubectl platform why would judge copies the controller does not touch", file, sel.Sel.Name)
			}
			return true
		})
	}
	if found < 6 {
		t.Fatalf("found %d blockers: is the parse looking in the right place?", found)
	}
}
