package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
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
)

// The rate of reviews (TokenReviews and SubjectAccessReviews) the guard makes for requests it has
// no decision for, whatever unauthenticated clients send: ReviewBurst at once, then ReviewsPerSecond.
// A request over it is answered 429 without a review. Scrapers need a few reviews a minute (two
// per token and minute); re-reviews of decisions once allowed are not counted (knownTTL).
const (
	ReviewsPerSecond = 1
	ReviewBurst      = 10
)

// Reviews asks the API server who a token belongs to and whether that user may do verb on path.
type Reviews interface {
	// Authenticate returns the token's user, or authenticated false for a token the API server
	// does not accept.
	Authenticate(ctx context.Context, token string) (user authenticationv1.UserInfo, authenticated bool, err error)
	// Authorize says whether user may do verb on the non-resource URL path.
	Authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (allowed bool, err error)
}

// Guard answers a request with 401 (no token, or one the API server does not accept), 403 (a user
// not allowed the path and verb), 429 (no decision, and the review rate is spent), 500 (a review
// failed; not cached) or hands it on.
type Guard struct {
	reviews Reviews
	clock   cache.Clock
	// allowed and denied hold decisions by token digest, verb and path; failed holds the
	// digests of tokens the API server did not accept; known the keys once allowed.
	allowed, denied, failed, known *cache.LRUExpireCache
	limiter                        *rate.Limiter
}

// NewGuard returns a Guard that asks reviews, at most ReviewBurst at once and ReviewsPerSecond
// after, and remembers decisions by the clock.
func NewGuard(reviews Reviews, clock cache.Clock) *Guard {
	lru := func() *cache.LRUExpireCache { return cache.NewLRUExpireCacheWithClock(maxDecisions, clock) }
	return &Guard{
		reviews: reviews, clock: clock,
		allowed: lru(), denied: lru(), failed: lru(), known: lru(),
		limiter: rate.NewLimiter(ReviewsPerSecond, ReviewBurst),
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
	g := NewGuard(apiReviews{authn: authn.TokenReviews(), authz: authz.SubjectAccessReviews()}, realClock{})
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return g.Wrap(log, next), nil
	}, nil
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		code := g.decide(req)
		if code == http.StatusOK {
			next.ServeHTTP(w, req)
			return
		}
		switch code {
		case http.StatusInternalServerError:
			log.V(1).Info("metrics request could not be reviewed", "path", req.URL.Path)
		case http.StatusTooManyRequests:
			// A well-behaved client (Prometheus scrapes on its interval anyway) comes back later.
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, http.StatusText(code), code)
	})
}

// decide returns 200 for a request to let through, else the status to answer.
func (g *Guard) decide(req *http.Request) int {
	token, ok := bearer(req.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized
	}
	verb, path := strings.ToLower(req.Method), req.URL.Path
	// The token is a secret: only its digest is kept.
	sum := sha256.Sum256([]byte(token))
	digest := hex.EncodeToString(sum[:])
	key := digest + "\x00" + verb + "\x00" + path
	if _, ok := g.failed.Get(digest); ok {
		return http.StatusUnauthorized
	}
	if code, ok := g.allowed.Get(key); ok {
		return code.(int)
	}
	if code, ok := g.denied.Get(key); ok {
		return code.(int)
	}
	// Every review of a request without a decision is counted, so that made-up tokens (or one
	// token on made-up paths) cost the API server a bounded rate; a decision once allowed is
	// asked again outside the count, so a flood does not lock the scraper out.
	if _, known := g.known.Get(key); !known && !g.limiter.AllowN(g.clock.Now(), 1) {
		return http.StatusTooManyRequests
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	code, err := g.review(ctx, token, verb, path)
	if err != nil {
		return http.StatusInternalServerError
	}
	switch code {
	case http.StatusOK:
		g.allowed.Add(key, code, allowTTL)
		g.known.Add(key, true, knownTTL)
	case http.StatusUnauthorized:
		g.failed.Add(digest, true, failedTokenTTL)
	default:
		g.denied.Add(key, code, denyTTL)
	}
	return code
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

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
