package enablement

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Controller is one controller the manager knows, and whether "*" includes it.
type Controller struct {
	Name      string
	OnDefault bool
}

// Resolve returns the names of the controllers to run, sorted, for the given flag words. An
// unknown name is an error that lists the known ones, so a typo never silently disables a
// controller.
func Resolve(words []string, known []Controller) ([]string, error) {
	on := map[string]bool{}
	for _, raw := range words {
		w := strings.TrimSpace(raw)
		switch w {
		case "":
			continue
		case "*":
			for _, c := range known {
				if c.OnDefault {
					on[c.Name] = true
				}
			}
		default:
			name, disable := strings.CutPrefix(w, "-")
			if !slices.ContainsFunc(known, func(c Controller) bool { return c.Name == name }) {
				return nil, fmt.Errorf("unknown controller %q in --controllers (known: %s)", name, Names(known))
			}
			on[name] = !disable
		}
	}
	maps.DeleteFunc(on, func(_ string, enabled bool) bool { return !enabled })
	return slices.Sorted(maps.Keys(on)), nil
}

// Names lists the known controllers' names, sorted, for messages and --help.
func Names(known []Controller) string {
	out := make([]string, 0, len(known))
	for _, c := range known {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
