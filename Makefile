GO        ?= go
BIN       := bin/artifact-registry
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Only internal/benchcompare has files behind a build tag, and none is
# excluded by it: one pass with the tag checks everything.
LINT_TAGS := -tags benchcompare
# staticcheck, a Go program holding the whole tree's analysis, spends
# half its CPU collecting garbage at Go's default GOGC: at 400 its cold
# run took 53 CPU-s instead of 112 (peak RSS 1.7 GB instead of 1.0) and
# vet's analyzers 21 instead of 28. The compiler gains nothing (it raises
# its own starting heap when GOGC is unset: a cold build of the binary
# took 186 CPU-s either way).
LINT_GOGC ?= 400
LINT_ENV  := GOGC=$(LINT_GOGC)
# go vet and staticcheck (through go list -export) compile every package
# for its type information. With the flags of the release build (the
# Dockerfile's, which internal/servebuild uses for the tests that run the
# binary) those compilations are the ones the tests' build of the binary
# needs: a fresh machine compiles the tree once for the three instead of
# three times. make test vets with the same command, so it reuses lint's
# results.
RELEASE_ENV := CGO_ENABLED=0 GOFLAGS="-trimpath $$GOFLAGS"
VET := $(LINT_ENV) $(RELEASE_ENV) $(GO) vet $(LINT_TAGS)

.PHONY: build run test generate lint bench bench-compare clean deps test-deps web-test web-build web-screenshots fuzz-smoke soak

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/artifact-registry

deps:
	./scripts/ensure-postgres

test-deps:
	./scripts/ensure-test-tools

run: deps build
	./$(BIN) serve

# The slowest test packages, longest first: go test starts packages in
# the order it is given them, and two cores finish soonest when the long
# ones do not start last (web/e2e, last in ./..., used to run alone for
# its last minute; store/objstore, whose tests wait on S3 retries, ran
# alone with the machine idle for its last 5-20 s, then upstream did).
SLOW_TEST_PKGS := ./migrations ./protocol/maven ./cmd/artifact-registry ./web/e2e ./internal/soak \
	./protocol/npm ./internal/cluster ./protocol/oci ./store ./graph \
	./gc ./internal/testdb ./store/objstore ./internal/security ./lifecycle ./upstream

# Test packages run one more at a time than there are cores (go test's
# default is one per core): a test binary waiting for PostgreSQL, which
# -p does not count, leaves its core idle. On 2 cores the warm test run
# went from 645 s with the machine 86 % busy to 595 s at 96 % busy.
TEST_PARALLEL ?= $(shell echo $$(( $$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN) + 1 )))

# The test binaries, and the servers some of them start, collect garbage
# less often: a warm run took 915 CPU-s at GOGC=400 instead of 940 at the
# default (protocol/oci alone 39-42 CPU-s instead of 51-57, with its peak
# RSS 1.3 GB instead of 0.9).
TEST_GOGC ?= 400

# A race-enabled binary sleeps a second before it exits (the race
# detector's atexit_sleep_ms, for goroutines still running to report),
# holding one of go test's slots, some 70 times a run. A GORACE of the
# caller's comes after, so its own atexit_sleep_ms wins.
TEST_GORACE ?= atexit_sleep_ms=10

# Test binaries are linked without DWARF (-w) or a symbol table (-s):
# linking is a tenth of the test run's CPU, DWARF a third of each link and
# the symbol table about 6 % of the rest, and neither panics nor race
# reports need them (they symbolize from the runtime's own tables).
# scripts/on-tmpfs puts the tests' temporary files in memory when it can.
# go test's own vet pass (-vet) is off: it repeats a subset of the full
# vet run just before it. go test links every test binary on every run,
# also when nothing it is built from changed: internal/linkcache keeps the
# binaries and hands back the one whose inputs it has seen (LINKCACHE_DIR,
# default ~/.cache/artifact-registry/link; "off" to link every time). It
# is in GOFLAGS so that the tests' own builds of the serve binary
# (internal/servebuild) go through it too; it changes no compilation.
# (Running the fuzzing and the UI's tests beside the Go tests was tried:
# the run took 590 s instead of 547, the slowest packages slowed by their
# start.) After the Go tests the two run beside each other, each output
# printed whole: neither keeps both cores busy (warm, 17 s one after the
# other, 15 s together).
# The test binaries share one PostgreSQL cluster, started by withtestdb
# (internal/testdb/cmd/withtestdb), and pass reset databases on to each
# other instead of each cloning and dropping its own. The two helpers are
# built with vet's flags, whose compilations of their packages (pgx and
# the migrations among them) a fresh machine has just made.
LINKCACHE := $(CURDIR)/bin/linkcache
WITHTESTDB := $(CURDIR)/bin/withtestdb
test: test-deps
	$(VET) ./...
	$(RELEASE_ENV) $(GO) build -o $(LINKCACHE) ./internal/linkcache/cmd/linkcache
	$(RELEASE_ENV) $(GO) build -o $(WITHTESTDB) ./internal/testdb/cmd/withtestdb
	GOGC=$(TEST_GOGC) GORACE="$(TEST_GORACE) $$GORACE" GOFLAGS="-toolexec=$(LINKCACHE) $$GOFLAGS" ./scripts/on-tmpfs $(WITHTESTDB) $(GO) test -p $(TEST_PARALLEL) -race -vet=off -ldflags='-s -w' -count=1 -timeout 30m $(SLOW_TEST_PKGS) ./...
	$(MAKE) -j2 --output-sync=target fuzz-smoke web-test

