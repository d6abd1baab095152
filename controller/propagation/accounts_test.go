package propagation

import (
	"slices"
	"strings"
	"testing"
)

func TestPullSecretAccounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     []string
		any, all bool
		selected []string
		not      []string
	}{
		{name: "no list selects none", not: []string{"default", "builder"}},
		{name: "names select those names only", spec: []string{"default", "builder"}, any: true,
			selected: []string{"default", "builder"}, not: []string{"deployer", "*-x"}},
		{name: "a star selects every ServiceAccount", spec: []string{"*"}, any: true, all: true,
			selected: []string{"default", "builder", "created-later"}},
		{name: "a star beside names (admission refuses it) still selects every one", spec: []string{"default", "*"}, any: true, all: true,
			selected: []string{"default", "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := AccountsFor(tc.spec)
			if a.Any() != tc.any || a.All() != tc.all {
				t.Errorf("Any, All = %v, %v, want %v, %v", a.Any(), a.All(), tc.any, tc.all)
			}
			for _, n := range tc.selected {
				if !a.Selects(n) {
					t.Errorf("%q not selected", n)
				}
			}
			for _, n := range tc.not {
				if a.Selects(n) {
					t.Errorf("%q selected", n)
				}
			}
		})
	}
	if (PullSecretAccounts{}).Any() {
		t.Error("the zero value selects something")
	}
}

func TestPerNamespace(t *testing.T) {
	ns := func(s string) string { n, _, _ := strings.Cut(s, "/"); return n }
	for _, tc := range []struct {
		name  string
		items []string
		limit int
		now   []string
		later []string
	}{
		{name: "nothing to do", limit: 2},
		{name: "under the limit everything goes now", items: []string{"a/1", "b/1", "a/2"}, limit: 2,
			now: []string{"a/1", "b/1", "a/2"}},
		{name: "a namespace past the limit keeps its first items and is left for later", items: []string{"a/1", "a/2", "b/1", "a/3", "a/4", "c/1"}, limit: 2,
			now: []string{"a/1", "a/2", "b/1", "c/1"}, later: []string{"a"}},
		{name: "several namespaces left are sorted", items: []string{"z/1", "z/2", "a/1", "a/2"}, limit: 1,
			now: []string{"z/1", "a/1"}, later: []string{"a", "z"}},
		{name: "no limit takes everything", items: []string{"a/1", "a/2", "a/3"}, limit: 0,
			now: []string{"a/1", "a/2", "a/3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now, later := PerNamespace(tc.items, ns, tc.limit)
			if !slices.Equal(now, tc.now) || !slices.Equal(later, tc.later) {
				t.Errorf("now %v later %v, want %v and %v", now, later, tc.now, tc.later)
			}
		})
	}
}

// All reports whether every ServiceAccount is selected.
func (a PullSecretAccounts) All() bool { return a.all }
