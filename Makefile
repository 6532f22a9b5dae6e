# Strata build, test and benchmark targets. `make test` is the README's test
# command and what CI runs (through `make ci`).

GO          ?= go
PKGS        ?= ./...
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
COMMIT      := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
VERSION     := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.commit=$(COMMIT) -X main.version=$(VERSION)
# Bounded fuzzing: every fuzz target runs this long under `make fuzz`.
FUZZTIME    ?= 10s
# `make test` must stay well under 10 minutes on 2 cores.
TEST_TIMEOUT ?= 9m

.PHONY: build test fuzz bench lint ci chaos bench-wal wal-bound

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/strata ./cmd/strata

test:
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(PKGS)

# Runs every Fuzz* target found in the tree for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1s $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

# `make ci` also runs the console's browser test when Chromium is there
# (.ci/run installs it), the promtool checks of deploy/prometheus when
# promtool is there (.ci/run installs Debian's prometheus; `make test`
# runs them too, in go test ./deploy/, and with promtool also parses the
# dashboard's queries), and the compose smoke when Docker works.
ci: lint test
	@if command -v $(PROMTOOL) >/dev/null 2>&1; then $(MAKE) promtool-check; \
	else echo "ci: no promtool; skipping make promtool-check (and go test ./deploy/ skipped its promtool checks)"; fi
	@if command -v chromium >/dev/null 2>&1 || [ -n "$$STRATA_CHROMIUM" ]; then \
	  shots=$$(mktemp -d) && $(MAKE) test-ui UI_SCREENSHOTS=$$shots; status=$$?; rm -rf "$$shots"; exit $$status; \
	else echo "ci: no chromium; skipping make test-ui"; fi
	@if command -v docker-compose >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then \
	  $(MAKE) compose-smoke; \
	else echo "ci: no working docker and docker-compose; skipping make compose-smoke"; fi

# The web console (/ui) in headless Chromium against `strata dev` on
# 127.0.147-149 (test/ui): overview, a job to COMPLETED, cancel, a killed
# leader, a read-only token; saves docs/screenshots/*.png and logs the
# page weight and first paint.
# UI_SCREENSHOTS: where the screenshots go (make ci: a scratch dir).
UI_SCREENSHOTS ?= $(CURDIR)/docs/screenshots
.PHONY: test-ui
test-ui: build
	STRATA_UI=1 STRATA_BIN="$(CURDIR)/bin/strata" STRATA_UI_SCREENSHOTS="$(UI_SCREENSHOTS)" $(GO) test -count=1 -v -timeout 10m -run '^TestConsole_' ./test/ui/

# NodeWAL throughput and latency against raw fdatasync, write+fdatasync under a
# mutex, bbolt Batch and raft-boltdb, all in one run on the disk holding
# STRATA_WAL_BENCH_DIR (default: TMPDIR); renders BENCHMARKS.md's NodeWAL table.
BENCH_WAL_TIME  ?= 1s
BENCH_WAL_COUNT ?= 3
bench-wal:
	@dir=$$(mktemp -d "$${STRATA_WAL_BENCH_DIR:-$${TMPDIR:-/tmp}}/strata-bench-wal.XXXXXX") || exit 1; \
	echo "bench-wal: measuring in $$dir"; \
	STRATA_WAL_BENCH_DIR=$$dir $(GO) test -run '^$$' -bench '^Benchmark(Append|Compare)$$' -benchmem \
	  -benchtime $(BENCH_WAL_TIME) -count $(BENCH_WAL_COUNT) -timeout 30m ./wal/ > $$dir/bench.txt; \
	status=$$?; cat $$dir/bench.txt; \
	if [ $$status -eq 0 ]; then $(GO) run ./wal/internal/benchtable -in $$dir/bench.txt -dir $$dir -out BENCHMARKS.md; status=$$?; fi; \
	rm -rf "$$dir"; exit $$status

# Strata against etcd on this machine: a 3-member etcd (Debian's etcd-server,
# installed if missing; fsync on) and a `strata dev` cluster, one 200-byte
# write per request at 1, 64 and 256 clients plus Strata batched; rewrites
# BENCHMARKS.md's "## bench-compare" section. Each run lasts BENCH_DURATION
# (default 10s); the other knobs are listed in test/bench/compare.sh.
.PHONY: bench-compare
bench-compare:
	GO="$(GO)" test/bench/compare.sh

# The progress data plane against the HTTP progress call: `strata dev`
# (from `make build`) without workers, `strata bench progress` over UDP and
# over HTTP BENCH_RUNS times (default 3), then UDP at half rate, clean and
# with 5 % loss + 5 % dup + reorder injected; rewrites BENCHMARKS.md's
# "## bench-progress" section. Knobs: test/bench/progress.sh.
.PHONY: bench-progress
bench-progress: build
	GO="$(GO)" STRATA_BIN="$(CURDIR)/bin/strata" test/bench/progress.sh

# Regional ↔ global anti-entropy end to end: `strata dev` (from `make
# build`) without workers, AE_JOBS jobs (default 100000; AE_JOBS=1000000 for
# the issue's figure) loaded into one region, then idle rounds and rounds
# repairing AE_DIFFS (default 10) forwards lost by fault injection, and the
# tree rebuild of a restarted manager; prints a Markdown table for
# BENCHMARKS.md's "## Anti-entropy (issue 13)". Knobs: test/bench/antientropy.sh.
AE_JOBS ?= 100000
.PHONY: bench-antientropy
bench-antientropy: build
	AE_JOBS="$(AE_JOBS)" STRATA_BIN="$(CURDIR)/bin/strata" test/bench/antientropy.sh

