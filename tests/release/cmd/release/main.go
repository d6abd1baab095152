// Command release builds a release of platform-operators (`make release`): the manager image
// index (linux/amd64 + linux/arm64), the chart package, a CycloneDX SBOM per platform image and a
// SLSA provenance statement, all into --out. With --push it publishes them to --registry: the
// index as REGISTRY/manager:VERSION, the SBOMs and the provenance as OCI referrers of the images,
// the chart as oci://REGISTRY/charts/platform-operators:VERSION, and signs every manifest it pushed
// with the cosign key --key (the SBOMs and the provenance also as signed cosign attestations); the
// chart also carries Helm's own provenance (.prov, signed with the OpenPGP key --helm-key). See
// docs/release.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/platform-operators/platform-operators/tests/release"
	"github.com/platform-operators/platform-operators/tests/release/signing"
)

func main() {
	var o release.Options
	fs := flag.NewFlagSet("release", flag.ExitOnError)
	fs.StringVar(&o.Root, "root", ".", "Repository root.")
	fs.StringVar(&o.Commit, "commit", "", "Full git commit the release is built from (required).")
	fs.StringVar(&o.Registry, "registry", "", "Registry and project, e.g. harbor.example.com/platform (required with --push).")
	fs.StringVar(&o.OutDir, "out", "bin/release", "Directory for the OCI layout, chart package, SBOMs and provenance.")
	fs.BoolVar(&o.Push, "push", false, "Publish to --registry (default: dry run, nothing leaves this machine).")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "Talk to --registry over plain HTTP (a test registry).")
	fs.StringVar(&o.SigningKey, "key", os.Getenv("COSIGN_KEY"), "Cosign private key file that signs the release (default $COSIGN_KEY; required with --push). Its password is read from $"+signing.PasswordEnv+", never from a flag.")
	fs.StringVar(&o.HelmKey.Keyring, "helm-keyring", os.Getenv(release.HelmKeyringEnv), "OpenPGP secret keyring (gpg --export-secret-keys) whose key signs the chart's Helm provenance (.prov) (default $"+release.HelmKeyringEnv+"; required with --push).")
	fs.StringVar(&o.HelmKey.Name, "helm-key", os.Getenv(release.HelmKeyEnv), "Name of the key in --helm-keyring, as helm package --key (default $"+release.HelmKeyEnv+"). Its passphrase is read from $"+release.HelmPassphraseEnv+", never from a flag.")
	_ = fs.Parse(os.Args[1:])
	o.Out = os.Stdout
	o.SigningPassword = []byte(os.Getenv(signing.PasswordEnv))
	o.HelmKey.Passphrase = []byte(os.Getenv(release.HelmPassphraseEnv))
	if o.Commit == "" {
		fmt.Fprintln(os.Stderr, "error: --commit is required")
		os.Exit(2)
	}
	if _, err := release.Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
