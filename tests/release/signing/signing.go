// Package signing signs and verifies what a release pushes with a cosign key pair, in cosign's own
// formats and through cosign's own packages (github.com/sigstore/cosign/v3): a simple-signing
// signature per manifest under the `sha256-<digest>.sig` tag, and in-toto statements in DSSE
// envelopes under `sha256-<digest>.att`, each with its predicateType annotation. That is what
// `cosign sign --key` and `cosign attest --key` write with the legacy (tag) layout, which cosign v2
// and v3 (`cosign verify --key`, `cosign verify-attestation --key`), Kyverno and the
// policy-controller verify.
//
// Nothing goes to a transparency log or Fulcio: the machines this is built and tested on are
// offline, and a key pair needs neither. Verifiers therefore pass `--insecure-ignore-tlog=true`
// (docs/release.md).
package signing

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/cosign/attestation"
	cremote "github.com/sigstore/cosign/v3/pkg/cosign/remote"
	"github.com/sigstore/cosign/v3/pkg/oci"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/cosign/v3/pkg/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"
)

// Predicate types of the attestations a release attaches, as `cosign verify-attestation --type`
// names them: slsaprovenance1 and cyclonedx.
const (
	PredicateSLSAProvenanceV1 = "https://slsa.dev/provenance/v1"
	PredicateCycloneDX        = "https://cyclonedx.org/bom"
)

// cosignTypes maps a predicate type URI to cosign's short name for it (`--type`), which
// attestation.GenerateStatement needs to build (and check) the statement of that predicate.
var cosignTypes = map[string]string{
	PredicateSLSAProvenanceV1: "slsaprovenance1",
	PredicateCycloneDX:        "cyclonedx",
}

// PasswordEnv is where the private key's password is read from, as the cosign CLI reads it.
const PasswordEnv = "COSIGN_PASSWORD"

// KeyPair is a freshly generated cosign key pair: the private key encrypted with the password in
// cosign's PEM format (`cosign generate-key-pair` writes the same files: cosign.key, cosign.pub).
type KeyPair struct {
	Private, Public []byte
}

// GenerateKeyPair makes an ECDSA P-256 key pair, the private half encrypted with password.
func GenerateKeyPair(password []byte) (KeyPair, error) {
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return password, nil })
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Private: kb.PrivateBytes, Public: kb.PublicBytes}, nil
}

// Signer signs manifests and attests statements with one private key.
type Signer struct {
	sv   signature.SignerVerifier
	opts []ociremote.Option
}

// LoadSigner reads a cosign private key file, decrypting it with password.
func LoadSigner(keyFile string, password []byte, opts ...ociremote.Option) (*Signer, error) {
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	sv, err := cosign.LoadPrivateKey(b, password, nil)
	if err != nil {
		return nil, fmt.Errorf("loading the signing key %s (is %s right?): %w", keyFile, PasswordEnv, err)
	}
	return &Signer{sv: sv, opts: opts}, nil
}

// With returns a signer with the same key that talks to registries with opts (authentication,
// plain HTTP).
func (s *Signer) With(opts ...ociremote.Option) *Signer {
	return &Signer{sv: s.sv, opts: append(slices.Clone(s.opts), opts...)}
}

// PublicKey is the signer's public key in PEM, as cosign.pub holds it.
func (s *Signer) PublicKey() ([]byte, error) {
	pk, err := s.sv.PublicKey()
	if err != nil {
		return nil, err
	}
	return cryptoutils.MarshalPublicKeyToPEM(pk)
}

// Sign attaches a simple-signing signature of d (the critical section names d's repository and
// digest; annotations are the optional claims) under d's `.sig` tag, as `cosign sign --key` does.
// A signature already there with the same payload is not added twice.
func (s *Signer) Sign(ctx context.Context, d name.Digest, annotations map[string]any) error {
	payload, err := (&sigpayload.Cosign{Image: d, Annotations: annotations}).MarshalJSON()
	if err != nil {
		return err
	}
	raw, err := s.sv.SignMessage(bytes.NewReader(payload), sigopts.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("signing %s: %w", d, err)
	}
	sig, err := static.NewSignature(payload, base64.StdEncoding.EncodeToString(raw))
	if err != nil {
		return err
	}
	se, err := mutate.AttachSignatureToEntity(ociremote.SignedUnknown(d, s.opts...), sig, mutate.WithDupeDetector(cremote.NewDupeDetector(s.sv)))
	if err != nil {
		return err
	}
	if err := ociremote.WriteSignatures(d.Repository, se, s.opts...); err != nil {
		return fmt.Errorf("writing the signature of %s: %w", d, err)
	}
	return nil
}

