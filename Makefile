# fenceline — see README.md. Everything a target needs is built or checked here.
GO        ?= go
BIN       := bin
FENCELINE := $(BIN)/fenceline
# The chaos build (-tags chaos,failpoints) adds the harness (chaos, validate, soak), the
# fault hooks, the failpoints and the deliberately broken variants; the default build has
# none of them.
CHAOS_BIN := $(BIN)/fenceline-chaos
CHAOS_TAGS := chaos,failpoints

DURATION  ?= 60s
NODES     ?= 3
NEMESIS   ?= all
SCHEDULE  ?= random
SEED      ?= $(shell date +%s)
BACKEND   ?= local
WORKLOAD  ?= listener
STORE     ?= redis
LEASE_TTL ?= 2s
OUT       ?= reports/runs
BUDGET    ?=
# ETCD=1 makes `make images` build the etcd image too (fenceline-etcd:dev), which the
# docker backend needs for the targets that elect through etcd.
ETCD      ?=
# NODE_CMD runs that command as each node instead of fenceline's own (docs/node-protocol.md).
NODE_CMD  ?=

.PHONY: all build test lint bench chaos check-deps check-test-deps check-postgres clean images docker-prune validate validate-short zoo bench-checker bench-checker-coarse soak campaign targets topologies mutants

all: build

# The go command stamps the VCS revision into a binary built in a git checkout (`fenceline
# version`, run.json); it does not in a git worktree (.git is a file there) or with
# GOFLAGS=-buildvcs=false, so the revision is passed as well, and its stamp wins.
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED := $(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo false || echo true)
BUILDINFO = github.com/fenceline/fenceline/internal/buildinfo
LDFLAGS  := $(if $(REVISION),-ldflags '-X $(BUILDINFO).Revision=$(REVISION) -X $(BUILDINFO).Modified=$(MODIFIED)')

build:
	CGO_ENABLED=0 $(GO) build -trimpath $(LDFLAGS) -o $(FENCELINE) ./cmd/fenceline
	CGO_ENABLED=0 $(GO) build -tags $(CHAOS_TAGS) -trimpath $(LDFLAGS) -o $(CHAOS_BIN) ./cmd/fenceline

# check-deps installs redis-server from Debian's packages when it is missing and we are
# root; otherwise it says exactly what to install. check-test-deps does the same for what
# the tests need besides: chromium (the HTML report is opened in a real browser) and
# xmllint (junit.xml is validated against its schema).
check-deps:
	@$(call need,redis-server,redis-server)

check-test-deps: check-deps check-postgres
	@$(call need,chromium,chromium)
	@$(call need,xmllint,libxml2-utils)
	@# etcd for the etcd targets and topology (internal/etcdserver).
	@$(call need,etcd,etcd-server)
	@# redis-py for the example Python node (docs/node-protocol.md), which the tests run.
	@dpkg -s python3-redis >/dev/null 2>&1 || $(call need,python3-redis-for-examples/python-node,python3-redis)
	@# Node.js and Debian's node-redis for the example Node.js listener (examples/node-listener).
	@$(call need,node,nodejs)
	@dpkg -s node-redis >/dev/null 2>&1 || $(call need,node-redis-for-examples/node-listener,node-redis)

# check-postgres: the PostgreSQL server binaries live outside PATH (Debian's
# /usr/lib/postgresql/VERSION/bin), so they are looked for there.
check-postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || $(call need,postgres-binaries-in-usr-lib-postgresql,postgresql)

# need COMMAND,PACKAGE
need = command -v $(1) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "$(1) missing: installing $(2) from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	  else \
	    echo "$(1) is not installed: run 'sudo apt-get install -y $(2)'" >&2; exit 2; \
	  fi; }

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting" >&2; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags chaos ./...
	$(GO) vet -tags $(CHAOS_TAGS) ./...

test: check-test-deps lint
	$(GO) test -tags $(CHAOS_TAGS) -race -timeout 25m ./...
	@# The default build too, where it differs: its commands and its node refuse chaos.
	$(GO) test -race -timeout 10m ./cmd/fenceline/ ./node/ ./workloads/ ./internal/failpoint/

bench: check-deps
	$(GO) test -tags $(CHAOS_TAGS) -run '^$$' -bench . -benchtime 1x -timeout 30m ./...

