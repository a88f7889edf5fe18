# The short-link platform. `make run` starts everything in one process on
# embedded storage; `make test` runs every suite. See README.md.

GO        ?= go
BIN       := bin
TOOLS     := $(CURDIR)/.tools
MODULES   := shared controlplane edge analytics deploy benchmarks
PKGS      := ./shared/... ./controlplane/... ./edge/... ./analytics/... ./deploy/...
FUZZTIME  ?= 15s
STATICCHECK_VERSION := v0.8.2

.PHONY: all build run test test-short lint fmt vet staticcheck bench fuzz tidy clean

all: build

## build: every binary into bin/
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/shortlink ./deploy/standalone
	$(GO) build -o $(BIN)/controlplane ./controlplane/cmd/controlplane

## run: the standalone server on SQLite under ./data (no other service needed)
run: build
	./$(BIN)/shortlink serve

## test: every test, with the race detector
test:
	$(GO) test -race -count=1 $(PKGS)

## test-short: unit tests only (skips the end-to-end suites)
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt, go vet and staticcheck
lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck: $(TOOLS)/staticcheck
	$(TOOLS)/staticcheck $(PKGS)

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## bench: Go benchmarks of the hot paths
bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

## fuzz: each fuzz target for FUZZTIME
fuzz:
	@set -e; for pkg in $(PKGS); do \
	  for dir in $$($(GO) list -f '{{.Dir}}' $$pkg); do \
	    for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	      echo "fuzz $$target in $$dir"; \
	      (cd $$dir && $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) .); \
	    done; \
	  done; \
	done

## tidy: go mod tidy in every module
tidy:
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

clean:
	rm -rf $(BIN) $(TOOLS)
