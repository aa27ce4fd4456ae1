# plexbench — build, test, benchmark, fuzz.
GO      ?= go
BIN     := bin/plexbench
FUZZTIME ?= 10s
FUZZEXECS ?= 1000000x
FUZZPARALLEL ?= 1

.PHONY: all build demo test test-levels test-long test-long-context test-race test-arm64 test-avx512-emu vet fmt bench bench-llamacpp fuzz fuzz-long oracle oracle-hybrid gpu-check gpu-check-build gpu-emu clean

all: build

build:
	@$(GO) build -o $(BIN) ./cmd/plexbench

# The embedded default: stories260K scored on the shipped TinyStories excerpt,
# at the model's trained context (128: past it llama.cpp and plexbench warn of
# a training context overflow). A short summary on the terminal; the JSON
# report in DEMO_REPORT.
DEMO_REPORT ?= demo-report.json
DEMO_ARGS   := score --perplexity-ctx 128 --summary -o $(DEMO_REPORT)

demo: build
	@./$(BIN) $(DEMO_ARGS)

# Tests, in tiers (README: Tests):
#   test            the default tier, under 10 minutes on 2 cores: unit tests
#                   of kernels, statistics, formats and parsers, and one
#                   end-to-end test per user-visible property on the fewest
#                   windows that show it, every package natively; then at
#                   each lesser CPU level this machine allows (PLEXBENCH_CPU=
#                   avx2|generic) what depends on the level: the kernels and
#                   engine packages in short mode and one end-to-end smoke
#   test-long       the long comparisons, opt-in: the TestLong… tests
#                   (PLEXBENCH_LONG=1: every file and weight type on each
#                   emulated backend, the exact kernels against llama.cpp's
#                   oracle at every context) and every golden file and tiny
#                   hybrid against llama.cpp at ctx 128 on each level
#   test-race       the packages that use goroutines under the race detector
#   test-arm64      the arm64 build's kernels and engine under qemu-user
#   test-avx512-emu the AVX-512 BW kernels under Bochs on a CPU without them
#   fuzz, fuzz-long every fuzz target, briefly or for a fixed count
# CI (.ci/run) runs all but the fuzzing; `go test ./...` alone is the
# default tier's native part.
TESTFLAGS ?= -timeout 20m

test: vet
	@t0=$$(date +%s); $(GO) test $(TESTFLAGS) ./... && echo "test: native $$(($$(date +%s) - t0))s"
	@t0=$$(date +%s); GO=$(GO) scripts/test-levels.sh $(TESTFLAGS) && echo "test: levels $$(($$(date +%s) - t0))s"

test-levels:
	@GO=$(GO) scripts/test-levels.sh $(TESTFLAGS)

test-long:
	@t0=$$(date +%s); PLEXBENCH_LONG=1 $(GO) test $(TESTFLAGS) -run '^TestLong' ./... && echo "test-long: native $$(($$(date +%s) - t0))s"
	@t0=$$(date +%s); GO=$(GO) scripts/test-levels.sh --long $(TESTFLAGS) && echo "test-long: levels $$(($$(date +%s) - t0))s"

# The device at a context of 16,384 (dense and FlashPrefill V2, emulated
# CUDA and HIP against the CPU; about 25 minutes on 2 cores): not in CI.
test-long-context:
	PLEXBENCH_LONG=1 PLEXBENCH_LONG_CONTEXT=1 $(GO) test -timeout 60m -run '^TestLongDeviceContext$$' -v ./cmd/plexbench

test-race:
	$(GO) test -race $(TESTFLAGS) ./scoring/... ./workbench/... ./results/... ./tui ./hip ./serve/... ./served/...

# The arm64 build's kernels and engine tests, short mode, under qemu-user.
test-arm64:
	@GO=$(GO) scripts/test-arm64.sh

# The AVX-512 BW kernels' tests under Bochs on a CPU without AVX-512 (RUN: a
# -test.run pattern; see scripts/test-avx512-emu.sh).
test-avx512-emu:
	@GO=$(GO) scripts/test-avx512-emu.sh

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

