# The two commands a newcomer needs are `make run` and `make test` (see README.md).
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: run build test lint unit bench fuzz clean

## run: start the embedded multi-region network (vigil dev).
run:
	$(GO) run -ldflags '$(LDFLAGS)' ./cmd/vigil dev

## build: a static vigil binary in bin/.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/vigil ./cmd/vigil

## test: formatting, vet, tidy modules and every test.
test: lint unit

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

unit:
	$(GO) test -count=1 -timeout 20m ./...

## bench: the benchmarks behind BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin/
