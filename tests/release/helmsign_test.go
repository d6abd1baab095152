package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The chart's Helm provenance: the package signed with a throwaway OpenPGP key verifies with its
// public keyring, through the Helm library and through `helm verify` (the user's command, bin/helm);
// a changed package with the same .prov, and a package signed by another key, do not.
func TestChartProvenance(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const passphrase = "helm-s3cret"
	key := writeHelmKey(t, dir, "release", []byte(passphrase))

	if _, err := loadHelmSigner(HelmKey{Keyring: key.secret, Name: "release@example.com", Passphrase: []byte("wrong")}); err == nil {
		t.Error("the key loaded with a wrong passphrase")
	}
	if _, err := loadHelmSigner(HelmKey{Keyring: key.secret, Name: "nobody@example.com", Passphrase: []byte(passphrase)}); err == nil {
		t.Error("a key name not in the keyring was accepted")
	}
	signer, err := loadHelmSigner(HelmKey{Keyring: key.secret, Name: "release@example.com", Passphrase: []byte(passphrase)})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signer.PublicKeyring()
	if err != nil {
		t.Fatal(err)
	}
	if string(pub) != string(key.public) {
		t.Error("the signer's public keyring is not the generated key's public half")
	}

	chrt, err := loader.LoadDir(filepath.Join(root, "charts", "platform-operators"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := chartutil.Save(chrt, dir)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := signer.Sign(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(pkg + ".prov"); err != nil || string(b) != string(prov) {
		t.Fatalf("%s.prov: %v, want the signature Sign returned", pkg, err)
	}
	if !strings.Contains(string(prov), "name: platform-operators") || !strings.Contains(string(prov), "-----BEGIN PGP SIGNATURE-----") {
		t.Errorf("the .prov is not a clear-signed Chart.yaml:\n%s", prov)
	}

	// The same package: verified, by the release key, with the package's digest.
	v, err := VerifyChart(pkg, pkg+".prov", key.publicFile)
	if err != nil {
		t.Fatalf("verifying the signed chart: %v", err)
	}
	if _, ok := v.SignedBy.Identities["release <release@example.com>"]; !ok {
		t.Errorf("signed by %v, want release <release@example.com>", v.SignedBy.Identities)
	}
	helm := filepath.Join(testbed.Bin(root), "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("bin/helm (make tools) is needed to check `helm verify`: %v", err)
	}
	if out, err := helmVerify(t, helm, pkg, key.publicFile); err != nil {
		t.Errorf("helm verify of the signed chart: %v\n%s", err, out)
	}

	// A changed package beside the release's .prov: its digest is not the one signed.
	chrt.Metadata.Description = "tampered"
	tamperedDir := filepath.Join(dir, "tampered")
	if err := os.MkdirAll(tamperedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tampered, err := chartutil.Save(chrt, tamperedDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tampered+".prov", prov, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyChart(tampered, tampered+".prov", key.publicFile); err == nil {
		t.Error("a changed chart verified with the release's .prov")
	}
	if out, err := helmVerify(t, helm, tampered, key.publicFile); err == nil {
		t.Errorf("helm verify accepted a changed chart with the release's .prov:\n%s", out)
	} else {
		t.Logf("helm verify of a changed chart fails as it must: %s", strings.TrimSpace(out))
	}

	// A package signed by another key (an attacker's own .prov): not by a key of the keyring.
	other := writeHelmKey(t, filepath.Join(dir, "other"), "attacker", []byte("other"))
	otherSigner, err := loadHelmSigner(HelmKey{Keyring: other.secret, Name: "attacker", Passphrase: []byte("other")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otherSigner.Sign(tampered); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyChart(tampered, tampered+".prov", key.publicFile); err == nil {
		t.Error("a chart signed by another key verified with the release's keyring")
	}
	if out, err := helmVerify(t, helm, tampered, key.publicFile); err == nil {
		t.Errorf("helm verify accepted a chart signed by another key:\n%s", out)
	} else {
		t.Logf("helm verify of a chart signed by another key fails as it must: %s", strings.TrimSpace(out))
	}
}

type helmKeyFiles struct {
	secret, publicFile string
	public             []byte
}

// writeHelmKey generates a key for name <name@example.com> and writes its secret and public
// keyrings into dir.
func writeHelmKey(t *testing.T, dir, name string, passphrase []byte) helmKeyFiles {
	t.Helper()
	k, err := GenerateHelmKey(name, name+"@example.com", passphrase)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := helmKeyFiles{secret: filepath.Join(dir, "secring.gpg"), publicFile: filepath.Join(dir, "pubring.gpg"), public: k.Public}
	if err := os.WriteFile(f.secret, k.Secret, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.publicFile, k.Public, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// helmVerify runs `helm verify --keyring keyring pkg`.
func helmVerify(t *testing.T, helm, pkg, keyring string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, helm, "verify", "--keyring", keyring, pkg).CombinedOutput()
	return string(out), err
}
