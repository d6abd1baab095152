package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a decision is reused. The same as controller-runtime's filter (k8s.io/apiserver's
// delegating authenticator and authorizer): a revoked token or role binding stops working within
// a minute; a refused caller is asked again after 30 s, so a binding just created takes effect
// soon.
const (
	allowTTL = time.Minute
	denyTTL  = 30 * time.Second
	// failedTokenTTL is how long a token the API server did not accept is answered 401 without
	// asking again, whatever the path: a token does not become valid later (a new one is made).
	failedTokenTTL = 5 * time.Minute
	// knownTTL is how long a decision once allowed is re-reviewed outside the rate limit when its
	// allowTTL ends: a scraper's token (rotated hourly) keeps its scrapes through a flood.
	knownTTL = time.Hour
	// reviewTimeout bounds one review; a scrape waiting longer is better answered 500.
	reviewTimeout = 10 * time.Second
	// maxDecisions bounds each cache: a flood of made-up tokens evicts the oldest, never grows it.
	// Allowed and refused decisions are kept apart, so a flood cannot evict a scraper's.
	maxDecisions = 1024
	// maxSources bounds the review budgets kept per source address.
	maxSources = 1024
	// sourceTTL is how long an idle source's budget is kept: by then it has refilled
	// (ReviewBurst/ReviewsPerSecond seconds), so dropping it loses nothing.
	sourceTTL = ReviewBurst / ReviewsPerSecond * time.Second
)

// What a request may bring before anything is spent on it: a method other than GET and HEAD is
// answered 405, a path longer than MaxPathBytes 414, a token longer than MaxTokenBytes 401, each
// before any review and without being remembered. (Go's server takes a method, a path and a
// header of up to 1 MiB each.) A service account token is about 1 KiB; an OIDC token with its
// groups a few.
const (
	MaxPathBytes  = 1024
	MaxTokenBytes = 16 << 10
)

// The budgets of reviews (TokenReviews and SubjectAccessReviews) the guard makes for requests it
// has no decision for, whatever unauthenticated clients send. Each source address has its own
// bucket, ReviewBurst at once then ReviewsPerSecond, so a flood from one pod spends its own and
// not another's (a rotated scraper token is reviewed during a flood from elsewhere); all sources
// together share GlobalReviewBurst then GlobalReviewsPerSecond, which bounds what the API server
// is asked. A request over either is answered 429 without a review. Scrapers need a few reviews a
// minute (two per token and minute); re-reviews of decisions once allowed are counted in neither
// (knownTTL).
const (
	ReviewsPerSecond       = 1
	ReviewBurst            = 10
	GlobalReviewsPerSecond = 5
	GlobalReviewBurst      = 50
)

// MaxBytes bounds the memory the guard keeps, whatever clients send: four decision caches of
// maxDecisions fixed-size entries and maxSources budgets (an entry and a rate.Limiter each).
// The requests' senders pay for nothing else: what a request brings is dropped with it.
const MaxBytes = 4*maxDecisions*entryBytes + maxSources*(entryBytes+limiterBytes)

// limiterBytes is a rate.Limiter on the heap, rounded up.
const limiterBytes = 128

// Reviews asks the API server who a token belongs to and whether that user may do verb on path.
type Reviews interface {
	// Authenticate returns the token's user, or authenticated false for a token the API server
	// does not accept.
	Authenticate(ctx context.Context, token string) (user authenticationv1.UserInfo, authenticated bool, err error)
	// Authorize says whether user may do verb on the non-resource URL path.
	Authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (allowed bool, err error)
}

// Guard answers a request with 405 (a method but GET and HEAD), 414 (a path too long), 401 (no
// token, one too long, or one the API server does not accept), 403 (a user not allowed the path
// and verb), 429 (no decision, and the review budget is spent), 500 (a review failed; not
// cached) or hands it on.
type Guard struct {
	reviews Reviews
	clock   cache.Clock
	// allowed and denied hold decisions by the digest of token, verb and path; failed holds the
	// digests of tokens the API server did not accept; known the keys once allowed.
	// store: with sources, metricsauth.MaxBytes bytes (1.4 MiB) in all, fixed-size keys; paid by
	// any client of the metrics port, bounded whatever it sends.
	allowed, denied, failed, known *ttlCache[[sha256.Size]byte, int]
	// sources holds each source address's review budget.
	// store: maxSources × (entryBytes+limiterBytes) bytes, counted in MaxBytes; paid by the port's
	// clients, one entry per source address.
	sources *ttlCache[netip.Addr, *rate.Limiter]
	// store: limiterBytes bytes; paid by nobody outside.
	global *rate.Limiter
}

// NewGuard returns a Guard that asks reviews within its budgets and remembers decisions by the
// clock.
func NewGuard(reviews Reviews, clock cache.Clock) *Guard {
	decisions := func(ttl time.Duration) *ttlCache[[sha256.Size]byte, int] {
		return newTTLCache[[sha256.Size]byte, int](maxDecisions, ttl)
	}
	return &Guard{
		reviews: reviews, clock: clock,
		allowed: decisions(allowTTL), denied: decisions(denyTTL), failed: decisions(failedTokenTTL), known: decisions(knownTTL),
		sources: newTTLCache[netip.Addr, *rate.Limiter](maxSources, sourceTTL),
		global:  rate.NewLimiter(GlobalReviewsPerSecond, GlobalReviewBurst),
	}
}

