package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	cdxbin "github.com/CycloneDX/cyclonedx-gomod/pkg/generate/bin"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/rs/zerolog"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/platform-operators/platform-operators/tests/imagebuild"
	"github.com/platform-operators/platform-operators/tests/release/signing"
)

// Media types of what is attached to the image index.
const (
	// SBOMMediaType is a CycloneDX JSON document (one per platform image: the modules linked into
	// that binary, read from its build info).
	SBOMMediaType = "application/vnd.cyclonedx+json"
	// ProvenanceMediaType is an in-toto statement whose predicate is SLSA provenance v1.
	ProvenanceMediaType = "application/vnd.in-toto+json"
	// SLSAProvenanceV1 is the predicate type of the provenance statement.
	SLSAProvenanceV1 = "https://slsa.dev/provenance/v1"
	// Source is the repository releases are built from.
	Source = "https://github.com/platform-operators/platform-operators"
)

// Options say what to release and where.
type Options struct {
	// Root is the repository root (VERSION, charts/, bin/manager-linux-*; $BIN instead of bin/ when
	// set, as the Makefile exports it).
	Root string
	// Commit is the full git commit the release is built from.
	Commit string
	// Registry is where images and the chart go, e.g. harbor.example.com/platform: the image is
	// Registry/manager:VERSION, the chart oci://Registry/charts/platform-operators:VERSION.
	Registry string
	// OutDir receives the OCI layout of the index, the chart package, the SBOMs and the provenance.
	OutDir string
	// Push publishes to Registry; without it nothing leaves this machine (dry run).
	Push bool
	// PlainHTTP talks to Registry over HTTP (a test registry); credentials come from
	// $DOCKER_CONFIG/config.json (or ~/.docker/config.json) either way.
	PlainHTTP bool
	// SigningKey is a cosign private key file (`cosign generate-key-pair`); SigningPassword
	// decrypts it (cmd/release reads it from $COSIGN_PASSWORD). A pushed release must be signed: with Push
	// and no SigningKey, Run refuses before it builds anything.
	SigningKey      string
	SigningPassword []byte
	// HelmKey signs the chart package with Helm's own provenance (a .prov beside the .tgz, pushed
	// with the chart as its provenance layer), checked by `helm verify` / `helm install --verify`.
	// A pushed release must carry it: with Push and no HelmKey.Keyring, Run refuses before it
	// builds anything.
	HelmKey HelmKey
	// Out receives progress.
	Out io.Writer
}

// Result is what a release produced.
type Result struct {
	Version string
	// Image is Registry/manager:VERSION, IndexDigest the digest of its index.
	Image, IndexDigest string
	// PlatformDigests maps os/arch to the digest of that platform's image manifest.
	PlatformDigests map[string]string
	// Chart is the OCI reference of the chart (without oci://), ChartPackage the local .tgz.
	Chart, ChartPackage string
	// ChartDigest is the digest of the pushed chart manifest (empty in a dry run).
	ChartDigest string
	// PublicKey is the local copy of the signing key's public half (cosign.pub), written beside
	// the other artifacts when the release is signed.
	PublicKey string
	// SBOMs maps os/arch to the local SBOM file; Provenance is the local provenance file.
	SBOMs      map[string]string
	Provenance string
	// ChartProvenance is the chart's Helm provenance file (ChartPackage + ".prov") and
	// HelmPublicKeyring the signing key's public half (helm-signing.pubring.gpg, for
	// `helm verify --keyring`), when the chart is signed.
	ChartProvenance, HelmPublicKeyring string
	// CLIArchives are kubectl-platform's archives (cli/ in OutDir), one per CLIPlatforms entry;
	// CLIChecksums their checksums file. CLI is the OCI artifact holding them
	// (Registry/kubectl-platform:VERSION), CLIDigest its digest once pushed.
	CLIArchives    []CLIArchive
	CLIChecksums   string
	CLI, CLIDigest string
}

