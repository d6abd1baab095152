package propagation

import (
	"slices"
	"sort"
)

// Keys chooses which keys of a source's data a copy holds, and under which names.
type Keys struct {
	// Include, when not empty, keeps only these keys; Exclude drops these (after Include).
	Include, Exclude []string
	// Rename maps a kept key to the name it has in the copy. A renamed key that lands on another
	// kept key replaces it.
	// store: configuration; paid by the admin's spec (bounded by the CRD).
	Rename map[string]string
}

// IsZero reports whether k keeps every key under its own name.
func (k Keys) IsZero() bool { return len(k.Include)+len(k.Exclude)+len(k.Rename) == 0 }

// SelectKeys returns the data a copy holds under k, and the Include and Rename keys the source
// does not have (sorted): those are reported, the rest is still copied.
func SelectKeys(data map[string][]byte, k Keys) (map[string][]byte, []string) {
	if k.IsZero() {
		return data, nil
	}
	var missing []string
	keep := map[string]bool{}
	if len(k.Include) > 0 {
		for _, key := range k.Include {
			if _, ok := data[key]; ok {
				keep[key] = true
			} else {
				missing = append(missing, key)
			}
		}
	} else {
		for key := range data {
			keep[key] = true
		}
	}
	for _, key := range k.Exclude {
		delete(keep, key)
	}
	for from := range k.Rename {
		if _, ok := data[from]; !ok && !slices.Contains(missing, from) {
			missing = append(missing, from)
		}
	}
	out := make(map[string][]byte, len(keep))
	for key := range keep {
		if _, renamed := k.Rename[key]; !renamed {
			out[key] = data[key]
		}
	}
	for from, to := range k.Rename { // after the plain keys: a rename wins a clash
		if keep[from] {
			out[to] = data[from]
		}
	}
	sort.Strings(missing)
	return out, missing
}