# bench-checker writes a simulated 1,000,000-operation run and times `fenceline check
# --write` on it, the whole command: loading, checking, writing the report.
bench-checker: build
	@d=$$(mktemp -d) && trap 'rm -rf $$d' EXIT && \
	FENCELINE_WRITE_RUN=$$d/run FENCELINE_OPS=1000000 $(GO) test -count=1 -run TestWriteBigRun ./checker/ >/dev/null && \
	/usr/bin/time -f '1M-operation history: %e s wall, %U s user + %S s sys CPU, %M KB peak RSS' $(FENCELINE) check --write $$d/run >/dev/null

# bench-checker-coarse times `fenceline check --write` on a simulated register-workload run of
# 236,000 operations (8 clients) whose timestamps are rounded to 16 ms, as a node with a
# coarse clock records them: dozens of operations share each instant.
bench-checker-coarse: build
	@d=$$(mktemp -d) && trap 'rm -rf $$d' EXIT && \
	FENCELINE_WRITE_COARSE_RUN=$$d/run FENCELINE_OPS=236000 $(GO) test -count=1 -run TestWriteCoarseRun ./checker/ >/dev/null && \
	/usr/bin/time -f 'coarse-clock register history: %e s wall, %U s user + %S s sys CPU, %M KB peak RSS' $(FENCELINE) check --write $$d/run >/dev/null

chaos: check-deps $(if $(filter postgres,$(STORE)),check-postgres) build $(if $(filter docker,$(BACKEND)),images)
	$(CHAOS_BIN) chaos --duration $(DURATION) --nodes $(NODES) --nemesis $(NEMESIS) --schedule $(SCHEDULE) \
	  --seed $(SEED) --backend $(BACKEND) --workload $(WORKLOAD) --lease-ttl $(LEASE_TTL) --out $(OUT) \
	  $(if $(BUDGET),--budget $(BUDGET)) $(if $(NODE_CMD),--node-cmd '$(NODE_CMD)') \
	  --store $(STORE)

# images builds the docker backend's images from this checkout, FROM scratch: nothing is
# pulled; an image whose inputs did not change is not rebuilt.
images: check-deps $(if $(filter postgres,$(STORE)),check-postgres)
	$(GO) run ./docker/cmd/images $(if $(filter postgres,$(STORE)),-postgres) $(if $(ETCD),-etcd)

# docker-prune removes the containers and networks that killed runs left behind (images stay).
docker-prune:
	$(GO) run ./docker/cmd/images -prune

# validate runs every broken variant under the faults that expose it, and the reference
# under the same faults and seeds: it fails on any false alarm of the reference and on a
# detection rate under 95% (about 40 minutes with the defaults).
SEEDS ?= 3
validate: check-deps check-postgres build
	$(CHAOS_BIN) validate --seeds $(SEEDS) --duration $(DURATION) --parallel $(PARALLEL)

# validate-short is the CI version: one seed of every variant (all must be caught), 30 s
# each: the slowest first violation of `make validate` came at 18 s (15.8 s with boundary
# starts: string-compare needs its run's tokens to reach the next power of ten, by the
# fourth term at the latest). Two runs at once: a run mostly waits (its faults' holds,
# the probes), and CI has two cores. Each run stops at its first violation: whether a
# variant is caught needs no more (the reference, found valid, runs its 30 s).
validate-short: check-deps check-postgres build
	$(CHAOS_BIN) validate --seeds 1 --duration 30s --variants all --parallel 2 --stop-at-violation

# zoo measures the known-bug zoo (docs/known-bugs.md): each zoo variant and the
# reference at the default chaos settings (every fault, random schedule, the probes that
# open it; DURATION), SEEDS seeds each (default 20), each run stopped at its first
# violation (the reference runs its course): about 2 hours, 1 at PARALLEL=2, into OUT
# (default reports/zoo).
zoo: check-deps build
	$(CHAOS_BIN) validate --zoo --seeds $(if $(call given,SEEDS),$(SEEDS),20) --seed $(if $(call given,SEED),$(SEED),1) \
	  --duration $(DURATION) --parallel $(PARALLEL) --out $(if $(call given,OUT),$(OUT),reports/zoo)