// Run builds the release and, with Push, publishes it. The manager binaries must exist
// (make manager-linux) and print VERSION from --version: a binary stamped with another version is
// refused rather than shipped under the wrong tag.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	started := time.Now().UTC()
	if err := CheckVersions(o.Root); err != nil {
		return Result{}, err
	}
	version, err := ReadVersion(o.Root)
	if err != nil {
		return Result{}, err
	}
	if o.Push && o.Registry == "" {
		return Result{}, errors.New("pushing needs REGISTRY, e.g. make release PUSH=1 REGISTRY=harbor.example.com/platform")
	}
	if o.Push && o.SigningKey == "" {
		return Result{}, errors.New("a published release is signed: set COSIGN_KEY to a cosign private key (cosign generate-key-pair) and COSIGN_PASSWORD to its password")
	}
	if o.Push && o.HelmKey.Keyring == "" {
		return Result{}, fmt.Errorf("a published chart carries Helm provenance: set %s to an OpenPGP secret keyring (gpg --export-secret-keys), %s to the key's name and %s to its passphrase", HelmKeyringEnv, HelmKeyEnv, HelmPassphraseEnv)
	}
	var helmSigner *helmSigner
	if o.HelmKey.Keyring != "" {
		// As the cosign key: a wrong passphrase fails the release before anything is built.
		if helmSigner, err = loadHelmSigner(o.HelmKey); err != nil {
			return Result{}, err
		}
	}
	var signer *signing.Signer
	if o.SigningKey != "" {
		// Loaded before anything is built or pushed: a wrong password fails the release at once.
		if signer, err = signing.LoadSigner(o.SigningKey, o.SigningPassword); err != nil {
			return Result{}, err
		}
	}
	registryName := o.Registry
	if registryName == "" {
		registryName = "registry.example.com/platform" // dry run without REGISTRY: names only
	}
	res := Result{Version: version, Image: registryName + "/manager:" + version,
		Chart:           registryName + "/charts/platform-operators:" + version,
		CLI:             registryName + "/kubectl-platform:" + version,
		PlatformDigests: map[string]string{}, SBOMs: map[string]string{}}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return res, err
	}

	// The image index over one static binary per platform.
	var binaries []string
	for _, arch := range []string{"amd64", "arm64"} {
		b := filepath.Join(binDir(o.Root), "manager-linux-"+arch)
		if err := checkBinaryVersion(ctx, b, version); err != nil {
			return res, err
		}
		binaries = append(binaries, b)
	}
	m := imagebuild.Manager{Binaries: binaries, Version: version, Revision: o.Commit, Source: Source}
	idx, err := m.Index()
	if err != nil {
		return res, err
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		return res, err
	}
	res.IndexDigest = idxDigest.String()
	if err := imagebuild.WriteLayout(filepath.Join(o.OutDir, "oci"), res.Image, idx); err != nil {
		return res, err
	}
	idxManifest, err := idx.IndexManifest()
	if err != nil {
		return res, err
	}

	// One SBOM per platform image, from the module graph linked into its binary.
	sboms := map[string][]byte{}
	for i, b := range binaries {
		p, err := imagebuild.Inspect(b)
		if err != nil {
			return res, err
		}
		doc, err := SBOM(b, version)
		if err != nil {
			return res, err
		}
		file := filepath.Join(o.OutDir, "sbom-"+p.OS+"-"+p.Arch+".cdx.json")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			return res, err
		}
		res.SBOMs[p.String()] = file
		sboms[p.String()] = doc
		res.PlatformDigests[p.String()] = idxManifest.Manifests[i].Digest.String()
	}

	// The chart, packaged at VERSION.
	chrt, err := loader.LoadDir(filepath.Join(o.Root, "charts", "platform-operators"))
	if err != nil {
		return res, err
	}
	if res.ChartPackage, err = chartutil.Save(chrt, o.OutDir); err != nil {
		return res, err
	}
	chartBytes, err := os.ReadFile(res.ChartPackage)
	if err != nil {
		return res, err
	}
	// Helm's provenance of the package, as `helm package --sign` writes it.
	var chartProv []byte
	if helmSigner != nil {
		if chartProv, err = helmSigner.Sign(res.ChartPackage); err != nil {
			return res, err
		}
		res.ChartProvenance = res.ChartPackage + ".prov"
		pub, err := helmSigner.PublicKeyring()
		if err != nil {
			return res, err
		}
		res.HelmPublicKeyring = filepath.Join(o.OutDir, "helm-signing.pubring.gpg")
		if err := os.WriteFile(res.HelmPublicKeyring, pub, 0o644); err != nil {
			return res, err
		}
	}

	// The workstation command, one archive per platform, and their checksums.
	if res.CLIArchives, res.CLIChecksums, err = CLIArchives(ctx, o.Root, binDir(o.Root), filepath.Join(o.OutDir, "cli"), version); err != nil {
		return res, err
	}

	// Provenance: what was built, from which commit, by what, with which inputs.
	prov, err := Provenance(ProvenanceInput{
		Version: version, Commit: o.Commit, Image: res.Image, IndexDigest: res.IndexDigest,
		Chart: res.Chart, ChartSHA256: sha256Hex(chartBytes), CLI: res.CLIArchives, Push: o.Push,
		Started: started, Finished: time.Now().UTC(),
	})
	if err != nil {
		return res, err
	}
	res.Provenance = filepath.Join(o.OutDir, "provenance.intoto.json")
	if err := os.WriteFile(res.Provenance, prov, 0o644); err != nil {
		return res, err
	}

	if !o.Push {
		signed := "unsigned: no COSIGN_KEY"
		if signer != nil {
			signed = "each manifest signed with " + o.SigningKey + "; SBOMs and provenance also as signed cosign attestations"
		}
		if helmSigner != nil {
			signed += "; the chart's Helm provenance " + res.ChartProvenance
		} else {
			signed += "; no Helm provenance: no " + HelmKeyringEnv
		}
		fmt.Fprintf(o.Out, "dry run (PUSH=1 publishes): would push\n  image  %s (index %s; %s)\n  chart  oci://%s\n  cli    %s (kubectl-platform for %s, and %s)\n  sbom   one CycloneDX document per platform image, attached as an OCI referrer\n  provenance SLSA v1 in-toto statement, attached to the index as an OCI referrer\n  signatures %s\nwrote %s\n",
			res.Image, res.IndexDigest, strings.Join(keys(res.PlatformDigests), ", "), res.Chart, res.CLI, strings.Join(CLIPlatforms, ", "), CLIChecksums, signed, o.OutDir)
		return res, nil
	}

	// Publish: the index, an SBOM referrer per platform image, the provenance referrer, the chart.
	nameOpts := []name.Option{}
	if o.PlainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(res.Image, nameOpts...)
	if err != nil {
		return res, err
	}
	remoteOpts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.WriteIndex(ref, idx, remoteOpts...); err != nil {
		return res, fmt.Errorf("pushing %s: %w", ref, err)
	}
	fmt.Fprintf(o.Out, "pushed %s@%s\n", res.Image, res.IndexDigest)
	for i, desc := range idxManifest.Manifests {
		p := desc.Platform.OS + "/" + desc.Platform.Architecture
		if _, err := attach(ref.Context(), desc, SBOMMediaType, sboms[p], remoteOpts); err != nil {
			return res, fmt.Errorf("attaching the SBOM of %s: %w", p, err)
		}
		_ = i
		fmt.Fprintf(o.Out, "attached SBOM (%s) to %s@%s\n", SBOMMediaType, p, desc.Digest)
	}
	idxDesc := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: idxDigest}
	if idxDesc.Size, err = idx.Size(); err != nil {
		return res, err
	}
	if _, err := attach(ref.Context(), idxDesc, ProvenanceMediaType, prov, remoteOpts); err != nil {
		return res, fmt.Errorf("attaching the provenance: %w", err)
	}
	fmt.Fprintf(o.Out, "attached provenance (%s) to the index\n", ProvenanceMediaType)

	clientOpts := []registry.ClientOption{registry.ClientOptWriter(o.Out), registry.ClientOptCredentialsFile(dockerConfigFile())}
	if o.PlainHTTP {
		clientOpts = append(clientOpts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(clientOpts...)
	if err != nil {
		return res, err
	}
	// The .prov goes with the chart as its provenance layer: `helm pull --verify` fetches both.
	pushed, err := rc.Push(chartBytes, res.Chart, registry.PushOptCreationTime(started.Format(time.RFC3339)), registry.PushOptProvData(chartProv))
	if err != nil {
		return res, fmt.Errorf("pushing the chart to oci://%s: %w", res.Chart, err)
	}
	res.ChartDigest = pushed.Manifest.Digest
	fmt.Fprintf(o.Out, "pushed chart oci://%s (%s)\n", res.Chart, res.ChartDigest)

	// The CLI: its archives and checksums as one OCI artifact beside the image.
	cliRef, err := name.ParseReference(res.CLI, nameOpts...)
	if err != nil {
		return res, err
	}
	cliArtifact, err := CLIArtifact(res.CLIArchives, res.CLIChecksums)
	if err != nil {
		return res, err
	}
	if err := remote.Write(cliRef, cliArtifact, remoteOpts...); err != nil {
		return res, fmt.Errorf("pushing %s: %w", cliRef, err)
	}
	cliDigest, err := cliArtifact.Digest()
	if err != nil {
		return res, err
	}
	res.CLIDigest = cliDigest.String()
	fmt.Fprintf(o.Out, "pushed %s@%s\n", res.CLI, res.CLIDigest)

	// Sign: every manifest pushed gets a cosign signature; the index and the chart the signed
	// provenance, each platform image its signed SBOM.
	predicate, err := ProvenancePredicate(ProvenanceInput{
		Version: version, Commit: o.Commit, Image: res.Image, IndexDigest: res.IndexDigest,
		Chart: res.Chart, ChartSHA256: sha256Hex(chartBytes), CLI: res.CLIArchives, Push: o.Push, Started: started, Finished: time.Now().UTC(),
	})
	if err != nil {
		return res, err
	}
	chartRef, err := name.ParseReference(res.Chart, nameOpts...)
	if err != nil {
		return res, err
	}
	if err := signRelease(ctx, signer.With(ociremote.WithRemoteOptions(remoteOpts...), ociremote.WithNameOptions(nameOpts...)), releaseDigests{
		Index: ref.Context().Digest(res.IndexDigest), Chart: chartRef.Context().Digest(res.ChartDigest), CLI: cliRef.Context().Digest(res.CLIDigest),
		Platforms: platformDigests(ref.Context(), idxManifest), SBOMs: sboms,
	}, predicate, o.Out); err != nil {
		return res, err
	}
	pub, err := signer.PublicKey()
	if err != nil {
		return res, err
	}
	res.PublicKey = filepath.Join(o.OutDir, "cosign.pub")
	if err := os.WriteFile(res.PublicKey, pub, 0o644); err != nil {
		return res, err
	}
	return res, nil
}

// releaseDigests names what a release pushed, by digest.
type releaseDigests struct {
	Index, Chart, CLI name.Digest
	// Platforms maps os/arch to that platform image's digest; SBOMs holds the same keys.
	Platforms map[string]name.Digest
	SBOMs     map[string][]byte
}

// signRelease signs every manifest of the release and attaches the signed attestations: the
// SLSA provenance to the index and to the chart, each platform image's CycloneDX SBOM to it.
func signRelease(ctx context.Context, s *signing.Signer, d releaseDigests, provenance []byte, out io.Writer) error {
	sign := func(what string, dg name.Digest) error {
		if err := s.Sign(ctx, dg, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "signed %s %s\n", what, dg)
		return nil
	}
	attest := func(what string, dg name.Digest, predicateType string, predicate []byte) error {
		if err := s.Attest(ctx, dg, predicateType, predicate); err != nil {
			return err
		}
		fmt.Fprintf(out, "attested %s (%s) to %s\n", what, predicateType, dg)
		return nil
	}
	if err := sign("the image index", d.Index); err != nil {
		return err
	}
	if err := attest("the provenance", d.Index, signing.PredicateSLSAProvenanceV1, provenance); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(d.Platforms)) {
		if err := sign("the "+p+" image", d.Platforms[p]); err != nil {
			return err
		}
		sbom, ok := d.SBOMs[p]
		if !ok {
			return fmt.Errorf("no SBOM for %s", p)
		}
		if err := attest("the SBOM", d.Platforms[p], signing.PredicateCycloneDX, sbom); err != nil {
			return err
		}
	}
	if err := sign("the chart", d.Chart); err != nil {
		return err
	}
	if err := attest("the provenance", d.Chart, signing.PredicateSLSAProvenanceV1, provenance); err != nil {
		return err
	}
	if err := sign("the CLI", d.CLI); err != nil {
		return err
	}
	return attest("the provenance", d.CLI, signing.PredicateSLSAProvenanceV1, provenance)
}

