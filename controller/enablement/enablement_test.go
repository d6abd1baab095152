package enablement

import (
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	known := []Controller{{Name: "secretsync", OnDefault: true}, {Name: "at", OnDefault: true}, {Name: "podwatcher"}}
	cases := []struct {
		name    string
		words   []string
		want    []string
		wantErr string
	}{
		{name: "no words run nothing", words: nil, want: nil},
		{name: "a star runs the controllers that are on by default", words: []string{"*"}, want: []string{"at", "secretsync"}},
		{name: "a star and a name add an off-by-default controller", words: []string{"*", "podwatcher"}, want: []string{"at", "podwatcher", "secretsync"}},
		{name: "a minus removes a controller the star added", words: []string{"*", "-at"}, want: []string{"secretsync"}},
		{name: "the last word about a name wins", words: []string{"podwatcher", "-podwatcher", "podwatcher"}, want: []string{"podwatcher"}},
		{name: "a minus before the star is overridden by the star", words: []string{"-at", "*"}, want: []string{"at", "secretsync"}},
		{name: "blank words are ignored", words: []string{" ", "at "}, want: []string{"at"}},
		{name: "an unknown name is an error listing the known ones", words: []string{"*", "podwatch"}, wantErr: `unknown controller "podwatch" in --controllers (known: at, podwatcher, secretsync)`},
		{name: "an unknown name after a minus is an error too", words: []string{"-nope"}, wantErr: `unknown controller "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.words, known)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Resolve(%q) = %q, want %q", tc.words, got, tc.want)
			}
		})
	}
}
