package testbed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"k8s.io/apimachinery/pkg/util/wait"
)

// RegistryBinary is Debian's CNCF distribution registry (package docker-registry): a real OCI
// registry, the software Harbor's own registry component runs.
const RegistryBinary = "/usr/bin/docker-registry"

// Registry is the test bed's image registry, in Harbor's role: plain HTTP, htpasswd auth, storage
// under Dir. It listens on Host, an address of this machine the kind nodes reach (the Docker
// bridge's gateway), so nodes pull from it as a cluster pulls from Harbor.
type Registry struct {
	// Dir holds the registry's config, htpasswd, storage, log and pid file.
	Dir string
	// Host and Port it listens on.
	Host string
	Port int
	// User and Password of its account that may push and pull everything (CI's), e.g. a
	// Harbor-style robot account `robot$platform+ci`.
	User, Password string
	// Accounts with narrower rights, as Harbor's robot accounts (e.g. pull on one project only).
	// With any, the registry listens on loopback only (port Port+10000, no auth of its own) and
	// an access proxy on Host:Port (RegistryAccessProxy, run detached as ProxyCommand + "--dir"
	// Dir, pid in Dir/proxy.pid) authenticates every request and enforces each account's rights.
	// Without, the registry itself listens on Host:Port with htpasswd auth for User alone.
	Accounts []RegistryAccount
	// ProxyCommand runs ServeRegistryProxy, e.g. the testbed command's `registry-proxy`.
	ProxyCommand []string
}

// Addr is host:port, the registry part of image references.
func (r Registry) Addr() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// DockerConfigJSON is a ~/.docker/config.json (and a kubernetes.io/dockerconfigjson Secret's
// payload) holding the account's credentials for the registry.
func (r Registry) DockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	b, err := json.Marshal(struct {
		Auths map[string]entry `json:"auths"`
	}{map[string]entry{r.Addr(): {r.User, r.Password, auth}}})
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return b
}

// DockerBridgeGateway returns the address of Docker's default bridge on this machine (docker0's):
// every container, kind nodes included, reaches it, and it exists before any kind network does.
// The default bridge's IPAM config often omits the gateway, so the bridge interface is asked.
func DockerBridgeGateway(ctx context.Context) (string, error) {
	out, err := dockerCmd(ctx, "network", "inspect", "bridge", "-f",
		`{{range .IPAM.Config}}{{.Gateway}} {{end}}|{{index .Options "com.docker.network.bridge.name"}}`).Output()
	if err != nil {
		return "", fmt.Errorf("docker network inspect bridge: %w", err)
	}
	gws, bridge, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
	for _, f := range strings.Fields(gws) {
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return f, nil
		}
	}
	if bridge == "" {
		bridge = "docker0"
	}
	iface, err := net.InterfaceByName(bridge)
	if err != nil {
		return "", fmt.Errorf("docker's default bridge %s: %w", bridge, err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("docker's default bridge %s has no IPv4 address", bridge)
}

func (r Registry) pidFile() string      { return filepath.Join(r.Dir, "registry.pid") }
func (r Registry) proxyPIDFile() string { return filepath.Join(r.Dir, "proxy.pid") }

// listen is where the registry process itself listens: Host:Port, or behind the access proxy
// loopback only.
func (r Registry) listen() string {
	if len(r.Accounts) > 0 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port+10000))
	}
	return r.Addr()
}

// Start writes the registry's config (and htpasswd, bcrypt, the only hash it accepts), starts it
// in the background (pid in Dir/registry.pid; it outlives the caller until Stop), with Accounts
// also the access proxy in front of it, and waits until Host:Port asks for credentials. A
// registry of ours already running from an earlier Start is stopped first.
func (r Registry) Start(ctx context.Context) error {
	if err := r.Stop(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, "data"), 0o755); err != nil {
		return err
	}
	auth := ""
	if len(r.Accounts) == 0 {
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.DefaultCost)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "htpasswd"), []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
			return err
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: platform-operators-testbed\n    path: %s\n", filepath.Join(r.Dir, "htpasswd"))
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(r.Dir, "data"), r.listen(), auth)
	cfgPath := filepath.Join(r.Dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	if err := r.startDetached("registry.log", r.pidFile(), RegistryBinary, "serve", cfgPath); err != nil {
		return fmt.Errorf("starting %s (apt-get install docker-registry; scripts/host.sh packages does): %w", RegistryBinary, err)
	}
	if len(r.Accounts) > 0 {
		if len(r.ProxyCommand) == 0 {
			return fmt.Errorf("registry %s: Accounts need a ProxyCommand", r.Addr())
		}
		all := append([]RegistryAccount{{User: r.User, Password: r.Password, Push: []string{"*"}}}, r.Accounts...)
		if err := writeProxyConfig(r.Dir, r.Addr(), "http://"+r.listen(), all); err != nil {
			return err
		}
		args := append(append([]string{}, r.ProxyCommand[1:]...), "--dir", r.Dir)
		if err := r.startDetached("proxy.log", r.proxyPIDFile(), r.ProxyCommand[0], args...); err != nil {
			return fmt.Errorf("starting the registry's access proxy: %w", err)
		}
	}
	// Up once /v2/ asks for credentials.
	url := "http://" + r.Addr() + "/v2/"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized, nil
	})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(r.Dir, "registry.log"))
		plog, _ := os.ReadFile(filepath.Join(r.Dir, "proxy.log"))
		return fmt.Errorf("registry at %s did not answer: %w: %s%s", url, err, lastLines(string(log), 10), lastLines(string(plog), 10))
	}
	return nil
}

// startDetached starts name with args in the background, output to Dir/logName, its pid in pidFile.
func (r Registry) startDetached(logName, pidFile, name string, args ...string) error {
	logf, err := os.Create(filepath.Join(r.Dir, logName))
	if err != nil {
		return err
	}
	defer logf.Close()
	c := exec.Command(name, args...)
	c.Stdout, c.Stderr = logf, logf
	detach(c)
	if err := c.Start(); err != nil {
		return err
	}
	pid := c.Process.Pid
	_ = c.Process.Release()
	return os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// Stop stops the registry (and its access proxy) that Start started, by their pids; none running
// is not an error.
func (r Registry) Stop() error {
	if err := stopByPIDFile(r.proxyPIDFile(), "registry-proxy"); err != nil {
		return err
	}
	return stopByPIDFile(r.pidFile(), filepath.Base(RegistryBinary))
}

// stopByPIDFile stops the process named in pidFile if its command line still holds want (a pid
// file left from before a reboot may name another process by now), and removes the file.
func stopByPIDFile(pidFile, want string) error {
	b, err := os.ReadFile(pidFile)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", pidFile, err)
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmdline), want) {
		if err := StopPID(pid, 10*time.Second); err != nil {
			return err
		}
	}
	return os.Remove(pidFile)
}