// platformDigests maps each os/arch of an index to its image's digest in repo.
func platformDigests(repo name.Repository, m *v1.IndexManifest) map[string]name.Digest {
	out := map[string]name.Digest{}
	for _, desc := range m.Manifests {
		if desc.Platform != nil {
			out[desc.Platform.OS+"/"+desc.Platform.Architecture] = repo.Digest(desc.Digest.String())
		}
	}
	return out
}

// attach pushes doc as a one-layer OCI artifact of mediaType whose subject is desc, into repo.
// Registries without the referrers API (Debian's docker-registry, older Harbor) get the
// referrers tag schema (sha256-<digest>), which go-containerregistry maintains on write.
func attach(repo name.Repository, subject v1.Descriptor, mediaType string, doc []byte, opts []remote.Option) (v1.Hash, error) {
	img, err := Artifact(subject, mediaType, doc)
	if err != nil {
		return v1.Hash{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	return d, remote.Write(repo.Digest(d.String()), img, opts...)
}

// Artifact is doc as an OCI artifact manifest (artifactType = the config media type) referring to
// subject.
func Artifact(subject v1.Descriptor, mediaType string, doc []byte) (v1.Image, error) {
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(doc, types.MediaType(mediaType))})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.MediaType(mediaType))
	return mutate.Subject(img, subject).(v1.Image), nil
}

