package propagation

import (
	"maps"
	"slices"
	"testing"
)

func TestSelectKeys(t *testing.T) {
	data := map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "ca.crt": []byte("a")}
	for _, tc := range []struct {
		name        string
		keys        Keys
		want        map[string]string
		wantMissing []string
	}{
		{"no selection keeps everything", Keys{}, map[string]string{"tls.crt": "c", "tls.key": "k", "ca.crt": "a"}, nil},
		{"include", Keys{Include: []string{"ca.crt"}}, map[string]string{"ca.crt": "a"}, nil},
		{"exclude", Keys{Exclude: []string{"tls.key"}}, map[string]string{"tls.crt": "c", "ca.crt": "a"}, nil},
		{"include then exclude", Keys{Include: []string{"ca.crt", "tls.key"}, Exclude: []string{"tls.key"}}, map[string]string{"ca.crt": "a"}, nil},
		{"rename", Keys{Include: []string{"ca.crt"}, Rename: map[string]string{"ca.crt": "ca-bundle.crt"}}, map[string]string{"ca-bundle.crt": "a"}, nil},
		{"a rename wins a clash with a kept key", Keys{Rename: map[string]string{"ca.crt": "tls.crt"}}, map[string]string{"tls.crt": "a", "tls.key": "k"}, nil},
		{"an excluded key is not renamed in", Keys{Exclude: []string{"ca.crt"}, Rename: map[string]string{"ca.crt": "x"}}, map[string]string{"tls.crt": "c", "tls.key": "k"}, nil},
		{"missing include and rename keys are reported, the rest copied", Keys{Include: []string{"ca.crt", "nope"}, Rename: map[string]string{"gone": "x"}},
			map[string]string{"ca.crt": "a"}, []string{"gone", "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := SelectKeys(data, tc.keys)
			gs := map[string]string{}
			for k, v := range got {
				gs[k] = string(v)
			}
			if !maps.Equal(gs, tc.want) || !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("SelectKeys = %v, missing %v; want %v, %v", gs, missing, tc.want, tc.wantMissing)
			}
		})
	}
}
