package signing

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const provenance = `{
  "buildDefinition": {
    "buildType": "https://example.com/build-type/v1",
    "externalParameters": {"source": "git+https://example.com/repo@abc"},
    "resolvedDependencies": [{"uri": "git+https://example.com/repo", "digest": {"gitCommit": "abc"}}]
  },
  "runDetails": {"builder": {"id": "https://example.com/builder"}}
}`

const sbom = `{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": [{"name": "sigs.k8s.io/controller-runtime"}]}`

// bed is an in-process registry with one pushed image and a signer for it.
type bed struct {
	repo   name.Repository
	digest name.Digest
	signer *Signer
	public []byte
}

func newBed(t *testing.T) bed {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/platform/manager", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d := push(t, repo.Tag("1.0.0"))
	keys, err := GenerateKeyPair([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(keyFile, keys.Private, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(keyFile, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	return bed{repo: repo, digest: d, signer: s, public: keys.Public}
}

// push writes a new random image to tag and returns its digest.
func push(t *testing.T, tag name.Tag) name.Digest {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(h.String())
}

func verifier(t *testing.T, pub []byte) *Verifier {
	t.Helper()
	v, err := NewVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSignedImageVerifiesAndNothingElseDoes(t *testing.T) {
	ctx := context.Background()
	b := newBed(t)
	if err := b.signer.Sign(ctx, b.digest, nil); err != nil {
		t.Fatal(err)
	}
	// Signing twice adds no second signature (cosign's duplicate detector).
	if err := b.signer.Sign(ctx, b.digest, nil); err != nil {
		t.Fatal(err)
	}
	other, err := GenerateKeyPair([]byte("other"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ref     func(t *testing.T) name.Reference
		pub     []byte
		wantErr string
	}{
		{name: "the tag verifies with the signing key", ref: func(*testing.T) name.Reference { return b.repo.Tag("1.0.0") }, pub: b.public},
		{name: "the digest verifies with the signing key", ref: func(*testing.T) name.Reference { return b.digest }, pub: b.public},
		{name: "another key does not verify it", ref: func(*testing.T) name.Reference { return b.digest }, pub: other.Public, wantErr: "invalid signature"},
		{name: "an unsigned image under another tag does not verify", ref: func(t *testing.T) name.Reference { push(t, b.repo.Tag("unsigned")); return b.repo.Tag("unsigned") },
			pub: b.public, wantErr: "no signatures found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := verifier(t, tc.pub).VerifySignature(ctx, tc.ref(t))
			if tc.wantErr == "" {
				if err != nil || got != b.digest {
					t.Fatalf("VerifySignature = %s, %v; want %s verified", got, err, b.digest)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("VerifySignature = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	// Tampering: another image pushed to the signed tag no longer verifies by that tag.
	push(t, b.repo.Tag("1.0.0"))
	if _, err := verifier(t, b.public).VerifySignature(ctx, b.repo.Tag("1.0.0")); err == nil || !strings.Contains(err.Error(), "no signatures found") {
		t.Fatalf("after another image was pushed to the tag, VerifySignature = %v, want no signatures found", err)
	}
}

func TestAttestationsVerifyByPredicateType(t *testing.T) {
	ctx := context.Background()
	b := newBed(t)
	if err := b.signer.Attest(ctx, b.digest, PredicateSLSAProvenanceV1, []byte(provenance)); err != nil {
		t.Fatal(err)
	}
	if err := b.signer.Attest(ctx, b.digest, PredicateCycloneDX, []byte(sbom)); err != nil {
		t.Fatal(err)
	}
	// A second provenance replaces the first (same predicate type): one stays.
	if err := b.signer.Attest(ctx, b.digest, PredicateSLSAProvenanceV1, []byte(provenance)); err != nil {
		t.Fatal(err)
	}
	v := verifier(t, b.public)
	for _, tc := range []struct {
		predicateType, want string
	}{
		{PredicateSLSAProvenanceV1, `"gitCommit":"abc"`},
		{PredicateCycloneDX, `sigs.k8s.io/controller-runtime`},
	} {
		sts, err := v.VerifyAttestation(ctx, b.repo.Tag("1.0.0"), tc.predicateType)
		if err != nil {
			t.Fatal(err)
		}
		if len(sts) != 1 {
			t.Fatalf("%s: %d statements, want 1", tc.predicateType, len(sts))
		}
		st := sts[0]
		if len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != b.digest.DigestStr() || st.Subject[0].Name != b.repo.String() {
			t.Errorf("%s: subject %+v, want %s", tc.predicateType, st.Subject, b.digest)
		}
		if compact := strings.Join(strings.Fields(string(st.Predicate)), ""); !strings.Contains(compact, tc.want) {
			t.Errorf("%s: predicate %s does not hold %s", tc.predicateType, st.Predicate, tc.want)
		}
	}
	if _, err := v.VerifyAttestation(ctx, b.digest, "https://spdx.dev/Document"); err == nil || !strings.Contains(err.Error(), "none of type") {
		t.Errorf("an SPDX attestation that is not there: %v, want none of type", err)
	}
	other, _ := GenerateKeyPair([]byte("other"))
	if _, err := verifier(t, other.Public).VerifyAttestation(ctx, b.digest, PredicateCycloneDX); err == nil {
		t.Error("attestations verified with another key")
	}
}

func TestAttestRefusesWhatIsNotItsPredicate(t *testing.T) {
	ctx := context.Background()
	b := newBed(t)
	for _, tc := range []struct {
		name, predicateType, predicate, wantErr string
	}{
		{"a SLSA v1 predicate whose buildDefinition is not an object", PredicateSLSAProvenanceV1, `{"buildDefinition": "make release"}`, "Provenance predicate"},
		{"a predicate that is not JSON", PredicateCycloneDX, `<bom/>`, "invalid character"},
		{"a predicate type cosign has no name for", "https://example.com/unknown", `{}`, "no cosign type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.signer.Attest(ctx, b.digest, tc.predicateType, []byte(tc.predicate))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Attest = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadSignerRefusesAWrongPassword(t *testing.T) {
	keys, err := GenerateKeyPair([]byte("right"))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(f, keys.Private, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(f, []byte("wrong")); err == nil || !strings.Contains(err.Error(), PasswordEnv) {
		t.Fatalf("LoadSigner with the wrong password = %v, want an error naming %s", err, PasswordEnv)
	}
	s, err := LoadSigner(f, []byte("right"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.PublicKey()
	if err != nil || string(pub) != string(keys.Public) {
		t.Fatalf("PublicKey = %s, %v; want the generated cosign.pub", pub, err)
	}
}
