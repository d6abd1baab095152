package secretsync

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n           int
		base, limit time.Duration
		want        time.Duration
	}{
		{"the first retry waits the base", 1, time.Second, time.Minute, time.Second},
		{"each retry after it waits twice as long", 4, time.Second, time.Minute, 8 * time.Second},
		{"no retry waits longer than the cap", 30, time.Second, time.Minute, time.Minute},
		{"a huge count does not overflow past the cap", 1 << 20, time.Second, 5 * time.Minute, 5 * time.Minute},
		{"a zero base is the default base", 1, 0, 0, DefaultRetryBase},
		{"a zero cap is the default cap", 40, 0, 0, DefaultRetryCap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoffDelay(tc.n, tc.base, tc.limit); got != tc.want {
				t.Errorf("backoffDelay(%d, %v, %v) = %v, want %v", tc.n, tc.base, tc.limit, got, tc.want)
			}
		})
	}
}

func TestRequeueNeverAsksForLessThanTheFloor(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want time.Duration
	}{
		{"zero is no requeue", 0, 0},
		{"a negative duration is no requeue", -time.Second, 0},
		{"a nanosecond waits the floor", time.Nanosecond, minRequeue},
		{"a minute waits a minute", time.Minute, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requeue(tc.d); got.RequeueAfter != tc.want {
				t.Errorf("requeue(%v) = %v, want %v", tc.d, got.RequeueAfter, tc.want)
			}
		})
	}
}

func TestABackoffGrowsPerKeyAndForgets(t *testing.T) {
	var b backoff
	if got := b.next("a", time.Second, time.Minute); got != time.Second {
		t.Errorf("first retry of a waits %v, want 1s", got)
	}
	if got := b.next("a", time.Second, time.Minute); got != 2*time.Second {
		t.Errorf("second retry of a waits %v, want 2s", got)
	}
	if got := b.next("b", time.Second, time.Minute); got != time.Second {
		t.Errorf("first retry of b waits %v, want 1s: keys share no count", got)
	}
	b.forget("a")
	if got := b.next("a", time.Second, time.Minute); got != time.Second {
		t.Errorf("a retry of a after forget waits %v, want 1s", got)
	}
}

// TestEveryRequeueOfTheCopyPathGoesThroughRequeue enumerates every place in the package's code
// that builds a controller-runtime Result with RequeueAfter or Requeue set: there must be only
// the one in requeue, which floors the wait. A new retry path that sets its own fixed short
// requeue fails here; one that wants a retry calls requeue with a backoff's wait.
func TestEveryRequeueOfTheCopyPathGoesThroughRequeue(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || !isResultType(lit.Type) {
					return true
				}
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if id, ok := kv.Key.(*ast.Ident); ok && (id.Name == "RequeueAfter" || id.Name == "Requeue") {
						found = append(found, fn.Name.Name+" at "+fset.Position(lit.Pos()).String())
					}
				}
				return true
			})
		}
	}
	if len(found) != 1 || !strings.HasPrefix(found[0], "requeue at ") {
		t.Errorf("Results that set a requeue: %v; want only the one in requeue (use requeue(d) with a backoff's wait)", found)
	}
}

// isResultType reports whether expr names ctrl.Result or reconcile.Result.
func isResultType(expr ast.Expr) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Result" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && (pkg.Name == "ctrl" || pkg.Name == "reconcile")
}
