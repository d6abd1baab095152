package faultproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		mode    Mode
		isWatch bool
		roll    float64
		want    Action
	}{
		{"pass forwards everything", Mode{Kind: Pass}, false, 0, Action{}},
		{"429 rejects a request whose roll is under the fraction", Mode{Kind: TooMany, Fraction: 0.5}, false, 0.2, Action{Reject: true}},
		{"429 forwards a request whose roll is over the fraction", Mode{Kind: TooMany, Fraction: 0.5}, false, 0.7, Action{}},
		{"429 never rejects a watch", Mode{Kind: TooMany, Fraction: 1}, true, 0, Action{}},
		{"latency delays every request", Mode{Kind: Slow, Latency: time.Second}, true, 0.9, Action{Delay: time.Second}},
		{"stall holds every request", Mode{Kind: Stall}, false, 0.9, Action{Hold: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Decide(c.mode, c.isWatch, c.roll); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestIsWatch(t *testing.T) {
	cases := map[string]bool{
		"/api/v1/namespaces/a/secrets?watch=true":          true,
		"/api/v1/watch/namespaces/a/secrets":               true,
		"/apis/batch/v1/jobs?limit=500":                    false,
		"/apis/coordination.k8s.io/v1/namespaces/x/leases": false,
	}
	for u, want := range cases {
		if got := IsWatch(httptest.NewRequest(http.MethodGet, u, nil)); got != want {
			t.Errorf("%s: got %v, want %v", u, got, want)
		}
	}
}
