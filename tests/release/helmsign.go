package release

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"helm.sh/helm/v3/pkg/provenance"
)

// Environment variables the release command reads the chart's OpenPGP signing key from, as
// `helm package --sign --keyring KEYRING --key NAME` takes it (the passphrase never from a flag).
const (
	HelmKeyringEnv    = "HELM_SIGN_KEYRING"
	HelmKeyEnv        = "HELM_SIGN_KEY"
	HelmPassphraseEnv = "HELM_SIGN_PASSPHRASE"
)

// HelmKey is an OpenPGP key that signs the chart package with Helm's provenance format: a .prov
// file beside the .tgz holding the clear-signed Chart.yaml and the package's SHA-256, which
// `helm verify`, `helm pull --verify` and `helm install --verify` check.
type HelmKey struct {
	// Keyring is a binary OpenPGP secret keyring (`gpg --export-secret-keys > secring.gpg`).
	Keyring string
	// Name picks the key in Keyring: a part of its user ID (name, email), as `helm package --key`.
	Name string
	// Passphrase decrypts the key (empty: the key is not encrypted).
	Passphrase []byte
}

// helmSigner is a HelmKey loaded and decrypted.
type helmSigner struct{ s *provenance.Signatory }

// loadHelmSigner loads and decrypts k: a wrong passphrase fails here, before anything is built.
func loadHelmSigner(k HelmKey) (*helmSigner, error) {
	if k.Name == "" {
		return nil, fmt.Errorf("%s names the keyring; %s must name the key in it (a part of its user ID)", HelmKeyringEnv, HelmKeyEnv)
	}
	s, err := provenance.NewFromKeyring(k.Keyring, k.Name)
	if err != nil {
		return nil, fmt.Errorf("the chart's signing key %q in %s: %w", k.Name, k.Keyring, err)
	}
	if err := s.DecryptKey(func(string) ([]byte, error) { return k.Passphrase, nil }); err != nil {
		return nil, fmt.Errorf("decrypting the chart's signing key %q (passphrase from $%s): %w", k.Name, HelmPassphraseEnv, err)
	}
	return &helmSigner{s: s}, nil
}

// Sign writes pkg's provenance file (pkg + ".prov", as `helm package --sign` does) and returns it.
func (h *helmSigner) Sign(pkg string) ([]byte, error) {
	sig, err := h.s.ClearSign(pkg)
	if err != nil {
		return nil, fmt.Errorf("signing %s: %w", pkg, err)
	}
	if err := os.WriteFile(pkg+".prov", []byte(sig), 0o644); err != nil {
		return nil, err
	}
	return []byte(sig), nil
}

// PublicKeyring is the signing key's public half as a binary keyring (`gpg --export`), the file
// users give `helm verify --keyring`.
func (h *helmSigner) PublicKeyring() ([]byte, error) {
	var b bytes.Buffer
	if err := h.s.Entity.Serialize(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// VerifyChart checks the chart package pkg against its provenance file prov with the public
// keys in keyring, as `helm verify --keyring keyring pkg` does: the signature must be by a key
// of keyring and the package's SHA-256 the one signed.
func VerifyChart(pkg, prov, keyring string) (*provenance.Verification, error) {
	s, err := provenance.NewFromKeyring(keyring, "")
	if err != nil {
		return nil, err
	}
	return s.Verify(pkg, prov)
}

// GeneratedHelmKey is a new OpenPGP key pair: Secret is a secret keyring (its key encrypted with
// the passphrase given), Public the public keyring.
type GeneratedHelmKey struct{ Secret, Public []byte }

// GenerateHelmKey makes an Ed25519 OpenPGP key for name <email> whose private half is encrypted
// with passphrase: a throwaway key for tests, as `gpg --quick-generate-key` makes one.
func GenerateHelmKey(name, email string, passphrase []byte) (GeneratedHelmKey, error) {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, err := openpgp.NewEntity(name, "", email, cfg)
	if err != nil {
		return GeneratedHelmKey{}, err
	}
	var pub bytes.Buffer
	if err := e.Serialize(&pub); err != nil {
		return GeneratedHelmKey{}, err
	}
	if len(passphrase) == 0 {
		return GeneratedHelmKey{}, errors.New("a passphrase encrypts the generated key")
	}
	if err := e.EncryptPrivateKeys(passphrase, cfg); err != nil {
		return GeneratedHelmKey{}, err
	}
	var sec bytes.Buffer
	// Without re-signing: the self-signatures NewEntity made stand, and the key stays encrypted.
	if err := e.SerializePrivateWithoutSigning(&sec, cfg); err != nil {
		return GeneratedHelmKey{}, err
	}
	return GeneratedHelmKey{Secret: sec.Bytes(), Public: pub.Bytes()}, nil
}