# soak runs SEEDS seeded all-fault chaos runs of DURATION each (defaults 20 x 5m, seeds
# SEED..SEED+SEEDS-1, SEED 1) into OUT (default reports/soak), one subprocess per run, and
# sums them up in one table. Finished runs are not run again. SHARD=i/N runs only the i-th
# of N disjoint slices; `fenceline soak-report DIR...` merges the shards.
SHARD ?= 1/1
given = $(filter command line environment,$(origin $(1)))
soak: check-deps build
	$(CHAOS_BIN) soak --seeds $(if $(call given,SEEDS),$(SEEDS),20) --seed $(if $(call given,SEED),$(SEED),1) --shard $(SHARD) \
	  --duration $(if $(call given,DURATION),$(DURATION),5m) --out $(if $(call given,OUT),$(OUT),reports/soak)

# campaign is the false-alarm campaign (docs/campaign.md): a soak of SEEDS runs (default
# 300) of DURATION (default 30s) cut into one block per profile of
# experiment/soak/campaign.profiles (the reference, the fenced targets and the Python node
# in every configuration the docs call safe, both backends), into OUT (default
# reports/campaign). Every run must be valid. SHARD as for soak; it builds the images and
# needs PostgreSQL and Debian's python3-redis.
campaign: check-test-deps build
	$(GO) run ./docker/cmd/images -postgres
	$(CHAOS_BIN) soak --profiles experiment/soak/campaign.profiles --seeds $(if $(call given,SEEDS),$(SEEDS),300) \
	  --seed $(if $(call given,SEED),$(SEED),1) --shard $(SHARD) --duration $(if $(call given,DURATION),$(DURATION),30s) \
	  --out $(if $(call given,OUT),$(OUT),reports/campaign)

# targets runs every design (the targets of package targets, each plain and fenced, and
# the Python and Node.js example nodes) under the same seeds and faults (defaults: 3
# seeds x 60s, all faults, plus one run per design with graceful stops only; PARALLEL
# runs at once), writes reports/targets.md and the comparison table of docs/targets.md.
# Its runs land in reports/targets/.
targets: check-test-deps build
	$(CHAOS_BIN) targets --seeds $(SEEDS) --duration $(DURATION) --nemesis $(NEMESIS) --parallel $(PARALLEL) \
	  --out reports/targets --table reports/targets.md --doc docs/targets.md

# mutants generates mutants of the safety-critical code (the Lua of acquire, renew, release
# and commit; the elector's deadline and step-down logic and the listener's stale-token
# handling, through gremlins) and runs each through its package's unit tests and one
# default chaos run stopped at its first violation (a second seed if it survives), into
# reports/mutants.md (docs/mutants.md). MUTANTS=N runs an even sample of N; PARALLEL
# mutants at once, beside the unmutated code as a control. Hours for all: RESUME=1 goes
# on from where a run of the same code into the same OUT was cut short. ONLY=ID,ID runs
# just those mutants (a whole run's survivors again, after a check was added).
MUTANTS  ?= 0
GREMLINS := $(BIN)/gremlins
$(GREMLINS):
	GOBIN=$(abspath $(BIN)) $(GO) install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0

mutants: check-deps build $(GREMLINS)
	$(CHAOS_BIN) mutants --gremlins $(GREMLINS) --sample $(MUTANTS) --parallel $(PARALLEL) --duration $(DURATION) \
	  $(if $(call given,RESUME),--resume) $(if $(ONLY),--only '$(ONLY)') $(if $(call given,OUT),--out $(OUT),--out reports/mutants --report reports/mutants.md)

# topologies runs the reference on each Redis topology (single, sentinel, cluster) with
# each mitigation under each Redis fault, SEEDS seeds x DURATION each, PARALLEL at once,
# and writes the table to reports/topologies.md (the runs stay in reports/topologies/).
# TOPOLOGY=cluster runs that topology's rows alone and merges them into the table.
# BACKEND=docker runs them on containers, into reports/topologies-docker(.md).
PARALLEL ?= 1
TOPOLOGY ?=
TOPO_OUT = reports/topologies$(if $(filter docker,$(BACKEND)),-docker)
topologies: check-deps build $(if $(filter docker,$(BACKEND)),images)
	$(CHAOS_BIN) topologies --seeds $(SEEDS) --duration $(DURATION) --parallel $(PARALLEL) --backend $(BACKEND) \
	  $(if $(TOPOLOGY),--topology $(TOPOLOGY)) --out $(TOPO_OUT) --table $(TOPO_OUT).md

clean:
	rm -rf $(BIN) docker/build
