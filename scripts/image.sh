#!/usr/bin/env bash
# Builds chime's container image without a container engine: the static
# binary (as `make build` does) and, from it, an OCI image layout written by
# deploy/tools/ociimage (go-containerregistry, in a module of its own so
# chime's go.mod does not carry it). `make image` runs it; the result loads
# with e.g. `skopeo copy oci:dist/oci:dev docker-daemon:chime:dev`
# (docs/operations.md).
#   scripts/image.sh [DIR]   writes DIR/chime and DIR/oci (default: dist)
#   VERSION=v0.2.0 scripts/image.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-dist}
version=${VERSION:-dev}
mkdir -p "$dir"
buildinfo=github.com/chimesched/chime/internal/buildinfo
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath \
  -ldflags "-s -w -X $buildinfo.Version=$version -X $buildinfo.Commit=$(git rev-parse HEAD 2>/dev/null || true) -X $buildinfo.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -o "$dir/chime" ./cmd/chime
bin=$(cd "$dir" && pwd)/chime
out=$(cd "$dir" && pwd)/oci
go run -C deploy/tools ./ociimage -binary "$bin" -out "$out" -version "$version"
echo "wrote $out (image $version)" >&2