// SBOM is the CycloneDX JSON SBOM of a Go binary: every module in its build info, the standard
// library included, with the main module at version.
func SBOM(binary, version string) ([]byte, error) {
	gen, err := cdxbin.NewGenerator(binary, cdxbin.WithLogger(zerolog.Nop()), cdxbin.WithIncludeStdlib(true),
		cdxbin.WithVersionOverride("v"+version))
	if err != nil {
		return nil, err
	}
	bom, err := gen.Generate()
	if err != nil {
		return nil, fmt.Errorf("SBOM of %s: %w", binary, err)
	}
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.Encode(bom); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ProvenanceInput is what the provenance statement records.
type ProvenanceInput struct {
	Version, Commit, Image, IndexDigest, Chart, ChartSHA256 string
	// CLI are the kubectl-platform archives, subjects by their sha256.
	CLI               []CLIArchive
	Push              bool
	Started, Finished time.Time
}

// Provenance is an in-toto v1 statement with a SLSA provenance v1 predicate for the image index
// and the chart package.
func Provenance(in ProvenanceInput) ([]byte, error) {
	if in.Commit == "" {
		return nil, errors.New("provenance needs the source commit")
	}
	algo, hexDigest, ok := strings.Cut(in.IndexDigest, ":")
	if !ok {
		return nil, fmt.Errorf("index digest %q has no algorithm", in.IndexDigest)
	}
	repo, _, _ := strings.Cut(in.Image, ":"+in.Version)
	chartName, _, _ := strings.Cut(in.Chart, ":"+in.Version)
	subjects := []any{
		map[string]any{"name": repo, "digest": map[string]string{algo: hexDigest}},
		map[string]any{"name": chartName, "digest": map[string]string{"sha256": in.ChartSHA256}},
	}
	for _, a := range in.CLI {
		subjects = append(subjects, map[string]any{"name": filepath.Base(a.File), "digest": map[string]string{"sha256": a.SHA256}})
	}
	st := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       subjects,
		"predicateType": SLSAProvenanceV1,
		"predicate":     provenancePredicate(in),
	}
	return json.MarshalIndent(st, "", "  ")
}