// Filter is a controller-runtime metrics server filter (metricsserver.Options.FilterProvider)
// that checks every request with a TokenReview and a SubjectAccessReview made through cfg.
func Filter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	g := NewGuard(apiReviews{authn: authn.TokenReviews(), authz: authz.SubjectAccessReviews()}, clock.RealClock{})
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return g.Wrap(log, next), nil
	}, nil
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		code := g.decide(req)
		switch code {
		case http.StatusOK:
			next.ServeHTTP(w, req)
			return
		case http.StatusInternalServerError:
			log.V(1).Info("metrics request could not be reviewed", "pathBytes", len(req.URL.Path))
		case http.StatusTooManyRequests:
			// A well-behaved client (Prometheus scrapes on its interval anyway) comes back later.
			w.Header().Set("Retry-After", "1")
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", "GET, HEAD")
		}
		http.Error(w, http.StatusText(code), code)
	})
}

// decide returns 200 for a request to let through, else the status to answer.
func (g *Guard) decide(req *http.Request) int {
	// Refused before anything is spent or kept: the API server would see the method as the verb
	// of a SubjectAccessReview, and a metrics endpoint serves GET and HEAD only.
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return http.StatusMethodNotAllowed
	}
	path := req.URL.Path
	if len(path) > MaxPathBytes {
		return http.StatusRequestURITooLong
	}
	token, ok := bearer(req.Header.Get("Authorization"))
	if !ok || len(token) > MaxTokenBytes {
		return http.StatusUnauthorized
	}
	// The API server authorizes HEAD as get on a non-resource URL; so does the guard.
	const verb = "get"
	// The token is a secret: only its digest is kept; the key is a digest too, of fixed size.
	digest := sha256.Sum256([]byte(token))
	key := decisionKey(digest, verb, path)
	now := g.clock.Now()
	if _, ok := g.failed.get(digest, now); ok {
		return http.StatusUnauthorized
	}
	if code, ok := g.allowed.get(key, now); ok {
		return code
	}
	if code, ok := g.denied.get(key, now); ok {
		return code
	}
	// Every review of a request without a decision is counted, against its source's budget and
	// the global one, so that made-up tokens (or one token on made-up paths) cost the API server a
	// bounded rate and one client's flood does not spend another's; a decision once allowed is
	// asked again outside both, so a flood does not lock the scraper out.
	if _, known := g.known.get(key, now); !known && !g.spend(sourceOf(req), now) {
		return http.StatusTooManyRequests
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	code, err := g.review(ctx, token, verb, path)
	if err != nil {
		return http.StatusInternalServerError
	}
	now = g.clock.Now()
	switch code {
	case http.StatusOK:
		g.allowed.add(key, code, now)
		g.known.add(key, code, now)
	case http.StatusUnauthorized:
		g.failed.add(digest, code, now)
	default:
		g.denied.add(key, code, now)
	}
	return code
}

// spend takes one review from the source's budget and the global one, or none when either is
// spent.
func (g *Guard) spend(src netip.Addr, now time.Time) bool {
	lim, ok := g.sources.get(src, now)
	if !ok {
		lim = rate.NewLimiter(ReviewsPerSecond, ReviewBurst)
	}
	// Kept (and its time renewed) on every request, spent or not: a source that keeps asking
	// keeps its empty bucket.
	g.sources.add(src, lim, now)
	r := lim.ReserveN(now, 1)
	// The global budget is asked only once the source's allows; either refusing, no review is made.
	if !r.OK() || r.DelayFrom(now) > 0 || !g.global.AllowN(now, 1) {
		r.CancelAt(now)
		return false
	}
	return true
}

// decisionKey is the fixed-size key of a decision: the digest of the token's digest, the verb and
// the path.
func decisionKey(digest [sha256.Size]byte, verb, path string) [sha256.Size]byte {
	return sha256.Sum256(slices.Concat(digest[:], []byte{0}, []byte(verb), []byte{0}, []byte(path)))
}

// sourceOf is the request's source address (the zero Addr, one shared budget, when the server
// did not record a parseable one).
func sourceOf(req *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func (g *Guard) review(ctx context.Context, token, verb, path string) (int, error) {
	user, authenticated, err := g.reviews.Authenticate(ctx, token)
	if err != nil {
		return 0, err
	}
	if !authenticated {
		return http.StatusUnauthorized, nil
	}
	allowed, err := g.reviews.Authorize(ctx, user, verb, path)
	if err != nil {
		return 0, err
	}
	if !allowed {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// apiReviews makes the reviews through the API server.
type apiReviews struct {
	authn authenticationclient.TokenReviewInterface
	authz authorizationclient.SubjectAccessReviewInterface
}

func (r apiReviews) Authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	tr, err := r.authn.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, err
	}
	// Status.Error says why a token was not accepted ("invalid bearer token"): a 401, not an
	// outage, so it is not returned as an error (controller-runtime's filter answers 500).
	return tr.Status.User, tr.Status.Authenticated, nil
}

func (r apiReviews) Authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := r.authz.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
