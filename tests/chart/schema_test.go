package chart

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// values.schema.json is written by hand (its enums, patterns, if/then rules and messages say more
// than values.yaml annotations could) and kept in step with values.yaml by this test, not by care:
// docs/chart.md "The values schema". Every key of values.yaml has a schema property whose type
// takes the value and whose `default` is that value; every schema property is a key of values.yaml
// or, for what a user may add (a probe's successThreshold, an item of tenants), is named in the
// comment above its values.yaml key.

// schemaNode is one JSON schema object as decoded by encoding/json.
type schemaNode = map[string]any

// resolveRef follows "$ref": "#/definitions/name" within root.
func resolveRef(t *testing.T, root, n schemaNode) schemaNode {
	t.Helper()
	for i := 0; i < 10; i++ {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		name, found := strings.CutPrefix(ref, "#/definitions/")
		def, isNode := root["definitions"].(schemaNode)[name].(schemaNode)
		if !found || !isNode {
			t.Fatalf("schema: $ref %q does not name a definition", ref)
		}
		n = def
	}
	t.Fatal("schema: $ref chain longer than 10")
	return nil
}

// jsonTypes returns the types a schema node allows: its "type" (a string or a list), or those of
// the branches of its anyOf / oneOf.
func jsonTypes(t *testing.T, root, n schemaNode) []string {
	t.Helper()
	n = resolveRef(t, root, n)
	switch ty := n["type"].(type) {
	case string:
		return []string{ty}
	case []any:
		var out []string
		for _, x := range ty {
			out = append(out, x.(string))
		}
		return out
	}
	var out []string
	for _, key := range []string{"anyOf", "oneOf"} {
		branches, _ := n[key].([]any)
		for _, b := range branches {
			out = append(out, jsonTypes(t, root, b.(schemaNode))...)
		}
	}
	return out
}

// typeOf is the JSON schema type of a value as Helm reads values.yaml (numbers are float64).
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case int, int64:
		return "integer"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// typeAllowed reports whether a value of type got passes a schema that allows types.
func typeAllowed(got string, types []string) bool {
	return slices.Contains(types, got) || (got == "integer" && slices.Contains(types, "number"))
}

// valuesKey matches a key line of values.yaml: its indentation and its name.
var valuesKey = regexp.MustCompile(`^( *)([A-Za-z0-9_.-]+):`)

// valuesComments returns, for each key path of values.yaml (a.b.c), the comment lines right
// above its key (helm-docs' `# --` text and the plain comments of a group).
func valuesComments(t *testing.T) map[string]string {
	t.Helper()
	type frame struct {
		indent int
		key    string
	}
	var stack []frame
	var comment []string
	out := map[string]string{}
	for _, line := range strings.Split(mustReadFile(t, filepath.Join(chartDir, "values.yaml")), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			comment = append(comment, strings.TrimPrefix(trimmed, "#"))
			continue
		}
		m := valuesKey.FindStringSubmatch(line)
		if m == nil {
			comment = nil
			continue
		}
		indent := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, frame{indent, m[2]})
		var keys []string
		for _, f := range stack {
			keys = append(keys, f.key)
		}
		out[strings.Join(keys, ".")] = strings.Join(comment, "\n")
		comment = nil
	}
	return out
}