# The fuzz targets (package:Fuzz function); go test runs their seed
# corpora, fuzz-smoke fuzzes each for FUZZTIME with FUZZPARALLEL workers,
# FUZZJOBS targets at a time. docs/security/fuzz.md says how to run them
# longer. Ordered so that targets of one package do not start together
# (the second then links the instrumented binary the first compiled). The
# first runs alone and needs the most of the standard library (net/http),
# so it compiles nearly everything the others need.
FUZZ_TARGETS := protocol/oci/ocirange:FuzzParseRange protocol/oci/ocimanifest:FuzzParseManifest \
	protocol/npm/npmpublish:FuzzParsePublish protocol/maven/mavenpath:FuzzParsePath \
	protocol/oci/ocirange:FuzzChunkOffset protocol/npm/npmpublish:FuzzSplitPublish
# A count of inputs, not a duration: a duration also bounds the replay of
# the committed corpus, and a slow machine that has not replayed it all
# when the time is up fails the run ("context deadline exceeded").
FUZZTIME     ?= 5000x
FUZZPARALLEL ?= 1
FUZZJOBS     ?= 2
# New inputs are minimized briefly.
FUZZMINIMIZETIME ?= 100x

fuzz-smoke:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) FUZZPARALLEL=$(FUZZPARALLEL) FUZZJOBS=$(FUZZJOBS) \
		./scripts/fuzz-smoke $(FUZZ_TARGETS)

# UI component tests (Vitest); the browser end-to-end tests are Go tests
# in web/e2e and run above.
web-test:
	cd web && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm test

# Rebuilds the UI into web/dist, which the binary embeds.
web-build:
	web/check-dist.sh --fix

# Refreshes the screenshots of the main screens committed under
# docs/screenshots by running the browser tests (needs Chromium and the
# PostgreSQL server binaries, like make test).
web-screenshots: test-deps
	E2E_DOCS_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -timeout 15m -run '^TestUI' ./web/e2e

# The mixed-workload soak (internal/soak, docs/soak.md): three instances
# under load for SOAK_DURATION while one is killed, PostgreSQL restarts and
# object storage fails for 30 s. make test runs its one-minute version.
SOAK_DURATION ?= 10m
SOAK_REPORT   ?= $(CURDIR)/soak-report.txt

soak: test-deps
	SOAK_DURATION=$(SOAK_DURATION) SOAK_REPORT=$(SOAK_REPORT) $(GO) test -count=1 -timeout 60m -v -run '^TestSoak$$' ./internal/soak

generate:
	$(GO) generate ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(VET) ./...
	$(LINT_ENV) $(RELEASE_ENV) $(GO) run $(STATICCHECK) $(LINT_TAGS) ./...

bench: test-deps
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 60m ./...

# Ours, distribution, zot, Verdaccio and a static Maven server side by
# side on this machine and disk: one table in $(BENCH_RESULTS)/bench-compare.md
# (docs/benchmarks.md). BENCH_QUICK=1 is the few-minute plumbing check;
# BENCH_RUNS sets the runs per figure (3; quick: 1); BENCH_DIR the disk
# the registries store on (default: under BENCH_RESULTS).
BENCH_RESULTS ?= $(CURDIR)/bench-results
bench-compare: test-deps
	BENCH_RESULTS=$(BENCH_RESULTS) BENCH_QUICK=$(BENCH_QUICK) BENCH_RUNS=$(BENCH_RUNS) BENCH_DIR=$(BENCH_DIR) \
		$(GO) test -tags benchcompare -count=1 -timeout 0 -v -run '^TestBenchCompare$$' ./internal/benchcompare

clean:
	rm -rf bin