// Attest wraps predicate in an in-toto statement of predicateType whose subject is d (built by
// cosign's attestation package, which checks a SLSA v1 predicate against its schema), signs it as
// a DSSE envelope and attaches it under d's `.att` tag, as `cosign attest --key --type` does. An
// earlier attestation of the same predicateType is replaced, so a re-run does not pile them up.
func (s *Signer) Attest(ctx context.Context, d name.Digest, predicateType string, predicate []byte) error {
	short, ok := cosignTypes[predicateType]
	if !ok {
		return fmt.Errorf("no cosign type for predicate %s", predicateType)
	}
	st, err := attestation.GenerateStatement(attestation.GenerateOpts{
		Predicate: bytes.NewReader(predicate), Type: short, Digest: d.DigestStr()[len("sha256:"):], Repo: d.Repository.String(),
	})
	if err != nil {
		return fmt.Errorf("the %s statement for %s: %w", short, d, err)
	}
	statement, err := st.MarshalJSON()
	if err != nil {
		return err
	}
	envelope, err := dsse.WrapSigner(s.sv, types.IntotoPayloadType).SignMessage(bytes.NewReader(statement), sigopts.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("signing the %s attestation of %s: %w", short, d, err)
	}
	att, err := static.NewAttestation(envelope, static.WithLayerMediaType(types.DssePayloadType),
		static.WithAnnotations(map[string]string{"predicateType": predicateType}))
	if err != nil {
		return err
	}
	se, err := mutate.AttachAttestationToEntity(ociremote.SignedUnknown(d, s.opts...), att,
		mutate.WithDupeDetector(cremote.NewDupeDetector(s.sv)), mutate.WithReplaceOp(cremote.NewReplaceOp(predicateType)))
	if err != nil {
		return err
	}
	if err := ociremote.WriteAttestations(d.Repository, se, s.opts...); err != nil {
		return fmt.Errorf("writing the %s attestation of %s: %w", short, d, err)
	}
	return nil
}

// Verifier checks signatures and attestations against one public key, with cosign's
// verification (cosign.VerifyImageSignatures, cosign.VerifyImageAttestations): what
// `cosign verify --key --insecure-ignore-tlog` and `cosign verify-attestation` run.
type Verifier struct {
	v    signature.Verifier
	opts []ociremote.Option
}

// NewVerifier loads a PEM public key (cosign.pub).
func NewVerifier(publicKeyPEM []byte, opts ...ociremote.Option) (*Verifier, error) {
	pk, err := cryptoutils.UnmarshalPEMToPublicKey(publicKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("the public key: %w", err)
	}
	v, err := signature.LoadVerifier(pk, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &Verifier{v: v, opts: opts}, nil
}

func (v *Verifier) checkOpts(claims func(oci.Signature, v1.Hash, map[string]any) error) *cosign.CheckOpts {
	return &cosign.CheckOpts{
		RegistryClientOpts: v.opts, SigVerifier: v.v, ClaimVerifier: claims,
		// Key-based and offline: no transparency log entry, no certificate to hold an SCT.
		IgnoreTlog: true, IgnoreSCT: true,
	}
}

// VerifySignature resolves ref (a tag or a digest) and checks that a signature made with the key
// covers that digest; it returns the digest verified.
func (v *Verifier) VerifySignature(ctx context.Context, ref name.Reference) (name.Digest, error) {
	d, err := ociremote.ResolveDigest(ref, v.opts...)
	if err != nil {
		return name.Digest{}, err
	}
	if _, _, err := cosign.VerifyImageSignatures(ctx, d, v.checkOpts(cosign.SimpleClaimVerifier)); err != nil {
		return d, fmt.Errorf("signature of %s: %w", d, err)
	}
	return d, nil
}

// Statement is a verified in-toto statement.
type Statement struct {
	PredicateType string          `json:"predicateType"`
	Subject       []Subject       `json:"subject"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject is one subject of a statement.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// VerifyAttestation resolves ref and returns the statements of predicateType attached to its
// digest whose DSSE signature the key verifies and whose subject is that digest; none is an error.
func (v *Verifier) VerifyAttestation(ctx context.Context, ref name.Reference, predicateType string) ([]Statement, error) {
	d, err := ociremote.ResolveDigest(ref, v.opts...)
	if err != nil {
		return nil, err
	}
	atts, _, err := cosign.VerifyImageAttestations(ctx, d, v.checkOpts(cosign.IntotoSubjectClaimVerifier))
	if err != nil {
		return nil, fmt.Errorf("attestations of %s: %w", d, err)
	}
	var out []Statement
	for _, att := range atts {
		st, err := statementOf(att)
		if err != nil {
			return nil, err
		}
		if st.PredicateType == predicateType {
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("attestations of %s: none of type %s among %d verified", d, predicateType, len(atts))
	}
	return out, nil
}

// statementOf decodes the in-toto statement inside an attestation's DSSE envelope.
func statementOf(att oci.Signature) (Statement, error) {
	p, err := att.Payload()
	if err != nil {
		return Statement{}, err
	}
	var env struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
	}
	if err := json.Unmarshal(p, &env); err != nil {
		return Statement{}, fmt.Errorf("attestation envelope: %w", err)
	}
	if env.PayloadType != types.IntotoPayloadType {
		return Statement{}, fmt.Errorf("attestation payload type %q, want %s", env.PayloadType, types.IntotoPayloadType)
	}
	b, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return Statement{}, fmt.Errorf("attestation payload: %w", err)
	}
	var st Statement
	if err := json.Unmarshal(b, &st); err != nil {
		return Statement{}, fmt.Errorf("attestation statement: %w", err)
	}
	if st.PredicateType == "" {
		return Statement{}, errors.New("attestation statement without predicateType")
	}
	return st, nil
}
