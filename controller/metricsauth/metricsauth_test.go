package metricsauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviews knows tokens by user name and which users may get which path; it counts reviews.
type fakeReviews struct {
	users   map[string]string // token -> user name
	allowed map[string]string // user name -> path allowed for get
	fail    error
	authn   int
	authz   int
}

func (f *fakeReviews) Authenticate(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	f.authn++
	if f.fail != nil {
		return authenticationv1.UserInfo{}, false, f.fail
	}
	name, ok := f.users[token]
	return authenticationv1.UserInfo{Username: name}, ok, nil
}

func (f *fakeReviews) Authorize(_ context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	f.authz++
	return verb == "get" && f.allowed[user.Username] == path, nil
}

func newFake() *fakeReviews {
	return &fakeReviews{
		users:   map[string]string{"scraper-token": "scraper", "nobody-token": "nobody"},
		allowed: map[string]string{"scraper": "/metrics"},
	}
}

func serve(t *testing.T, g *Guard, method, path, authorization string) int {
	t.Helper()
	h := g.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestGuardAnswers(t *testing.T) {
	cases := []struct {
		name          string
		method, path  string
		authorization string
		want          int
		wantReviews   int
	}{
		{name: "no Authorization header is 401 without asking the API server", method: "GET", path: "/metrics", want: 401},
		{name: "a Basic header is 401 without asking", method: "GET", path: "/metrics", authorization: "Basic c2NyYXBlcjp4", want: 401},
		{name: "an empty bearer token is 401 without asking", method: "GET", path: "/metrics", authorization: "Bearer ", want: 401},
		{name: "a token the API server does not accept is 401", method: "GET", path: "/metrics", authorization: "Bearer made-up", want: 401, wantReviews: 1},
		{name: "a user without the role is 403", method: "GET", path: "/metrics", authorization: "Bearer nobody-token", want: 403, wantReviews: 2},
		{name: "the scraper may get /metrics", method: "GET", path: "/metrics", authorization: "Bearer scraper-token", want: 200, wantReviews: 2},
		{name: "the scheme is case-insensitive", method: "GET", path: "/metrics", authorization: "bearer scraper-token", want: 200, wantReviews: 2},
		{name: "the scraper may not get another path", method: "GET", path: "/debug", authorization: "Bearer scraper-token", want: 403, wantReviews: 2},
		{name: "the verb is the lower-case method: POST is not get", method: "POST", path: "/metrics", authorization: "Bearer scraper-token", want: 403, wantReviews: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			g := NewGuard(f, clocktesting.NewFakeClock(time.Unix(0, 0)))
			if got := serve(t, g, tc.method, tc.path, tc.authorization); got != tc.want {
				t.Errorf("code = %d, want %d", got, tc.want)
			}
			if f.authn+f.authz != tc.wantReviews {
				t.Errorf("reviews = %d authn + %d authz, want %d in all", f.authn, f.authz, tc.wantReviews)
			}
		})
	}
}

// A scraper every few seconds must not cost two reviews per scrape, and a revoked binding or a
// new one must take effect within the cache's time.
func TestGuardRemembersDecisionsForAShortTime(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	for i := 0; i < 5; i++ {
		if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
			t.Fatalf("scrape %d: %d", i, got)
		}
		if got := serve(t, g, "GET", "/metrics", "Bearer nobody-token"); got != 403 {
			t.Fatalf("refused scrape %d: %d", i, got)
		}
	}
	if f.authn != 2 || f.authz != 2 {
		t.Fatalf("reviews after 10 requests by 2 tokens = %d/%d, want 2/2", f.authn, f.authz)
	}

	// nobody is granted the role; scraper loses it. The refusal is asked again after 30 s, the
	// grant after a minute.
	f.allowed = map[string]string{"nobody": "/metrics"}
	clock.Step(denyTTL + time.Second)
	if got := serve(t, g, "GET", "/metrics", "Bearer nobody-token"); got != 200 {
		t.Errorf("a user granted the role 31 s ago: %d, want 200", got)
	}
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
		t.Errorf("within the minute the grant is still remembered: %d, want 200", got)
	}
	clock.Step(allowTTL)
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 403 {
		t.Errorf("a user whose role went away over a minute ago: %d, want 403", got)
	}
}

// An API server that cannot answer is a 500, and the failure is not remembered: the next scrape
// asks again and gets through once the API server is back.
func TestGuardDoesNotRememberFailedReviews(t *testing.T) {
	f := newFake()
	f.fail = errors.New("connection refused")
	g := NewGuard(f, clocktesting.NewFakeClock(time.Unix(0, 0)))
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 500 {
		t.Fatalf("review failed: %d, want 500", got)
	}
	f.fail = nil
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
		t.Errorf("after the API server came back: %d, want 200", got)
	}
}

// A flood of made-up tokens does not grow the cache past its bound.
func TestGuardCacheIsBounded(t *testing.T) {
	f := newFake()
	g := NewGuard(f, clocktesting.NewFakeClock(time.Unix(0, 0)))
	for i := 0; i < 3*maxDecisions; i++ {
		serve(t, g, "GET", "/metrics", "Bearer made-up-"+string(rune('a'+i%26))+time.Duration(i).String())
	}
	if n := len(g.decisions.Keys()); n > maxDecisions {
		t.Errorf("cache holds %d decisions, want at most %d", n, maxDecisions)
	}
}
