# chime's container image: the static binary on a minimal base, run as a
# non-root user. Build: docker build -t chime:dev --build-arg VERSION=v0.1.0 .
# (podman and buildah read the same file). deploy/compose.yaml runs three
# nodes and PostgreSQL with it; docs/operations.md says what to back up.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# The module cache is a layer of its own: a code change does not download
# the dependencies again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=""
ARG DATE=""
# CGO off: chime's SQLite driver is pure Go, so the binary is static and
# runs on any base. -buildvcs=false: the build context may lack .git; the
# commit comes from the build argument instead.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/chimesched/chime/internal/buildinfo.Version=${VERSION} -X github.com/chimesched/chime/internal/buildinfo.Commit=${COMMIT} -X github.com/chimesched/chime/internal/buildinfo.Date=${DATE}" \
      -o /out/chime ./cmd/chime \
 && mkdir -p /out/data

# Debian's slim base rather than scratch: shell jobs (the `shell` task) need
# /bin/sh and the tools they call, and the httpcall and email tasks need CA
# certificates. Operators who run no shell jobs can swap in
# gcr.io/distroless/static; the binary needs nothing else.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates tzdata curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/chime --create-home chime
COPY --from=build /out/chime /usr/local/bin/chime
# Configuration by CHIME_* variables (README, "Configuration"). The
# defaults below make a single node on a SQLite file in the volume; set
# CHIME_DATABASE_DRIVER and CHIME_DATABASE_DSN for MariaDB or PostgreSQL.
# The API listens on every interface, so a token is required: set
# CHIME_API_TOKEN, or the node writes one to CHIME_API_TOKEN_FILE.
ENV CHIME_DATABASE_DRIVER=sqlite \
    CHIME_DATABASE_DSN=/var/lib/chime/chime.db \
    CHIME_API_ADDR=0.0.0.0:8080 \
    CHIME_API_TOKEN_FILE=/var/lib/chime/api.token \
    CHIME_LOG_FORMAT=json
VOLUME ["/var/lib/chime"]
WORKDIR /var/lib/chime
USER 10001:10001
EXPOSE 8080
# /readyz: the node answers and its database does. Docker stops with
# SIGTERM and waits --stop-timeout (compose: stop_grace_period), which
# must exceed CHIME_SHUTDOWN_GRACE (30s) for running jobs to finish.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/readyz >/dev/null || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/chime"]
CMD ["serve"]