// ProvenancePredicate is the SLSA provenance v1 predicate alone: what the signed attestations
// carry (cosign's attestation package wraps it in a statement per subject).
func ProvenancePredicate(in ProvenanceInput) ([]byte, error) {
	if in.Commit == "" {
		return nil, errors.New("provenance needs the source commit")
	}
	return json.MarshalIndent(provenancePredicate(in), "", "  ")
}

func provenancePredicate(in ProvenanceInput) map[string]any {
	host, _ := os.Hostname()
	return map[string]any{
		"buildDefinition": map[string]any{
			"buildType": Source + "/blob/main/docs/release.md#build-type-v1",
			"externalParameters": map[string]any{
				"source":  "git+" + Source + "@" + in.Commit,
				"version": in.Version,
				"target":  "make release",
			},
			"internalParameters": map[string]any{
				"goVersion": runtime.Version(), "cgo": false, "trimpath": true, "platforms": []string{"linux/amd64", "linux/arm64"},
				"cliPlatforms": CLIPlatforms,
			},
			"resolvedDependencies": []any{
				map[string]any{"uri": "git+" + Source, "digest": map[string]string{"gitCommit": in.Commit}},
			},
		},
		"runDetails": map[string]any{
			"builder":  map[string]any{"id": Source + "/blob/main/Makefile#release@" + host},
			"metadata": map[string]any{"startedOn": in.Started.Format(time.RFC3339), "finishedOn": in.Finished.Format(time.RFC3339)},
		},
	}
}

