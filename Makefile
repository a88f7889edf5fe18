# The short-link platform. `make run` starts everything in one process on
# embedded storage; `make test` runs every suite. See README.md.

GO        ?= go
BIN       := bin
TOOLS     := $(CURDIR)/.tools
MODULES   := api shared controlplane edge analytics deploy benchmarks
PKGS      := ./api/... ./shared/... ./controlplane/... ./edge/... ./analytics/... ./deploy/... ./benchmarks/...
BENCH_PKGS := ./edge/... ./shared/... ./analytics/... ./controlplane/...
# PLATFORMBENCH_FLAGS: e.g. make bench PLATFORMBENCH_FLAGS='-rounds 3 -stats-clicks 1M,10M'
# (go run ./benchmarks/cmd/platformbench -h lists them; docs/benchmarks.md explains)
PLATFORMBENCH_FLAGS ?=
FUZZTIME  ?= 15s
STATICCHECK_VERSION := v0.8.2
# stripe-mock: the Stripe API the checkout tests talk to (deploy/e2e finds it in .tools)
STRIPE_MOCK_VERSION := v0.203.0

.PHONY: all build run run-split geoip test test-e2e-split test-short lint fmt vet staticcheck bench bench-platform bench-password bench-webhooks bench-analytics bench-import bench-fleet bench-cost fuzz tidy clean

all: build

## build: every binary into bin/: shortlink, controlplane, edge and analytics
## (their mains are in deploy/cmd/, wired by deploy/app)
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./deploy/cmd/...

## run: the standalone server on SQLite under ./data (no other service needed);
## it uses data/geoip.mmdb for countries when `make geoip` has fetched it.
## It builds bin/shortlink alone: the split binaries wait for `make build`.
run:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/shortlink ./deploy/cmd/shortlink
	@if [ -z "$$SHORTLINK_GEOIP_DB" ] && [ -f data/geoip.mmdb ]; then export SHORTLINK_GEOIP_DB=data/geoip.mmdb; fi; \
	./$(BIN)/shortlink serve

## geoip: fetch a freely licensed country database (IP to country, CC BY 4.0,
## data by nro.net) from the npm registry into data/geoip.mmdb
GEOIP_PACKAGE := @ip-location-db/geo-whois-asn-country-mmdb
geoip:
	@mkdir -p data/.geoip
	cd data/.geoip && npm pack --silent $(GEOIP_PACKAGE) >/dev/null && tar -xzf *.tgz
	cp "$$(find data/.geoip/package -name '*.mmdb' | head -n1)" data/geoip.mmdb
	rm -rf data/.geoip
	@echo "data/geoip.mmdb ready; make run uses it"

## run-split: the split deployment on this machine: PostgreSQL (a fresh
## database), a Kafka-protocol broker and ClickHouse, then controlplane, edge
## and analytics as separate processes
run-split: build
	deploy/local/run-split

## test: every test, with the race detector; the end-to-end suite runs twice,
## on the standalone binary (under -race) and on the split deployment
## (test-e2e-split, without it)
test: $(TOOLS)/stripe-mock
	SHORTLINK_E2E_SHAPE=standalone $(GO) test -race -count=1 -timeout 30m $(PKGS)
	@# Allocation counts and live heap mean nothing under -race: the hot path's
	@# allocations and the edge's bytes per cached link are checked without it;
	@# so is decoding every QR code with a logo, pure computation the race detector
	@# makes fifteen times slower (those tests skip themselves under -race).
	$(GO) test -count=1 -run 'DoesNotAllocate|TestEdgeMemPerLinkBound' ./edge/redirect/
	$(GO) test -count=1 -run 'TestQRLogo$$|TestQRLogoEveryVersion' ./controlplane/internal/qrcodes/
	$(MAKE) --no-print-directory test-e2e-split

## test-e2e-split: the end-to-end suite against controlplane, edge and analytics
## as separate processes on PostgreSQL (SHORTLINK_TEST_POSTGRES_URL), a
## Kafka-protocol broker and ClickHouse; skipped without PostgreSQL or
## ClickHouse, failed instead under SHORTLINK_REQUIRE_INTEGRATION=1.
## Without the race detector (SPLIT_RACE=-race puts it back): the processes'
## code is the standalone binary's, run under -race by the suite above, plus
## the engines' stores and drivers, whose own tests run under -race against
## the real engines; under -race this suite took over 20 minutes on a 2-core
## machine (12 without), too long for CI beside the rest.
SPLIT_RACE ?=
test-e2e-split: $(TOOLS)/stripe-mock
	SHORTLINK_E2E_SHAPE=split $(GO) test $(SPLIT_RACE) -count=1 -timeout 25m ./deploy/e2e/

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

$(TOOLS)/stripe-mock:
	GOBIN=$(TOOLS) $(GO) install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)