# Long crash test: WAL_KILL_CYCLES SIGKILLs of a NodeWAL writer process, each
# followed by recovery and a check of every acknowledged record; prints the
# seed (STRATA_WAL_CRASH_SEED=<seed> replays a schedule).
WAL_KILL_CYCLES ?= 1000
chaos:
	STRATA_WAL_KILL_CYCLES=$(WAL_KILL_CYCLES) $(GO) test -race -count=1 -run '^TestCrash' -v -timeout 30m ./wal/

# deploy/prometheus checked by promtool (Debian: apt-get install prometheus):
# the scrape configuration, the alert rules and their unit tests.
# `go test ./deploy/` runs the same checks when promtool is installed.
PROMTOOL ?= promtool
.PHONY: promtool-check
promtool-check:
	@command -v $(PROMTOOL) >/dev/null 2>&1 || { echo "promtool-check: $(PROMTOOL) not found (apt-get install prometheus)"; exit 1; }
	cd deploy/prometheus && $(PROMTOOL) check config prometheus.yml
	cd deploy/prometheus && $(PROMTOOL) check rules rules/strata.rules.yml
	cd deploy/prometheus/rules && $(PROMTOOL) test rules strata.rules.test.yml

# The node image (deploy/docker/Dockerfile): FROM scratch with bin/strata, a
# non-root user (65532) and a /data volume. The build context is a staging
# directory holding only what the image copies.
IMAGE     ?= strata
IMAGE_TAG ?= $(VERSION)
.PHONY: image
image: build
	rm -rf dist/image && mkdir -p dist/image/data dist/image/tmp && chmod 1777 dist/image/tmp
	cp bin/strata deploy/docker/passwd deploy/docker/group dist/image/
	docker build -f deploy/docker/Dockerfile -t $(IMAGE):$(IMAGE_TAG) -t $(IMAGE):latest dist/image

# Bounded disk (issue 16 §2): WAL_BOUND_EVENTS events pushed through a
# manager of a 6-node in-process cluster at LOCAL; its NodeWAL must end
# within 2x the ledger file, and a restart must lose nothing. Logs the
# NodeWAL and ledger sizes (`make test` runs the same test with 20k).
WAL_BOUND_EVENTS ?= 1000000
wal-bound:
	STRATA_WAL_BOUND_EVENTS=$(WAL_BOUND_EVENTS) $(GO) test -count=1 -run '^TestNode_NodeWALStaysBoundedAndLosesNothing$$' -v -timeout 90m ./cluster/

# The TLS three-region cluster in Docker (deploy/compose, issue 16): per
# region a gate, three managers and two workers on the region's network,
# the gates also on a WAN network; TLS, gossip encryption, hashed tokens.
# compose-up builds the image, writes deploy/compose/.secrets (strata tls,
# strata keyring) and waits until every node is ready; compose-down
# removes containers, networks, volumes and .secrets. compose-smoke and
# compose-chaos start a cluster, run test/compose against it and always
# take it down (COMPOSE_KEEP=1 keeps it). compose-chaos: load while
# containers are killed, paused and disconnected for
# COMPOSE_CHAOS_DURATION; prints its seed (COMPOSE_CHAOS_SEED=<seed>
# replays the fault schedule) and the figures for deploy/README.md.
COMPOSE_SH             := deploy/compose/compose.sh
COMPOSE_CHAOS_DURATION ?= 3m
COMPOSE_CHAOS_SEED     ?=
.PHONY: compose-up compose-down compose-smoke compose-chaos
compose-up: image
	STRATA="$(CURDIR)/bin/strata" $(COMPOSE_SH) up

compose-down:
	$(COMPOSE_SH) down

compose-smoke: image
	@if [ -z "$(COMPOSE_KEEP)" ]; then trap '$(COMPOSE_SH) down' EXIT; trap 'exit 130' INT TERM; fi; \
	STRATA="$(CURDIR)/bin/strata" $(COMPOSE_SH) up && \
	STRATA_COMPOSE=1 $(GO) test -count=1 -v -timeout 5m -run '^TestCompose_Smoke$$' ./test/compose/

compose-chaos: image
	@if [ -z "$(COMPOSE_KEEP)" ]; then trap '$(COMPOSE_SH) down' EXIT; trap 'exit 130' INT TERM; fi; \
	STRATA="$(CURDIR)/bin/strata" $(COMPOSE_SH) up && \
	STRATA_COMPOSE=1 COMPOSE_CHAOS_DURATION=$(COMPOSE_CHAOS_DURATION) COMPOSE_CHAOS_SEED=$(COMPOSE_CHAOS_SEED) \
	  $(GO) test -count=1 -v -timeout 2h -run '^TestCompose_Chaos$$' ./test/compose/

# `strata chaos` end to end (issue 16): a `strata dev` cluster on
# 127.0.114-116.x, every fault kind (kill, pause, partition, skew) for
# CHAOS_DURATION under a GLOBAL/STRONG workload, then the end checks and
# the linearizability check; fails on any anomaly. CHAOS_SEED replays a
# fault schedule (the test log prints the seed).
CHAOS_DURATION ?= 45s
CHAOS_SEED     ?=
.PHONY: chaos-dev
chaos-dev:
	STRATA_CHAOS_DURATION=$(CHAOS_DURATION) STRATA_CHAOS_SEED=$(CHAOS_SEED) $(GO) test -count=1 -v -timeout 30m -run '^TestRun_DevClusterUnderEveryFaultLosesNothing$$' ./cluster/chaos/
