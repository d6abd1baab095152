package jobstate

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// everyKeyOfOurs reads every label and annotation key constant of package keys from its source,
// so that a key added there is covered here without anyone remembering to list it.
func everyKeyOfOurs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../../keys/keys.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{}).Check("keys", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for ident, obj := range info.Defs {
		c, ok := obj.(*types.Const)
		if !ok || (!strings.HasPrefix(ident.Name, "Label") && !strings.HasPrefix(ident.Name, "Annotation")) {
			continue
		}
		out[ident.Name] = constant.StringVal(c.Val())
	}
	if len(out) < 10 {
		t.Fatalf("read only %d keys from keys.go: %v", len(out), out)
	}
	return out
}

func TestTemplateMetadataDropsEveryKeyOfOurs(t *testing.T) {
	for name, key := range everyKeyOfOurs(t) {
		t.Run(name, func(t *testing.T) {
			// The value a forger would use: ours for managed-by, anything for the rest.
			m := map[string]string{key: keys.ManagedByValue, "team": "a"}
			l, a := TemplateMetadata(m, m)
			for what, got := range map[string]map[string]string{"labels": l, "annotations": a} {
				if _, ok := got[key]; ok {
					t.Errorf("%s keep %s", what, key)
				}
				if got["team"] != "a" {
					t.Errorf("%s lost the tenant's own key: %v", what, got)
				}
			}
		})
	}
}

func TestIsOurKey(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		ours       bool
	}{
		{keys.AnnotationRunNowToken, "t1", true},
		{keys.LabelCreatedBy, "scheduledjob", true},
		{keys.Prefix + "a-key-not-named-yet", "x", true},
		{"sub.ops.platform-operators.io/x", "x", true},
		{keys.LabelManagedBy, keys.ManagedByValue, true},
		{keys.LabelManagedBy, "Helm", false}, // a tenant's own tool's claim is its business
		{"platform-operators.io/tenant", "a", false},
		{"notops.platform-operators.io/x", "x", false},
		{"ops.platform-operators.io.evil.com/x", "x", false},
		{"ops.platform-operators.io", "x", false}, // no prefix: an unqualified name
		{"app.kubernetes.io/name", "x", false},
	} {
		if got := IsOurKey(tc.key, tc.value); got != tc.ours {
			t.Errorf("IsOurKey(%q, %q) = %v, want %v", tc.key, tc.value, got, tc.ours)
		}
	}
}

func TestTemplateMetadataCopies(t *testing.T) {
	l, a := TemplateMetadata(nil, nil)
	if l == nil || a == nil {
		t.Fatal("nil map")
	}
	in := map[string]string{"k": "v"}
	l, _ = TemplateMetadata(in, nil)
	l["k2"] = "v2"
	if len(in) != 1 {
		t.Error("the template's map was changed")
	}
}