// namedIn reports whether comment names a property: as a word of its own (`successThreshold`,
// "successThreshold (...)"), not as part of a longer word.
func namedIn(comment, name string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`).MatchString(comment)
}

// schemaCheck walks values.yaml and the schema together and collects every disagreement.
type schemaCheck struct {
	t        *testing.T
	root     schemaNode
	comments map[string]string
	problems []string
}

func (c *schemaCheck) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// object checks the keys of values (at path, "" at the top) against the object schema n.
func (c *schemaCheck) object(path string, values map[string]any, n schemaNode) {
	props, _ := resolveRef(c.t, c.root, n)["properties"].(schemaNode)
	for _, k := range sortedKeys(values) {
		p, ok := props[k].(schemaNode)
		if !ok {
			c.problem("values.yaml has %s, the schema has no property for it", join(path, k))
			continue
		}
		c.value(join(path, k), values[k], p)
	}
	// What the schema takes below a key but values.yaml leaves out must be named in that key's
	// comment, so a user reading values.yaml (or the README made from it) learns it exists.
	for _, k := range sortedKeys(props) {
		if _, ok := values[k]; ok {
			continue
		}
		if path == "" || !namedIn(c.comments[path], k) {
			c.problem("the schema has %s, which values.yaml neither sets nor names in the comment above %s", join(path, k), orTop(path))
		}
	}
}

// value checks one key of values.yaml against its property schema n.
func (c *schemaCheck) value(path string, v any, n schemaNode) {
	resolved := resolveRef(c.t, c.root, n)
	if m, isMap := v.(map[string]any); isMap {
		if _, hasProps := resolved["properties"]; hasProps {
			c.object(path, m, n)
			return
		}
	}
	if types := jsonTypes(c.t, c.root, n); len(types) == 0 {
		c.problem("the schema of %s has no type", path)
	} else if got := typeOf(v); !typeAllowed(got, types) {
		c.problem("values.yaml %s is a %s, the schema allows %v", path, got, types)
	}
	def, ok := n["default"]
	if !ok {
		c.problem("the schema of %s has no default (values.yaml: %s)", path, mustJSON(c.t, v))
	} else if !reflect.DeepEqual(normalizeJSON(c.t, def), normalizeJSON(c.t, v)) {
		c.problem("the schema's default of %s is %s, values.yaml has %s", path, mustJSON(c.t, def), mustJSON(c.t, v))
	}
	// A list of objects (tenants): every property an item may have is named in the key's comment.
	if items, ok := resolved["items"].(schemaNode); ok {
		itemProps, _ := resolveRef(c.t, c.root, items)["properties"].(schemaNode)
		for _, k := range sortedKeys(itemProps) {
			if !namedIn(c.comments[path], k) {
				c.problem("the schema has %s[].%s, which the comment above %s does not name", path, k, path)
			}
		}
	}
}

func TestSchemaMatchesValuesYAML(t *testing.T) {
	var root schemaNode
	if err := json.Unmarshal([]byte(mustReadFile(t, filepath.Join(chartDir, "values.schema.json"))), &root); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	c := &schemaCheck{t: t, root: root, comments: valuesComments(t)}
	c.object("", valuesFile(t, "values.yaml"), root)
	for _, p := range c.problems {
		t.Error(p)
	}
}

// TestSchemaCheckFindsDrift feeds the check a schema and values that disagree in each way it
// looks for, so it cannot pass by checking nothing.
func TestSchemaCheckFindsDrift(t *testing.T) {
	schema := `{"definitions": {"str": {"type": "string"}}, "properties": {
	  "same":     {"type": "integer", "default": 1},
	  "wrongDef": {"type": "integer", "default": 2},
	  "noDef":    {"type": "string"},
	  "wrongTy":  {"type": "string", "default": 3},
	  "ref":      {"$ref": "#/definitions/str", "default": "x"},
	  "group":    {"type": "object", "properties": {"a": {"type": "boolean", "default": true}, "hidden": {"type": "string"}, "told": {"type": "string"}}},
	  "items":    {"type": "array", "default": [], "items": {"type": "object", "properties": {"name": {"type": "string"}, "secret": {"type": "string"}}}},
	  "extra":    {"type": "string"}
	}}`
	values := parseValues(t, "same: 1\nwrongDef: 1\nnoDef: a\nwrongTy: 3\nref: x\ngroup: {a: true}\nitems: []\nunknown: 1\n")
	comments := map[string]string{"group": " -- a group; `told` may be set too", "items": " -- each item has a `name`"}
	var root schemaNode
	if err := json.Unmarshal([]byte(schema), &root); err != nil {
		t.Fatal(err)
	}
	c := &schemaCheck{t: t, root: root, comments: comments}
	c.object("", values, root)
	want := []string{
		"the schema of noDef has no default",
		"the schema's default of wrongDef is 2, values.yaml has 1",
		"values.yaml wrongTy is a integer, the schema allows [string]",
		"the schema has group.hidden, which values.yaml neither sets nor names",
		"the schema has items[].secret, which the comment above items does not name",
		"values.yaml has unknown, the schema has no property for it",
		"the schema has extra, which values.yaml neither sets nor names",
	}
	for _, w := range want {
		if !slices.ContainsFunc(c.problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("no problem starting %q among %q", w, c.problems)
		}
	}
	if len(c.problems) != len(want) {
		t.Errorf("%d problems, want %d: %q", len(c.problems), len(want), c.problems)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "(the top level)"
	}
	return path
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// normalizeJSON round-trips v through JSON, so YAML's and JSON's decodings compare equal.
func normalizeJSON(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