// checkBinaryVersion runs a linux/amd64 binary of this machine's architecture with --version and
// refuses it unless it reports version; binaries of other architectures are checked through
// their build info stamp by the SBOM instead (they cannot run here).
func checkBinaryVersion(ctx context.Context, binary, version string) error {
	p, err := imagebuild.Inspect(binary)
	if err != nil {
		return fmt.Errorf("%s: %w (make manager-linux builds it)", binary, err)
	}
	if p != imagebuild.HostPlatform() {
		return nil
	}
	out, err := exec.CommandContext(ctx, binary, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w: %s", binary, err, out)
	}
	if f := strings.Fields(string(out)); len(f) < 2 || strings.TrimPrefix(f[1], "v") != version {
		return fmt.Errorf("%s --version says %q, not %s: rebuild it (make manager-linux)", binary, strings.TrimSpace(string(out)), version)
	}
	return nil
}

// dockerConfigFile is where docker, crane and go-containerregistry's default keychain read
// credentials: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
func dockerConfigFile() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker", "config.json")
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// binDir is where `make manager-linux` put the binaries: the Makefile's BIN (exported), else root/bin.
func binDir(root string) string {
	if b := os.Getenv("BIN"); b != "" {
		return b
	}
	return filepath.Join(root, "bin")
}
