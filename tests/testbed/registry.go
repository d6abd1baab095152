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
	// User and Password of its one account, e.g. a Harbor-style robot account `robot$platform+ci`.
	User, Password string
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

func (r Registry) pidFile() string { return filepath.Join(r.Dir, "registry.pid") }

// Start writes the registry's htpasswd (bcrypt, the only hash it accepts) and config, starts it
// in the background (pid in Dir/registry.pid; it outlives the caller until Stop) and waits until
// it answers. A registry of ours already running from an earlier Start is stopped first.
func (r Registry) Start(ctx context.Context) error {
	if err := r.Stop(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, "data"), 0o755); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "htpasswd"), []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
		return err
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
auth:
  htpasswd:
    realm: platform-operators-testbed
    path: %s
`, filepath.Join(r.Dir, "data"), r.Addr(), filepath.Join(r.Dir, "htpasswd"))
	cfgPath := filepath.Join(r.Dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(r.Dir, "registry.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	c := exec.Command(RegistryBinary, "serve", cfgPath)
	c.Stdout, c.Stderr = logf, logf
	detach(c)
	if err := c.Start(); err != nil {
		return fmt.Errorf("starting %s (apt-get install docker-registry; scripts/host.sh packages does): %w", RegistryBinary, err)
	}
	pid := c.Process.Pid
	_ = c.Process.Release()
	if err := os.WriteFile(r.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return err
	}
	// Up once /v2/ asks for credentials.
	url := "http://" + r.Addr() + "/v2/"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized, nil
	})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(r.Dir, "registry.log"))
		return fmt.Errorf("registry at %s did not answer: %w: %s", url, err, lastLines(string(log), 10))
	}
	return nil
}

// Stop stops the registry that Start started, by its pid; none running is not an error.
func (r Registry) Stop() error {
	b, err := os.ReadFile(r.pidFile())
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", r.pidFile(), err)
	}
	// A pid file left from before a reboot may name another process by now: stop only the registry.
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmdline), filepath.Base(RegistryBinary)) {
		if err := StopPID(pid, 10*time.Second); err != nil {
			return err
		}
	}
	return os.Remove(r.pidFile())
}
