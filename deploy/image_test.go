package deploy

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ociDescriptor, ociManifest and ociConfig are the parts of the OCI image
// spec this test reads. It parses the layout with the standard library
// rather than go-containerregistry, which wrote it: a second reader.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string              `json:"User"`
		Entrypoint []string            `json:"Entrypoint"`
		Cmd        []string            `json:"Cmd"`
		Env        []string            `json:"Env"`
		Volumes    map[string]struct{} `json:"Volumes"`
		WorkingDir string              `json:"WorkingDir"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// blob reads a blob of the layout and checks that its content has the
// digest and size its descriptor claims.
func blob(t *testing.T, dir string, d ociDescriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	require.True(t, ok, d.Digest)
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexDigest))
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	require.Equal(t, hexDigest, hex.EncodeToString(sum[:]), "blob content matches its digest")
	require.Equal(t, d.Size, int64(len(b)), "blob size")
	return b
}

// TestOCIImage builds the image as `make image` does (scripts/image.sh:
// the static binary, then deploy/tools/ociimage) and reads the OCI layout
// back: the config says what the Dockerfile's runtime stage says, the
// layer holds the binary, the CA bundle and user 10001, and the binary
// taken out of the layer runs.
func TestOCIImage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds chime and the image writer")
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skip("no CA bundle at /etc/ssl/certs/ca-certificates.crt to put in the image")
	}
	dist := t.TempDir()
	cmd := exec.Command("../scripts/image.sh", dist)
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-imagetest")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "scripts/image.sh: %s", out)
	dir := filepath.Join(dist, "oci")

	layoutFile, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	require.NoError(t, err)
	require.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(layoutFile))
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal([]byte(read(t, filepath.Join(dir, "index.json"))), &index))
	require.Len(t, index.Manifests, 1)
	require.Equal(t, "application/vnd.oci.image.manifest.v1+json", index.Manifests[0].MediaType)
	require.Equal(t, "v0.0.0-imagetest", index.Manifests[0].Annotations["org.opencontainers.image.ref.name"])

	var manifest ociManifest
	require.NoError(t, json.Unmarshal(blob(t, dir, index.Manifests[0]), &manifest))
	require.Equal(t, "application/vnd.oci.image.config.v1+json", manifest.Config.MediaType)
	var config ociConfig
	require.NoError(t, json.Unmarshal(blob(t, dir, manifest.Config), &config))
	require.Equal(t, "linux", config.OS)
	require.Equal(t, "amd64", config.Architecture)
	c := config.Config
	require.Equal(t, "10001:10001", c.User)
	require.Equal(t, []string{"/usr/local/bin/chime"}, c.Entrypoint)
	require.Equal(t, []string{"serve"}, c.Cmd)
	require.Equal(t, "/var/lib/chime", c.WorkingDir)
	require.Contains(t, c.Volumes, "/var/lib/chime")

	// The env is the Dockerfile's, variable for variable.
	df := read(t, "../Dockerfile")
	envBlock := regexp.MustCompile(`(?m)^ENV ((?:.*\\\n)*.*)$`).FindStringSubmatch(df)
	require.NotNil(t, envBlock, "the Dockerfile's ENV")
	dockerEnv := strings.Fields(strings.ReplaceAll(envBlock[1], "\\\n", " "))
	require.NotEmpty(t, dockerEnv)
	for _, kv := range dockerEnv {
		require.Contains(t, c.Env, kv, "the Dockerfile sets it")
	}
	for _, kv := range c.Env {
		if strings.HasPrefix(kv, "CHIME_") {
			require.Contains(t, dockerEnv, kv, "the Dockerfile does not set it")
		}
	}

	require.Len(t, manifest.Layers, 1)
	require.Len(t, config.RootFS.DiffIDs, 1)
	require.Equal(t, "application/vnd.oci.image.layer.v1.tar+gzip", manifest.Layers[0].MediaType)
	layer := blob(t, dir, manifest.Layers[0])
	zr, err := gzip.NewReader(strings.NewReader(string(layer)))
	require.NoError(t, err)
	// The diff id is the digest of the uncompressed layer.
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(zr, h))
	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		files[hdr.Name] = hdr
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			contents[hdr.Name] = b
		}
	}
	_, err = io.Copy(io.Discard, zr)
	require.NoError(t, err)
	require.Equal(t, config.RootFS.DiffIDs[0], "sha256:"+hex.EncodeToString(h.Sum(nil)))

	bin := files["usr/local/bin/chime"]
	require.NotNil(t, bin, "the binary at /usr/local/bin/chime")
	require.Equal(t, int64(0o755), bin.Mode&0o777)
	distBin, err := os.ReadFile(filepath.Join(dist, "chime"))
	require.NoError(t, err)
	require.Equal(t, distBin, contents["usr/local/bin/chime"], "the layer's binary is the one built")
	hostCerts, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	require.NoError(t, err)
	require.Equal(t, hostCerts, contents["etc/ssl/certs/ca-certificates.crt"])
	require.Regexp(t, `(?m)^chime:x:10001:10001:`, string(contents["etc/passwd"]))
	require.Regexp(t, `(?m)^chime:x:10001:`, string(contents["etc/group"]))
	data := files["var/lib/chime/"]
	require.NotNil(t, data, "the volume's directory")
	require.Equal(t, 10001, data.Uid, "the volume belongs to the image's user")
	require.Equal(t, int64(0o1777), files["tmp/"].Mode&0o7777)

	// The binary, taken out of the layer, runs: it is static (no libc in
	// the image) and reports the version it was built with.
	extracted := filepath.Join(t.TempDir(), "chime")
	require.NoError(t, os.WriteFile(extracted, contents["usr/local/bin/chime"], 0o755))
	out, err = exec.Command(extracted, "version").CombinedOutput()
	require.NoError(t, err, "chime version: %s", out)
	require.Contains(t, string(out), "v0.0.0-imagetest")
	out, err = exec.Command("go", "version", "-m", extracted).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^\s+build\s+CGO_ENABLED=0$`, string(out), "a static binary")
}
