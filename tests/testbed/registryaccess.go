package testbed

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// RegistryAccount is an account of the test bed's registry with what it may do, as a Harbor robot
// account's permissions: pull from, and push to, projects (the first element of a repository
// name, "platform" in platform/manager; "*" for every project). Push implies pull.
type RegistryAccount struct {
	User     string `json:"user"`
	Password string `json:"password,omitempty"`
	// Hash is the bcrypt hash of Password, what the access proxy keeps on disk.
	Hash string   `json:"hash,omitempty"`
	Pull []string `json:"pull,omitempty"`
	Push []string `json:"push,omitempty"`
}

// As returns r with the credentials of account a, e.g. for a's DockerConfigJSON.
func (r Registry) As(a RegistryAccount) Registry {
	r.User, r.Password = a.User, a.Password
	return r
}

// repositoryPath matches the registry API's paths that name a repository:
// /v2/<name>/manifests/<ref>, /v2/<name>/blobs/<digest>, /v2/<name>/blobs/uploads/..., /v2/<name>/tags/list.
var repositoryPath = regexp.MustCompile(`^/v2/(.+?)/(manifests|blobs|tags)(/|$)`)

// mayUse reports whether a project list grants repository.
func mayUse(projects []string, repository string) bool {
	project, _, _ := strings.Cut(repository, "/")
	for _, p := range projects {
		if p == "*" || p == project {
			return true
		}
	}
	return false
}

// RegistryAccess decides whether account a may send method to the registry API at path with
// query: any account may ask /v2/ (the client's first request); reading (GET, HEAD) a repository
// needs pull on its project, everything else push; mounting a blob from another repository also
// needs pull there; the catalog only for an account that may pull everything. It returns "" when
// allowed, else why not.
func RegistryAccess(a RegistryAccount, method, path string, query url.Values) string {
	if path == "/v2/" || path == "/v2" {
		return ""
	}
	if path == "/v2/_catalog" {
		if mayUse(a.Pull, "*") || mayUse(a.Push, "*") {
			return ""
		}
		return fmt.Sprintf("%s may not list the catalog", a.User)
	}
	m := repositoryPath.FindStringSubmatch(path)
	if m == nil {
		return fmt.Sprintf("%s: %s is not a path of the registry API this test bed serves", a.User, path)
	}
	repository := m[1]
	read := method == http.MethodGet || method == http.MethodHead
	if read {
		if mayUse(a.Pull, repository) || mayUse(a.Push, repository) {
			return ""
		}
		return fmt.Sprintf("%s may not pull %s", a.User, repository)
	}
	if !mayUse(a.Push, repository) {
		return fmt.Sprintf("%s may not push to %s", a.User, repository)
	}
	if from := query.Get("from"); from != "" && !mayUse(a.Pull, from) && !mayUse(a.Push, from) {
		return fmt.Sprintf("%s may not mount a blob from %s", a.User, from)
	}
	return ""
}

// RegistryAccessProxy is the access control in front of the test bed's registry: Basic
// authentication against accounts (bcrypt hashes), then RegistryAccess, then the request
// forwarded as it came (its Host kept, so the registry's Location headers point back here).
type RegistryAccessProxy struct {
	accounts map[string]RegistryAccount
	proxy    *httputil.ReverseProxy
	// verified remembers user+sha256(password) pairs bcrypt accepted: a pull makes a request per
	// blob, and bcrypt costs tens of milliseconds each.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]bool
}

// NewRegistryAccessProxy forwards what accounts may do to the registry at upstream.
func NewRegistryAccessProxy(upstream *url.URL, accounts []RegistryAccount) *RegistryAccessProxy {
	p := &RegistryAccessProxy{accounts: map[string]RegistryAccount{}, proxy: httputil.NewSingleHostReverseProxy(upstream),
		verified: map[[sha256.Size]byte]bool{}}
	for _, a := range accounts {
		p.accounts[a.User] = a
	}
	return p
}

func (p *RegistryAccessProxy) authenticate(r *http.Request) (RegistryAccount, bool) {
	user, password, ok := r.BasicAuth()
	if !ok {
		return RegistryAccount{}, false
	}
	a, known := p.accounts[user]
	if !known {
		return RegistryAccount{}, false
	}
	key := sha256.Sum256([]byte(user + "\x00" + password))
	p.mu.Lock()
	ok = p.verified[key]
	p.mu.Unlock()
	if ok {
		return a, true
	}
	if bcrypt.CompareHashAndPassword([]byte(a.Hash), []byte(password)) != nil {
		return RegistryAccount{}, false
	}
	p.mu.Lock()
	p.verified[key] = true
	p.mu.Unlock()
	return a, true
}

// registryError writes the registry API's error body.
func registryError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	w.WriteHeader(status)
	type apiError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.NewEncoder(w).Encode(struct {
		Errors []apiError `json:"errors"`
	}{[]apiError{{code, message}}}); err != nil {
		// The client went away; its request is refused either way.
		fmt.Fprintln(os.Stderr, "registry proxy: writing an error response:", err)
	}
}

func (p *RegistryAccessProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := p.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="platform-operators-testbed"`)
		registryError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return
	}
	if why := RegistryAccess(a, r.Method, r.URL.Path, r.URL.Query()); why != "" {
		registryError(w, http.StatusForbidden, "DENIED", why)
		return
	}
	r.Header.Del("Authorization")
	p.proxy.ServeHTTP(w, r)
}

// proxyConfig is what `testbed registry-proxy --dir DIR` reads from DIR/access.json.
type proxyConfig struct {
	Listen   string            `json:"listen"`
	Upstream string            `json:"upstream"`
	Accounts []RegistryAccount `json:"accounts"`
}

// ServeRegistryProxy runs the access proxy described by dir/access.json until the process is
// stopped: the body of `testbed registry-proxy`, which Registry.Start runs detached.
func ServeRegistryProxy(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "access.json"))
	if err != nil {
		return err
	}
	var cfg proxyConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "access.json"), err)
	}
	upstream, err := url.Parse(cfg.Upstream)
	if err != nil {
		return err
	}
	return http.ListenAndServe(cfg.Listen, NewRegistryAccessProxy(upstream, cfg.Accounts)) //nolint:gosec // a test bed's registry, plain HTTP as the registry behind it
}

// writeProxyConfig writes dir/access.json with bcrypt hashes of the accounts' passwords (not the
// passwords).
func writeProxyConfig(dir, listen, upstream string, accounts []RegistryAccount) error {
	cfg := proxyConfig{Listen: listen, Upstream: upstream}
	for _, a := range accounts {
		hash, err := bcrypt.GenerateFromPassword([]byte(a.Password), bcrypt.DefaultCost)
		if err != nil {
			return err
		}
		a.Hash, a.Password = string(hash), ""
		cfg.Accounts = append(cfg.Accounts, a)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "access.json"), b, 0o600)
}