## bench: Go micro-benchmarks of the hot paths, then the real binaries on the
## real path under wrk, each beside a bare fasthttp 302 (about 15 minutes),
## then workspace analytics at 10M clicks (bench-analytics: an hour or more);
## needs wrk, taskset, PostgreSQL and clickhouse-server; docs/benchmarks.md
bench: build
	$(GO) test -run='^$$' -bench=. -benchmem $(BENCH_PKGS)
	$(MAKE) --no-print-directory bench-platform
	$(MAKE) --no-print-directory bench-password
	$(MAKE) --no-print-directory bench-webhooks
	$(MAKE) --no-print-directory bench-analytics
	$(MAKE) --no-print-directory bench-import
	$(MAKE) --no-print-directory bench-fleet
	$(MAKE) --no-print-directory bench-cost

## bench-platform: only the real binaries under wrk (benchmarks/cmd/platformbench)
bench-platform: build
	$(GO) build -o $(BIN)/bare302 ./benchmarks/cmd/bare302
	$(GO) run ./benchmarks/cmd/platformbench -bin $(BIN) $(PLATFORMBENCH_FLAGS)

## bench-password: 1,000 wrong passwords at once against `shortlink serve`:
## argon2 checks and RSS (benchmarks/cmd/pwbench; about 30 s)
bench-password: build
	$(GO) run ./benchmarks/cmd/pwbench -bin $(BIN)

## bench-webhooks: a healthy webhook's delivery latency beside 50 hanging
## ones, on SQLite and on PostgreSQL with two control planes
## (benchmarks/cmd/webhookbench; about 5 minutes; docs/benchmarks.md)
bench-webhooks: build
	$(GO) run ./benchmarks/cmd/webhookbench -bin $(BIN) $(WEBHOOKBENCH_FLAGS)

## bench-analytics: workspace analytics (GET /api/v1/analytics) at 10M clicks
## over 1,000 links, on SQLite and on ClickHouse (a clickhouse-server it
## starts, or ANBENCH_FLAGS='-clickhouse URL'; skipped with a line when there
## is neither): ingest rate, p50/p99 of each query, the first Open after the
## rollup migrations (benchmarks/cmd/anbench); then every query again through
## the real binary over HTTP (bin/shortlink serve, bin/controlplane serve on the
## same data) beside bin/bare302 (-http=false skips it). Loading 10M clicks over 1,000
## links in the buses' batches takes over an hour on two cores (SQLite ~2,500
## clicks/s in batches of 2,000); ANBENCH_FLAGS='-batch 20000' loads them in
## ~25 minutes (docs/benchmarks.md's SQLite run used it); '-clicks 1M' is shorter
ANBENCH_FLAGS ?=
bench-analytics: build
	$(GO) build -o $(BIN)/bare302 ./benchmarks/cmd/bare302
	$(GO) run ./benchmarks/cmd/anbench -bin $(BIN) $(ANBENCH_FLAGS)

## bench-fleet: 16 bin/edge and one bin/controlplane on one broker and one
## PostgreSQL (deploy/local/services up): link changes reaching every edge
## under load, one edge stopped (SIGSTOP) and woken, a clickLimit of 10,000
## hammered by every edge (3 runs), redirects per CPU-second per edge
## (benchmarks/cmd/edgefleet; about 3 minutes; docs/benchmarks.md)
EDGEFLEET_FLAGS ?=
bench-fleet: build
	nice $(GO) run ./benchmarks/cmd/edgefleet -bin $(BIN) $(EDGEFLEET_FLAGS)

## bench-cost: the cost of a click and of a link on the split shape's real
## binaries and engines: edge CPU per redirect (HEAD, GET with its click
## produced), 1M clicks through bin/analytics into ClickHouse (consumer's and
## clickhouse-server's CPU per click, bytes per click on disk, raw and
## rollups), PostgreSQL per link change and per cache miss; then the machines
## and storage for 100M, 1B and 10B clicks a month derived from them
## (benchmarks/cmd/costbench; about 6 minutes; docs/scale.md)
COSTBENCH_FLAGS ?=
bench-cost: build
	nice $(GO) run ./benchmarks/cmd/costbench -bin $(BIN) $(COSTBENCH_FLAGS)

## bench-import: 100,000 links imported (POST /imports, source csv) on
## SQLite and on PostgreSQL (the local server; a clickhouse-server of its own
## unless IMPORTBENCH_FLAGS='-clickhouse URL'): links/s (goal >= 5,000) and the
## redirects' p50/p99 before and during the import
## (benchmarks/cmd/importbench; docs/migration.md)
IMPORTBENCH_FLAGS ?=
bench-import: build
	$(GO) run ./benchmarks/cmd/importbench -bin $(BIN) $(IMPORTBENCH_FLAGS)

## fuzz: each fuzz target for FUZZTIME
fuzz:
	@set -e; for pkg in $(PKGS); do \
	  for dir in $$($(GO) list -f '{{.Dir}}' $$pkg); do \
	    for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	      echo "fuzz $$target in $$dir"; \
	      (cd $$dir && $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=1s .); \
	    done; \
	  done; \
	done

## tidy: go mod tidy in every module
tidy:
	@for m in $(MODULES); do (cd $$m && GONOSUMDB=github.com/medama-io $(GO) mod tidy); done

clean:
	rm -rf $(BIN) $(TOOLS)
