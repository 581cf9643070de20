// Command ociimage writes chime's container image as an OCI image layout
// without a container engine: one layer holding the static binary, the
// host's CA certificates and a passwd/group file for user 10001, and an
// image config that matches the Dockerfile's runtime stage (user, env,
// volume, entrypoint). scripts/image.sh (make image) runs it; package
// deploy's TestOCIImage checks what it writes.
//
// It lives in the deploy/tools module so that go-containerregistry does not
// become a dependency of chime's own go.mod.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// uid is the Dockerfile's user: files under /var/lib/chime belong to it.
const uid = 10001

func main() {
	binary := flag.String("binary", "", "the static chime binary (CGO_ENABLED=0)")
	out := flag.String("out", "dist/oci", "directory of the OCI image layout to write (replaced)")
	caCerts := flag.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	version := flag.String("version", "dev", "org.opencontainers.image.version label and the layout's ref.name")
	flag.Parse()
	if err := run(*binary, *out, *caCerts, *version); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(binary, out, caCerts, version string) error {
	if binary == "" {
		return fmt.Errorf("-binary is required")
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	certs, err := os.ReadFile(caCerts)
	if err != nil {
		return fmt.Errorf("CA certificates: %w", err)
	}
	layerTar, err := rootfs(bin, certs)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	// OCI media types throughout (go-containerregistry defaults to
	// Docker's), so that OCI tools read the layout as an OCI image.
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = "amd64"
	// A fixed date keeps the image's digest a function of its contents.
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	// The Dockerfile's runtime stage, kept in step by TestOCIImage.
	// HEALTHCHECK has no place in an OCI config (it is Docker's extension),
	// and this image has no curl: docs/operations.md says how to probe
	// /readyz from the orchestrator instead.
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint: []string{"/usr/local/bin/chime"},
		Cmd:        []string{"serve"},
		WorkingDir: "/var/lib/chime",
		Env: []string{
			"PATH=/usr/local/bin",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			"CHIME_DATABASE_DRIVER=sqlite",
			"CHIME_DATABASE_DSN=/var/lib/chime/chime.db",
			"CHIME_API_ADDR=0.0.0.0:8080",
			"CHIME_API_TOKEN_FILE=/var/lib/chime/api.token",
			"CHIME_LOG_FORMAT=json",
		},
		Volumes:      map[string]struct{}{"/var/lib/chime": {}},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "chime",
			"org.opencontainers.image.version": version,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	}))
}

// rootfs is the image's only layer. No shell and no libc: the binary is
// static. That is the difference from the Dockerfile's Debian base, whose
// /bin/sh the shell task needs; see docs/operations.md.
func rootfs(bin, certs []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0).UTC()
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: owner, Gid: owner, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nchime:x:%d:%d:chime:/var/lib/chime:/sbin/nologin\n", uid, uid)
	group := fmt.Sprintf("root:x:0:\nchime:x:%d:\n", uid)
	steps := []func() error{
		func() error { return dir("etc/", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl/", 0o755, 0) },
		func() error { return dir("etc/ssl/certs/", 0o755, 0) },
		func() error { return file("etc/ssl/certs/ca-certificates.crt", 0o644, certs) },
		// Jobs and Go's os.TempDir need a writable /tmp.
		func() error { return dir("tmp/", 0o1777, 0) },
		func() error { return dir("usr/", 0o755, 0) },
		func() error { return dir("usr/local/", 0o755, 0) },
		func() error { return dir("usr/local/bin/", 0o755, 0) },
		func() error { return file("usr/local/bin/chime", 0o755, bin) },
		func() error { return dir("var/", 0o755, 0) },
		func() error { return dir("var/lib/", 0o755, 0) },
		func() error { return dir("var/lib/chime/", 0o750, uid) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
