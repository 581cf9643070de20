# Day-to-day commands; the README's two commands need none of this.
.PHONY: help build image helm/lint run test test/race walkthrough bench bench/console screenshots tidy vet lint fixture/quartz fixture/quartz-store fixture/quartzblobs

MYSQL_DSN ?= chime_test:chime_test@tcp(127.0.0.1:3306)/chime_test

help: ## list the targets
	@grep -E '^[a-z/]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# A release build: make build VERSION=v0.2.0 (and a row in releases.tsv).
# The commit and date are stamped too, since a git worktree or
# GOFLAGS=-buildvcs=false leaves the binary without Go's own VCS stamp.
VERSION ?= dev
BUILDINFO = github.com/chimesched/chime/internal/buildinfo
LDFLAGS = -s -w -X $(BUILDINFO).Version=$(VERSION) \
	-X $(BUILDINFO).Commit=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(BUILDINFO).Date=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build: ## build the static chime binary into ./bin/chime (VERSION=v0.2.0 for a release)
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/chime ./cmd/chime

# No container engine needed: deploy/tools/ociimage writes the image as an
# OCI layout (docs/operations.md says how to load or push it).
image: ## build the static binary and its container image as an OCI layout in dist/oci (VERSION=v0.2.0)
	VERSION=$(VERSION) ./scripts/image.sh dist

# helm is pinned in deploy/tools/go.mod, like golangci-lint in
# internal/tools: the first run builds it (minutes).
HELM = go tool -modfile=deploy/tools/go.mod helm

helm/lint: ## helm lint and helm template on deploy/helm/chime
	$(HELM) lint --strict deploy/helm/chime --set database.dsn=x,apiToken=x
	$(HELM) template chime deploy/helm/chime --set database.dsn=x,apiToken=x >/dev/null

run: ## run a node on the embedded SQLite file chime.db
	go run ./cmd/chime serve

test: ## the whole suite, as CI runs it (starts MariaDB if needed)
	./scripts/test.sh

test/race: test ## same as test: the suite always runs with -race

walkthrough: ## follow the README's quick start with a real binary and server
	./scripts/walkthrough.sh

vet: ## go vet and gofmt
	go vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)

# golangci-lint is pinned in a module of its own, so its dependencies stay
# out of chime's go.mod; the first run builds it (minutes), later runs reuse
# the build cache.
LINT = go tool -modfile=internal/tools/go.mod golangci-lint

lint: ## golangci-lint with .golangci.yml (errcheck, staticcheck, revive, ...)
	$(LINT) run ./...

bench: ## engine benchmarks on MariaDB (minutes; see docs/benchmarks.md)
	CHIME_TEST_MYSQL_DSN='$(MYSQL_DSN)' go test -run XXX -bench . -benchtime=1x -timeout 30m ./scheduleengine/ ./taskengine/

bench/console: ## console page render times over 1,000,000 jobs on MariaDB (minutes)
	CHIME_TEST_MYSQL_DSN='$(MYSQL_DSN)' go test -run XXX -bench BenchmarkPages -benchtime=100x -timeout 60m ./console/

screenshots: ## retake the console pictures in docs/ (needs chromium)
	CHIME_CONSOLE_SCREENSHOTS=$(CURDIR)/docs go test -count=1 -run 'TestBrowser/sqlite' ./console/

QUARTZ_JAR ?= /usr/share/java/quartz2.jar

fixture/quartz: ## regenerate quartzcron's fire times from real Quartz 2.3.2 (a JDK and Debian's libquartz2-java; minutes)
	d=$$(mktemp -d) && javac -nowarn -d $$d -cp $(QUARTZ_JAR) quartzcron/testdata/gen/QuartzFixture.java && \
	java -cp $(QUARTZ_JAR):$$d QuartzFixture quartzcron/testdata/quartz_fixture.json; rc=$$?; rm -rf $$d; exit $$rc

QUARTZ_STORE_URL ?= mysql://root@127.0.0.1:3306

fixture/quartz-store: ## regenerate quartzimport's Quartz job store dump with real Quartz 2.3.2 (a JDK, libquartz2-java, MariaDB; seconds)
	quartzimport/testdata/gen/gen.sh '$(QUARTZ_STORE_URL)'

fixture/quartzblobs: ## regenerate quartzimport's calendar and job-data BLOBs with real Quartz 2.3.2 (a JDK and Debian's libquartz2-java)
	d=$$(mktemp -d) && javac -nowarn -d $$d -cp $(QUARTZ_JAR) quartzimport/testdata/blobs/gen/QuartzBlobs.java && \
	java -cp $(QUARTZ_JAR):$$d QuartzBlobs quartzimport/testdata/blobs; rc=$$?; rm -rf $$d; exit $$rc

tidy: ## go mod tidy (chime's module and the tools module)
	go mod tidy
	cd internal/tools && go mod tidy
