package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// JobImageRepository and JobImageTag name the test bed's job image in a registry project: Debian's
// static busybox (make job-image-push), in place of docker.io/library/busybox, which cannot be
// pulled here.
const (
	JobImageRepository = "busybox"
	JobImageTag        = "1.35"
)

// PushedImages are the images PushImages put into a registry project.
type PushedImages struct {
	// Registry is the registry and project of the manager image, e.g. 172.17.0.1:5000/platform
	// (the chart's image.registry); JobRegistry the job image's (jobImage.registry).
	Registry, JobRegistry string
	// ManagerRepository and ManagerTag name the manager image (a linux/amd64 + linux/arm64 index);
	// ManagerDigest is the digest the tag pointed at right after the push.
	ManagerRepository, ManagerTag, ManagerDigest string
	// JobRepository and JobTag name the job image; Job is its whole reference.
	JobRepository, JobTag, Job string
}

// PushImages builds the manager image and the job image and pushes them into project on reg with
// reg's credentials, exactly as a user does: `make image-push` and `make job-image-push` with a
// DOCKER_CONFIG holding the login.
func PushImages(ctx context.Context, root string, reg Registry, project, tag string, out io.Writer) (PushedImages, error) {
	return PushImagesTo(ctx, root, reg, project, project, tag, out)
}

// PushImagesTo is PushImages with the manager image in managerProject and the job image in
// jobProject (as Harbor projects the manager's and the tenants' robot accounts may pull from).
func PushImagesTo(ctx context.Context, root string, reg Registry, managerProject, jobProject, tag string, out io.Writer) (PushedImages, error) {
	dockerConfig := filepath.Join(reg.Dir, "docker-config")
	if err := os.MkdirAll(dockerConfig, 0o700); err != nil {
		return PushedImages{}, err
	}
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), reg.DockerConfigJSON(), 0o600); err != nil {
		return PushedImages{}, err
	}
	p := PushedImages{Registry: reg.Addr() + "/" + managerProject, JobRegistry: reg.Addr() + "/" + jobProject,
		ManagerRepository: "manager", ManagerTag: tag, JobRepository: JobImageRepository, JobTag: JobImageTag}
	p.Job = p.JobRegistry + "/" + p.JobRepository + ":" + p.JobTag
	for _, push := range []struct{ target, registry string }{{"image-push", p.Registry}, {"job-image-push", p.JobRegistry}} {
		target, registry := push.target, push.registry
		c := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", root, target,
			"REGISTRY="+registry, "TAG="+tag, "INSECURE=1")
		c.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
		c.Stdout, c.Stderr = out, out
		if err := c.Run(); err != nil {
			return PushedImages{}, fmt.Errorf("make %s REGISTRY=%s: %w", target, registry, err)
		}
	}
	ref, err := name.ParseReference(p.Registry+"/"+p.ManagerRepository+":"+tag, name.Insecure)
	if err != nil {
		return PushedImages{}, err
	}
	desc, err := remote.Head(ref, remote.WithContext(ctx), remote.WithAuth(&authn.Basic{Username: reg.User, Password: reg.Password}))
	if err != nil {
		return PushedImages{}, fmt.Errorf("resolving %s: %w", ref, err)
	}
	p.ManagerDigest = desc.Digest.String()
	return p, nil
}

// ToolsImage builds (once per content) a local Docker image for pods of the e2e suite that need
// a Kubernetes client: Debian's static busybox (bin/busybox, scripts/host.sh busybox) and the
// pinned kubectl from bin/. It is loaded into kind nodes (kind load docker-image), not pushed.
func ToolsImage(ctx context.Context, root string) (string, error) {
	busybox, kubectl := filepath.Join(Bin(root), "busybox", "busybox"), filepath.Join(Bin(root), "kubectl")
	sum := exec.CommandContext(ctx, "sh", "-c", `cat "$1" "$2" | sha256sum | cut -c1-12`, "sh", busybox, kubectl)
	out, err := sum.Output()
	if err != nil {
		return "", fmt.Errorf("hashing %s and %s: %w", busybox, kubectl, err)
	}
	tag := "platform-operators/e2e-tools:" + string(out[:12])
	if dockerCmd(ctx, "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	dir, err := os.MkdirTemp("", "po-tools-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	script := `set -e
mkdir -p "$D/bin" "$D/tmp" "$D/etc"
chmod 1777 "$D/tmp"
cp "$1" "$D/bin/busybox"; cp "$2" "$D/bin/kubectl"
for a in $("$D/bin/busybox" --list); do [ -e "$D/bin/$a" ] || ln -s busybox "$D/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/tmp:/bin/sh\n' >"$D/etc/passwd"
tar -C "$D" --numeric-owner --owner=0 --group=0 -c . | docker import --change 'ENV PATH=/bin' --change 'CMD ["sh"]' - "$3" >/dev/null`
	c := exec.CommandContext(ctx, "sh", "-c", script, "sh", busybox, kubectl, tag)
	c.Env = append(os.Environ(), "D="+filepath.Join(dir, "root"))
	if b, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w: %s", tag, err, b)
	}
	return tag, nil
}
