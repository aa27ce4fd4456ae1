# plexbench — build, test, benchmark, fuzz.
GO      ?= go
BIN     := bin/plexbench
FUZZTIME ?= 10s

.PHONY: all build demo test vet fmt bench fuzz oracle clean

all: build

build:
	@$(GO) build -o $(BIN) ./cmd/plexbench

# The embedded default: stories260K scored on the shipped TinyStories excerpt.
demo: build
	@./$(BIN) score

test: vet
	$(GO) test ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./...

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

clean:
	rm -rf bin
