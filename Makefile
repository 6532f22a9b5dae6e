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

.PHONY: build test fuzz bench lint ci chaos bench-wal

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

ci: lint test
