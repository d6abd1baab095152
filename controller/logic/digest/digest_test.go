package digest

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"the empty value has SHA-256's empty digest", "", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"a value has its SHA-256 in hex, prefixed", "abc", "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Of([]byte(c.in)); got != c.want {
				t.Errorf("Of(%q) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}