# Every fuzz target for a fixed number of executions (FUZZEXECS, e.g. 20000x
# for a quick check), FUZZPARALLEL workers; one line per target with its
# executions and wall time. New interesting inputs stay in the Go cache
# (go env GOCACHE)/fuzz; the committed corpus is each package's testdata/fuzz.
fuzz-long:
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    start=$$(date +%s.%N); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZEXECS) -parallel $(FUZZPARALLEL) $$pkg >$$log 2>&1; then \
	      cat $$log; echo "fuzz-long: $$pkg $$t FAILED"; exit 1; \
	    fi; \
	    execs=$$(grep -o 'execs: [0-9]*' $$log | tail -1 | cut -d' ' -f2); \
	    secs=$$(awk -v a=$$start -v b=$$(date +%s.%N) 'BEGIN { printf "%.1f", b - a }'); \
	    printf 'fuzz-long: %-28s %-14s %10s execs %8ss\n' $$pkg $$t "$$execs" $$secs; \
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
# carrying bin/gpu-check (see the script). With GPU_EMU=1 it runs on the
# emulated CUDA runtime and prints the weight traffic of the stories260K
# F32, Q8_0 and Q4_K_M files' passes, R/(W·P) (docs/gpu-numbers.md).
gpu-check-build:
	@GO=$(GO) scripts/gpu-check.sh build

gpu-check:
	@GO=$(GO) scripts/gpu-check.sh all

# The emulated CUDA and HIP runtimes (hip/emu): driver and compiler libraries
# that run device kernels on host threads, selected only through the usual
# overrides, e.g. PLEXBENCH_CUDA_LIB=bin/gpu-emu/libcuda.so.1
# PLEXBENCH_NVRTC_LIB=bin/gpu-emu/libnvrtc.so PLEXBENCH_HIP_LIB=bin/gpu-emu/libamdhip64.so
# (hiprtc is found beside it as libhiprtc.so.6). Rebuilt only when a source changes.
# Also an emulated vendor BLAS (hip/emu/blas.cc: libcublas.so.12, librocblas.so.4),
# used only when PLEXBENCH_CUBLAS_LIB / PLEXBENCH_ROCBLAS_LIB name it.
EMU      := bin/gpu-emu
EMU_SRC  := hip/emu
EMU_FLAGS := -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -Wl,-Bsymbolic -pthread
EMU_RTC  := -DPBEMU_DEVICE_H_PATH='"$(abspath $(EMU_SRC)/pbemu_device.h)"' -DPBEMU_DEFAULT_CXX='"$(CXX)"'

gpu-emu: $(EMU)/libcuda.so.1 $(EMU)/libnvrtc.so $(EMU)/libamdhip64.so $(EMU)/libhiprtc.so.6 $(EMU)/libcublas.so.12 $(EMU)/librocblas.so.4
	@ln -sf libnvrtc.so $(EMU)/libnvrtc.so.13
	@ln -sf libamdhip64.so $(EMU)/libamdhip64.so.6
	@ln -sf libhiprtc.so.6 $(EMU)/libhiprtc.so

$(EMU)/libcuda.so.1: $(EMU_SRC)/runtime.cc $(EMU_SRC)/common.h
	@mkdir -p $(EMU)
	$(CXX) $(EMU_FLAGS) -o $@ $< -ldl

$(EMU)/libamdhip64.so: $(EMU_SRC)/runtime.cc $(EMU_SRC)/common.h
	@mkdir -p $(EMU)
	$(CXX) $(EMU_FLAGS) -DPBEMU_HIP -o $@ $< -ldl

$(EMU)/libnvrtc.so: $(EMU_SRC)/rtc.cc $(EMU_SRC)/common.h $(EMU_SRC)/pbemu_device.h
	@mkdir -p $(EMU)
	$(CXX) $(EMU_FLAGS) $(EMU_RTC) -o $@ $<

$(EMU)/libhiprtc.so.6: $(EMU_SRC)/rtc.cc $(EMU_SRC)/common.h $(EMU_SRC)/pbemu_device.h
	@mkdir -p $(EMU)
	$(CXX) $(EMU_FLAGS) $(EMU_RTC) -DPBEMU_HIP -o $@ $<

$(EMU)/libcublas.so.12: $(EMU_SRC)/blas.cc $(EMU_SRC)/common.h
	@mkdir -p $(EMU)
	$(CXX) $(EMU_FLAGS) -o $@ $< -ldl

$(EMU)/librocblas.so.4: $(EMU_SRC)/blas.cc $(EMU_SRC)/common.h
	@mkdir -p $(EMU)
	$(CXX) $(EMU_FLAGS) -DPBEMU_HIP -o $@ $< -ldl

clean:
	rm -rf bin
