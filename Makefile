# The two commands a newcomer needs are `make run` and `make test` (see README.md).
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: run build test lint unit bench fuzz clean image demo demo-down demo-certs chaos real real-table release

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
	@# The Helm chart's test is a module of its own (helm and the Kubernetes API stay out of vigil's).
	cd deploy/helm/chartcheck && $(GO) vet ./... && { $(GO) mod tidy -diff || { echo "deploy/helm/chartcheck: go.mod/go.sum are not tidy: run go mod tidy there"; exit 1; }; }

unit:
	$(GO) test -count=1 -timeout 20m ./...
	cd deploy/helm/chartcheck && $(GO) test -count=1 -timeout 10m ./...

## bench: the benchmarks behind BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: each of the four fuzz targets of issue 10 for FUZZTIME; keeps up to FUZZKEEP of the
## smallest new inputs of each as committed corpus (testdata/fuzz); logs in build/fuzz-*.log.
FUZZTIME ?= 60s
FUZZKEEP ?= 5
FUZZ_TARGETS ?= config.FuzzParse gossip.FuzzDecode location.FuzzRespond control.FuzzAPIWrite

fuzz:
	@mkdir -p build; cache="$$($(GO) env GOCACHE)/fuzz/$$($(GO) list -m)"; \
	for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%.*}; name=$${t#*.}; log=build/fuzz-$$name.log; stamp=build/fuzz-$$name.stamp; touch $$stamp; \
	  echo "== $$pkg.$$name for $(FUZZTIME)"; \
	  if ! $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$pkg/ >$$log 2>&1; then \
	    cat $$log; echo "$$pkg.$$name failed: the crasher is in $$pkg/testdata/fuzz/$$name"; exit 1; fi; \
	  grep 'fuzz: elapsed' $$log | tail -n 1; \
	  mkdir -p $$pkg/testdata/fuzz/$$name; \
	  find "$$cache/$$pkg/$$name" -type f -newer $$stamp -size -4k -printf '%s %p\n' 2>/dev/null | sort -n | head -n $(FUZZKEEP) | cut -d' ' -f2- | \
	    while read -r f; do cp "$$f" $$pkg/testdata/fuzz/$$name/; done; \
	  echo "committed corpus: $$(ls $$pkg/testdata/fuzz/$$name | wc -l) files"; rm -f $$stamp; \
	done

## chaos: the nightly chaos run: 10 minutes of seeded faults (SEED=N replays a run).
SEED     ?= 1
DURATION ?= 10m
chaos:
	$(GO) run ./cmd/vigil sim chaos -seed $(SEED) -duration $(DURATION)

## real: a scenario on real processes in network namespaces (root, ip, nft, /dev/net/tun);
## SCENARIO=story (the make-test story), nontransitive, isolated, ... (vigil sim -real -h).
SCENARIO ?= story
real:
	$(GO) run ./cmd/vigil sim -real $(SCENARIO)

## real-table: every real-process scenario in turn (about 15 minutes); prints RESILIENCE.md's
## rows at the end, each run's output in build/real-<scenario>.log. Fails if any run failed.
REAL_SCENARIOS ?= story nontransitive isolated oneway wan flapping leader-kill checkers-killed location-restart
real-table: build
	@mkdir -p build; rows=build/real-rows.md; : > $$rows; fail=0; \
	for s in $(REAL_SCENARIOS); do \
	  echo "== $$s ($$(uptime | sed 's/.*load/load/'))"; \
	  bin/vigil sim -real $$s >build/real-$$s.log 2>&1 || { fail=1; echo "$$s FAILED: build/real-$$s.log"; }; \
	  grep '^| ' build/real-$$s.log >>$$rows || true; \
	done; cat $$rows; exit $$fail

## image: the container image (FROM scratch: the static binary and the host's CA bundle).
IMAGE   ?= vigil:demo
# Debian's docker-compose (v1.29) or the docker compose plugin, whichever exists.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)

image: build
	mkdir -p build/data
	cp /etc/ssl/certs/ca-certificates.crt build/ca-certificates.crt
	docker build -t $(IMAGE) .

## demo: build the image and start the compose demo; Prometheus and Grafana join it where
## their images are here or can be pulled (one line says so where they cannot).
OBS_IMAGES ?= prom/prometheus:v2.53.0 grafana/grafana:11.1.0

demo: image
	VIGIL_IMAGE=$(IMAGE) $(COMPOSE) up -d
	@have=yes; for i in $(OBS_IMAGES); do \
	  docker image inspect $$i >/dev/null 2>&1 || timeout 120 docker pull -q $$i >/dev/null 2>&1 || have=no; \
	done; \
	if [ $$have = yes ]; then VIGIL_IMAGE=$(IMAGE) $(COMPOSE) --profile observability up -d prometheus grafana; \
	else echo "demo: no Prometheus or Grafana (their images cannot be pulled here); Vigil runs without them"; fi
	@echo "demo: DNS dig @127.0.0.1 -p 5301 www.demo.vigil.test; faults deploy/compose/fault.sh; stop: make demo-down"
	@echo "demo: for vigil override, audit, apply and dnssec (the control API over TLS):"
	@echo "  export VIGIL_SERVER=https://127.0.0.1:$${VIGIL_CONTROL_PORT:-7700} VIGIL_CACERT=$(CURDIR)/deploy/compose/tls/ca.pem VIGIL_TOKEN_FILE=$(CURDIR)/deploy/compose/token; unset VIGIL_TOKEN VIGIL_CLIENT_CERT VIGIL_CLIENT_KEY"

## demo-certs: renew the compose demo's certificates under its CA (deploy/compose/tls); a
## running demo uses them within 5 s, without a restart.
DEMO_CERTS = control-1=control@10.231.1.2 control-2=control@10.231.2.2 control-3=control@10.231.3.2 \
  location-us-east=location location-eu-west=location location-sa-east=location operator=operator \
  checker-us-east-1=checker checker-us-east-2=checker checker-eu-west-1=checker \
  checker-eu-west-2=checker checker-sa-east-1=checker checker-sa-east-2=checker

demo-certs: build
	bin/vigil tls init -days 3650 -key-mode 0644 deploy/compose/tls $(DEMO_CERTS)
	chmod 755 deploy/compose/tls

## demo-down: remove the compose demo's containers, networks and volumes.
demo-down:
	VIGIL_IMAGE=$(IMAGE) $(COMPOSE) --profile observability down -v --remove-orphans -t 2

## release: VERSION=x.y.z: static binaries for linux and darwin on amd64 and arm64 (two builds of
## one commit are byte-identical), the .deb packages (make package), the image tarball (with a
## Docker engine), a CycloneDX SBOM, the CHANGELOG.md section and SHA256SUMS, in dist/.
## See docs/deploy/releases.md.
release:
	bash deploy/release/release.sh all $(VERSION) dist

clean:
	rm -rf bin/ build/ dist/

## package: Debian packages of vigil for PACKAGE_ARCHS in build/packages (deploy/debian/build.sh
## VERSION ARCH: the static binary, vigil.service, /etc/vigil/agent.yaml; docs/deploy/packages.md).
PACKAGE_ARCHS ?= amd64 arm64
.PHONY: package
package:
	@for a in $(PACKAGE_ARCHS); do deploy/debian/build.sh $(VERSION) $$a build/packages || exit 1; done
