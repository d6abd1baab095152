package testbed

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// TestMain lets the test binary play `testbed registry-proxy`: Registry.Start runs the access proxy
// detached as ProxyCommand, which the round trip below points at this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "registry-proxy" {
		fs := flag.NewFlagSet("registry-proxy", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		_ = fs.Parse(os.Args[2:])
		fmt.Fprintln(os.Stderr, ServeRegistryProxy(*dir))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// The accounts of `make up` (tests/testbed/cmd/testbed): CI pushes, the manager's and the tenants'
// robots pull one project each.
var (
	ciAccount      = RegistryAccount{User: "robot$platform+ci", Password: "ci-s3cret", Push: []string{"*"}}
	managerAccount = RegistryAccount{User: "robot$platform+manager-pull", Password: "manager-s3cret", Pull: []string{"platform"}}
	tenantsAccount = RegistryAccount{User: "robot$tenants+pull", Password: "tenants-s3cret", Pull: []string{"tenants"}}
)

func TestRegistryAccess(t *testing.T) {
	none := url.Values{}
	cases := []struct {
		name          string
		account       RegistryAccount
		method, path  string
		query         url.Values
		wantAllowed   bool
		wantReasonHas string
	}{
		{"any account may ask /v2/", tenantsAccount, "GET", "/v2/", none, true, ""},
		{"the manager's robot pulls the manager image's manifest", managerAccount, "GET", "/v2/platform/manager/manifests/dev", none, true, ""},
		{"the manager's robot heads a blob of it", managerAccount, "HEAD", "/v2/platform/manager/blobs/sha256:abc", none, true, ""},
		{"the manager's robot cannot pull the tenants' images", managerAccount, "GET", "/v2/tenants/busybox/manifests/1.35", none, false, "may not pull tenants/busybox"},
		{"the manager's robot cannot push", managerAccount, "POST", "/v2/platform/manager/blobs/uploads/", none, false, "may not push"},
		{"the manager's robot cannot overwrite a tag", managerAccount, "PUT", "/v2/platform/manager/manifests/dev", none, false, "may not push"},
		{"the tenants' robot pulls the job image", tenantsAccount, "GET", "/v2/tenants/busybox/blobs/sha256:abc", none, true, ""},
		{"the tenants' robot cannot pull the manager image", tenantsAccount, "GET", "/v2/platform/manager/manifests/dev", none, false, "may not pull platform/manager"},
		{"the tenants' robot cannot replace the job image", tenantsAccount, "PUT", "/v2/tenants/busybox/manifests/1.35", none, false, "may not push to tenants/busybox"},
		{"the tenants' robot cannot delete it", tenantsAccount, "DELETE", "/v2/tenants/busybox/manifests/sha256:abc", none, false, "may not push"},
		{"the tenants' robot cannot list the catalog", tenantsAccount, "GET", "/v2/_catalog", none, false, "catalog"},
		{"a project named like an API word is still a project", tenantsAccount, "GET", "/v2/platform/blobs/manifests/x", none, false, "may not pull platform"},
		{"CI pushes anywhere", ciAccount, "PATCH", "/v2/tenants/busybox/blobs/uploads/1234", none, true, ""},
		{"CI may mount a blob across projects", ciAccount, "POST", "/v2/tenants/busybox/blobs/uploads/", url.Values{"mount": {"sha256:abc"}, "from": {"platform/manager"}}, true, ""},
		{"a push account cannot mount from a project it cannot read", RegistryAccount{User: "p", Push: []string{"tenants"}}, "POST", "/v2/tenants/x/blobs/uploads/", url.Values{"mount": {"sha256:abc"}, "from": {"platform/manager"}}, false, "mount"},
		{"a path outside the API is refused", ciAccount, "GET", "/debug/vars", none, false, "not a path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why := RegistryAccess(tc.account, tc.method, tc.path, tc.query)
			if (why == "") != tc.wantAllowed || !strings.Contains(why, tc.wantReasonHas) {
				t.Errorf("RegistryAccess = %q, want allowed=%v (reason with %q)", why, tc.wantAllowed, tc.wantReasonHas)
			}
		})
	}
}

// freePortPair returns a loopback port p that is free with p+10000 free too (the registry behind
// the proxy listens there).
func freePortPair(t *testing.T) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if p+10000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000)); err == nil {
			_ = l2.Close()
			return p
		}
	}
	t.Fatal("no free port pair")
	return 0
}

