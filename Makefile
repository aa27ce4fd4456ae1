# plexbench — build, test, benchmark, fuzz.
GO      ?= go
BIN     := bin/plexbench
FUZZTIME ?= 10s

.PHONY: all build demo test test-levels test-arm64 vet fmt bench bench-llamacpp fuzz oracle oracle-hybrid gpu-check gpu-check-build clean

all: build

build:
	@$(GO) build -o $(BIN) ./cmd/plexbench

# The embedded default: stories260K scored on the shipped TinyStories excerpt.
demo: build
	@./$(BIN) score

# The whole suite on this CPU, then the kernel-dependent packages again, in
# short mode (the exact-kernel oracle runs do not depend on the level), as
# each lesser CPU level (PLEXBENCH_CPU=avx2|generic) this machine allows.
TESTFLAGS ?= -timeout 40m

test: vet
	$(GO) test $(TESTFLAGS) ./...
	@GO=$(GO) scripts/test-levels.sh -short $(TESTFLAGS)

test-levels:
	@GO=$(GO) scripts/test-levels.sh -short $(TESTFLAGS)

# The arm64 build's kernels and engine tests, short mode, under qemu-user.
test-arm64:
	@GO=$(GO) scripts/test-arm64.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./...

# plexbench against llama.cpp on this machine: same models, text, ctx, batch,
# threads (npm + gcc; RUNS, CHUNKS, TYPES; see the script).
bench-llamacpp: build
	GO=$(GO) scripts/bench-llamacpp.sh

# A short run of every fuzz target (go test runs one fuzz target at a time).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
	  done; \
	done

# Re-measure llama.cpp's own perplexities (npm package + gcc; see its README).
oracle:
	cmd/plexbench/testdata/oracle/run.sh

# Re-measure llama.cpp on the tiny qwen35/qwen35moe/qwen3next models
# (every CPU build of the npm package this machine runs; npm + gcc).
oracle-hybrid:
	cmd/plexbench/testdata/oracle/run-hybrid.sh

# The prepared device check (issue 12): kernels against their CPU twins,
# PPL against the CPU backend, one summary line per check. gpu-check-build
# runs here; on the device machine run `bash scripts/gpu-check.sh run`
# carrying bin/gpu-check (see the script).
gpu-check-build:
	@GO=$(GO) scripts/gpu-check.sh build

gpu-check:
	@GO=$(GO) scripts/gpu-check.sh all

clean:
	rm -rf bin
