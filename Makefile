# gitsave — the two set-up commands are `make demo` and `make test` (see README.md).
SHELL := /usr/bin/env bash
BIN := _output/bin
GO_TEST_FLAGS ?= -race

.PHONY: all build test unit integration e2e verify codegen local-up local-down demo clean deps

all: build

build:
	go build -o $(BIN)/gitsave-apiserver ./cmd/apiserver
	go build -o $(BIN)/git-http-server ./hack/git-http-server

# deps installs what the tests need on a fresh machine (Debian packages only).
deps:
	hack/install-deps.sh

# test runs everything: generated code up to date, vet, unit and integration tests,
# then the e2e suite on the local control plane.
test: deps verify unit e2e

verify:
	hack/verify-codegen.sh
	@test -z "$$(gofmt -l cmd pkg test hack bench 2>/dev/null)" || { gofmt -l cmd pkg test hack bench; echo "gofmt needed"; exit 1; }
	go vet -tags e2e ./...

unit:
	go test $(GO_TEST_FLAGS) ./pkg/... ./test/integration/...

e2e:
	hack/e2e.sh

codegen:
	hack/update-codegen.sh

local-up:
	hack/local/up.sh

local-down:
	hack/local/down.sh

demo:
	hack/demo.sh

clean:
	hack/local/down.sh --purge
	rm -rf _output

# bench runs the benchmarks on a control plane of its own and writes docs/benchmarks.md.
.PHONY: bench
bench:
	bench/run.sh