// TestRegistryAccountsOnARealRegistry starts Debian's docker-registry behind the access proxy, as
// `make up` does (Registry.Start with Accounts, the proxy detached), pushes as CI and pulls and
// pushes as each robot through go-containerregistry, as containerd and `make image-push` would.
func TestRegistryAccountsOnARealRegistry(t *testing.T) {
	if _, err := os.Stat(RegistryBinary); err != nil {
		t.Fatalf("%s: %v (scripts/host.sh packages installs docker-registry)", RegistryBinary, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := Registry{Dir: t.TempDir(), Host: "127.0.0.1", Port: freePortPair(t), User: ciAccount.User, Password: ciAccount.Password,
		Accounts: []RegistryAccount{managerAccount, tenantsAccount}, ProxyCommand: []string{os.Args[0], "registry-proxy"}}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Stop(); err != nil {
			t.Error(err)
		}
	})
	as := func(a RegistryAccount) remote.Option {
		return remote.WithAuth(&authn.Basic{Username: a.User, Password: a.Password})
	}
	ref := func(s string) name.Reference {
		r, err := name.ParseReference(reg.Addr()+"/"+s, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"platform/manager:dev", "tenants/busybox:1.35"} {
		if err := remote.Write(ref(r), img, remote.WithContext(ctx), as(ciAccount)); err != nil {
			t.Fatalf("CI pushes %s: %v", r, err)
		}
	}
	// pull fetches the manifest and every layer, as a node pulling the image does.
	pull := func(a RegistryAccount, r string) error {
		got, err := remote.Image(ref(r), remote.WithContext(ctx), as(a))
		if err != nil {
			return err
		}
		layers, err := got.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			rc, err := l.Compressed()
			if err != nil {
				return err
			}
			_ = rc.Close()
		}
		return nil
	}
	status := func(err error) int {
		var te *transport.Error
		if errors.As(err, &te) {
			return te.StatusCode
		}
		return 0
	}
	other, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name       string
		do         func() error
		wantStatus int // 0: succeeds
	}{
		{"the manager's robot pulls the manager image", func() error { return pull(managerAccount, "platform/manager:dev") }, 0},
		{"the tenants' robot pulls the job image", func() error { return pull(tenantsAccount, "tenants/busybox:1.35") }, 0},
		{"the tenants' robot cannot pull the manager image", func() error { return pull(tenantsAccount, "platform/manager:dev") }, http.StatusForbidden},
		{"the manager's robot cannot pull the tenants' images", func() error { return pull(managerAccount, "tenants/busybox:1.35") }, http.StatusForbidden},
		{"the tenants' robot cannot replace the job image", func() error {
			return remote.Write(ref("tenants/busybox:1.35"), other, remote.WithContext(ctx), as(tenantsAccount))
		}, http.StatusForbidden},
		{"the manager's robot cannot push", func() error {
			return remote.Write(ref("platform/manager:dev"), other, remote.WithContext(ctx), as(managerAccount))
		}, http.StatusForbidden},
		{"a wrong password is refused", func() error {
			return pull(RegistryAccount{User: tenantsAccount.User, Password: "guess"}, "tenants/busybox:1.35")
		}, http.StatusUnauthorized},
		{"no credentials are refused", func() error {
			_, err := remote.Image(ref("tenants/busybox:1.35"), remote.WithContext(ctx))
			return err
		}, http.StatusUnauthorized},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if got := status(err); (c.wantStatus == 0 && err != nil) || got != c.wantStatus {
				t.Errorf("err = %v (status %d), want status %d", err, got, c.wantStatus)
			}
		})
	}
	// The job image is still the one CI pushed.
	d, err := remote.Head(ref("tenants/busybox:1.35"), remote.WithContext(ctx), as(tenantsAccount))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := img.Digest(); d.Digest != want {
		t.Errorf("tenants/busybox:1.35 is %s, want CI's %s", d.Digest, want)
	}
	// The registry itself answers on loopback only, without credentials: nothing outside this
	// machine can reach it but through the proxy.
	if !strings.HasPrefix(reg.listen(), "127.0.0.1:") {
		t.Errorf("the registry listens on %s, want loopback", reg.listen())
	}
}
