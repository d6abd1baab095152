package cachebounds

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// storeType matches the types of fields that keep state between requests and can grow with what
// clients send: maps, sync.Maps, lists, LRU and TTL caches, rate limiters, work queues' state.
var storeType = regexp.MustCompile(`^(\*?sync\.Map|map\[|\*?list\.List|\*?cache\.LRU|\*?lru\.|\*?rate\.Limiter|\*?ttlCache|\*?expirable\.)`)

// storeMarker is the declaration a store field carries in its comment: its bound in bytes (or
// that it lives for one pass only, or holds configuration) and who pays for it.
var storeMarker = regexp.MustCompile(`store: (per pass|configuration|[^;]*bytes[^;]*); paid by [^.]+`)

// Issue 45: the informer inventory bounded every cache, but memory kept outside informers (the
// metrics guard's decisions, refused-write memories, source reads, fair-queue lanes, per-object
// metrics) was sized by clients. Every struct field of a store type in the product's code says,
// next to it, its bound in bytes and who pays for it ("store: ... bytes ...; paid by ..."), so a
// new store cannot be added without one. This reads the source, not a list someone kept.
func TestEveryInProcessStoreDeclaresItsBound(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../")
		if d.IsDir() && (rel == "api" || strings.HasPrefix(rel, "api/")) {
			return filepath.SkipDir // the API types: what the API server stores, bounded by the CRDs
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(rel, "/cmd/kubectl-platform/") || strings.HasPrefix(rel, "cmd/kubectl-platform/") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				typ := string(src[fset.Position(field.Type.Pos()).Offset:fset.Position(field.Type.End()).Offset])
				if !storeType.MatchString(typ) {
					continue
				}
				seen++
				doc := field.Doc.Text() + field.Comment.Text()
				if !storeMarker.MatchString(strings.Join(strings.Fields(doc), " ")) {
					t.Errorf("%s: field %s %s keeps state without declaring its bound: add \"store: <bound in bytes>; paid by <who>.\" (or \"store: per pass; paid by ...\") to its comment", fset.Position(field.Pos()), names(field), typ)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Fatalf("found %d store fields: the scan is broken", seen)
	}
	t.Logf("%d store fields declare their bound", seen)
}

func names(f *ast.Field) string {
	var out []string
	for _, n := range f.Names {
		out = append(out, n.Name)
	}
	return strings.Join(out, ",")
}
