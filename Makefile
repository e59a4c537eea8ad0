# pipewarden: `make demo` runs the demo, `make test` builds everything and runs all tests.
# Each phase prints one line when it starts and one with its outcome and duration.

CARGO ?= cargo
POLICY_TARGET := wasm32-wasip2
DEMO_ARGS ?=
# `make demo TARGET=2.16.1`: the demo renders for that KFP release.
ifdef TARGET
DEMO_ARGS += --target=$(TARGET)
endif
POLICIES := -p kfp-default -p kfp-downstream-example -p hostile-policy -p other-world-policy -p contract-0-1-0-policy

# $(call phase,NAME,COMMAND): runs COMMAND as a named, timed phase (COMMAND must not contain commas).
define phase
	@t0=$$(date +%s); echo "==> $(1)"; \
	if $(2); then echo "==> $(1): ok ($$(( $$(date +%s) - t0 ))s)"; \
	else status=$$?; echo "==> $(1): FAILED ($$(( $$(date +%s) - t0 ))s)"; exit $$status; fi
endef

.PHONY: demo demo-steps cli-reference test toolchain control-plane policies bench bench-swf bench-swf-10k bench-plan monitoring-picture bench-stale bench-exit bench-exit-memory lint sdk-examples test-sdk bench-sdk image image-ref bench-oci release release-tools release-binaries test-release chart-readme

# The image `make image` builds and pushes: $(REGISTRY)/pipewarden:$(VERSION) unless IMAGE is given.
REGISTRY ?= ghcr.io/pipewarden
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
IMAGE ?= $(REGISTRY)/pipewarden:$(VERSION)
# A static glibc binary (the image has no libc); --target keeps build scripts dynamic.
STATIC_TARGET := x86_64-unknown-linux-gnu
TARGET_DIR = $(or $(CARGO_TARGET_DIR),target)

# Only what the demo needs: etcd and kube-apiserver, the default policy, the demo binary (cargo
# shows each crate as it compiles), then the demo; the last line is the total time.
demo: toolchain
	@t0=$$(date +%s); $(MAKE) --no-print-directory demo-steps && \
	echo "==> make demo: $$(( $$(date +%s) - t0 ))s in all"

demo-steps:
ifdef PIPEWARDEN_CONTROL_PLANE_BIN
	@echo "==> control plane: using prebuilt binaries in $(PIPEWARDEN_CONTROL_PLANE_BIN)"
else
	$(call phase,control plane (etcd and kube-apiserver),tests/control-plane/build.sh --only etcd kube-apiserver)
endif
	$(call phase,default policy,$(CARGO) build --profile policy --target $(POLICY_TARGET) -p kfp-default)
	$(call phase,demo build,$(CARGO) build -p pipewarden-tests --bin demo)
	$(call phase,demo,$(TARGET_DIR)/debug/demo $(DEMO_ARGS))

test: toolchain control-plane policies sdk-examples
	$(call phase,cargo test,$(CARGO) test --workspace --no-fail-fast)
	$(SDK_PHASES)
	$(MAKE) --no-print-directory lint

# The Wasm target for policies. Go must already be installed: it builds the control plane.
toolchain:
	@command -v go >/dev/null || { echo "go not found: the control plane is built with Go 1.24 or newer" >&2; exit 1; }
	$(call phase,toolchain,rustup target add $(POLICY_TARGET))

# etcd + kube-apiserver (and kustomize, Helm, registry, crane, cosign, Argo v4.0.7's workflow controller,
# argo retry, kwok) from the pinned Go modules; skipped when prebuilt ones are supplied.
control-plane:
ifdef PIPEWARDEN_CONTROL_PLANE_BIN
	@echo "==> control plane: using prebuilt binaries in $(PIPEWARDEN_CONTROL_PLANE_BIN)"
else
	$(call phase,control plane,tests/control-plane/build.sh)
endif

policies: toolchain
	$(call phase,policies,$(CARGO) build --profile policy --target $(POLICY_TARGET) $(POLICIES))

bench: policies sdk-examples
	$(call phase,bench,$(CARGO) bench -p pipewarden)

# SWFS SWFs (2,000 unless given) reconciled on the local control plane, pipewarden beside KFP's
# path (GET, native compile, PUT) and the upstream-style loop: wall time, the controller's,
# kube-apiserver's and etcd's CPU, requests, Events and bytes written per SWF, peak RSS and the
# ratios. FLEET=real (default: every release's own compiler output, 50 namespaces, a stated
# mix; tests/src/swf_support/fleet.rs) or FLEET=uniform (copies of two pipelines). SHARDS=N
# (1 unless given) runs pipewarden's first pass as N shard processes at once and profiles
# kube-apiserver meanwhile (`make bench-swf SWFS=50000 SHARDS=4`). With one shard the first
# passes run ROUNDS times (3 unless given), each pair on fresh SWFs, and the table ends with the
# median ratio: the machine's speed drifts between minutes.
SWFS ?= 2000
SHARDS ?= 1
ROUNDS ?= $(if $(filter 1,$(SHARDS)),3,1)
FLEET ?= real
bench-swf: control-plane policies
	$(call phase,bench-swf,PIPEWARDEN_BENCH_FLEET=$(FLEET) PIPEWARDEN_BENCH_SWFS=$(SWFS) PIPEWARDEN_BENCH_SHARDS=$(SHARDS) PIPEWARDEN_BENCH_ROUNDS=$(ROUNDS) $(CARGO) bench -p pipewarden-tests --bench swf_reconcile)

# The same at 10,000 SWFs (several minutes on 2 cores); not part of `make test`.
bench-swf-10k:
	$(MAKE) bench-swf SWFS=10000

# `pipewarden plan` on SWFS SWFs (2,000 unless given; 50,000 for docs/benchmarks.md) beside
# `run`'s first pass over the same SWFs (FLEET=real or uniform, as bench-swf): wall time, CPU
# and peak RSS of each, with the commit, date and machine. Not part of `make test`.
bench-plan: control-plane policies
	$(call phase,bench-plan,PIPEWARDEN_BENCH_FLEET=$(FLEET) PIPEWARDEN_BENCH_SWFS=$(SWFS) $(CARGO) bench -p pipewarden-tests --bench plan_scale)

# The picture in docs/operate/monitoring.md, from a recorded run: the dashboard's queries through
# Prometheus' own PromQL engine (promql-eval, built on demand), plotted with matplotlib (PyPI,
# into .cache/picture-venv). Not part of `make test`.
monitoring-picture: control-plane policies
	$(call phase,monitoring picture,tests/picture/run.sh)

# Seed 001 on the real components: Argo v3.6.7's and v4.0.7's controllers and pipewarden behind
# the same stale-copy proxy, STALE_WORKFLOWS (50 unless given) workflows per controller, one
# table. Builds Argo v3.6.7 first (a benchmark only: not part of `make test`).
STALE_WORKFLOWS ?= 50
bench-stale: control-plane policies
	$(call phase,argo v3.6.7,tests/control-plane/build.sh --only argo-v3-workflow-controller)
	$(call phase,bench-stale,PIPEWARDEN_BENCH_STALE_WORKFLOWS=$(STALE_WORKFLOWS) $(CARGO) bench -p pipewarden-tests --bench stale_copies)

# Rising rates on Argo v4.0.7's own controller: for each rate of EXIT_RATES (per minute,
# 250,500,1000,2000 unless given) workflows submitted for EXIT_SECONDS (60) each, one rate after
# the other; per rate, Argo's completion rate, p50/p99/max from the API server first serving a
# completion to the receiver's 2xx, pipewarden's CPU, and the highest rate Argo sustained (about
# 10 minutes on 2 cores; a benchmark only: not part of `make test`).
EXIT_RATES ?= 250,500,1000,2000
EXIT_SECONDS ?= 60
bench-exit: control-plane policies
	$(call phase,bench-exit,PIPEWARDEN_BENCH_EXIT_RATES=$(EXIT_RATES) PIPEWARDEN_BENCH_EXIT_SECONDS=$(EXIT_SECONDS) $(CARGO) bench -p pipewarden-tests --bench exit_delay)

# The exit gate's peak RSS, the binary run as the Deployment runs it: EXIT_MEMORY_WORKFLOWS
# completed workflows of about 200 KB (5,000 unless given) present when it takes the lease,
# and 300 completions with a 1 MiB status.message against a receiver answering 413 (a
# benchmark only: not part of `make test`). Workflows bypass the local apiserver's watch cache:
# caching 5,000 such objects and their claimed versions took it to 21 GiB of this 24 GiB machine.
EXIT_MEMORY_WORKFLOWS ?= 5000
bench-exit-memory: control-plane policies
	$(call phase,pipewarden build,$(CARGO) build -q -p pipewarden)
	$(call phase,bench-exit-memory,PIPEWARDEN_APISERVER_EXTRA_ARGS='--watch-cache-sizes=workflows.argoproj.io#0' EXIT_MEMORY_WORKFLOWS=$(EXIT_MEMORY_WORKFLOWS) $(CARGO) bench -p pipewarden-tests --bench exit_memory)

# The container image, without a container daemon: a static pipewarden on an empty base,
# assembled and pushed with crane (built beside the control plane). `crane auth login` or a
# Docker config file supplies the registry credentials.
image: control-plane
	$(call phase,static binary,RUSTFLAGS='-C target-feature=+crt-static' $(CARGO) build --release --locked --target $(STATIC_TARGET) -p pipewarden --bin pipewarden)
	$(call phase,image,image/assemble.sh $(TARGET_DIR)/$(STATIC_TARGET)/release/pipewarden $(IMAGE))

image-ref:
	@echo $(IMAGE)

# A release, from one command, the same here, in the tests and in the tag workflow
# (.github/workflows/release.yml): static pipewarden and kfp-compile for linux amd64 and arm64
# (musl, linked by zig through cargo-zigbuild, both from PyPI), their CycloneDX SBOMs
# (cargo-cyclonedx), the image index for both platforms (image/assemble.sh, no daemon), the
# default policy as an OCI Wasm artifact, the chart (helm push to oci://) and the release YAML,
# all signed with cosign (COSIGN_KEY, or keyless when empty) with the SBOMs as attestations, and
# SHA256SUMS; pushed to REGISTRY, written to DIST. image/release.sh says what each step does.
RELEASE_TARGETS := x86_64-unknown-linux-musl aarch64-unknown-linux-musl
DIST ?= dist
COSIGN_KEY ?=
RELEASE_TOOLS := .cache/release-tools
ZIGLANG_VERSION := 0.17.0
CARGO_ZIGBUILD_VERSION := 0.24.0
CARGO_CYCLONEDX_VERSION := 0.5.9
# Release builds in a target directory of their own: no lock shared with debug builds.
RELEASE_TARGET_DIR = $(TARGET_DIR)/dist
TOOLS_BIN = $(or $(PIPEWARDEN_CONTROL_PLANE_BIN),$(PIPEWARDEN_CONTROL_PLANE_CACHE),$(CURDIR)/.cache/bin)

$(RELEASE_TOOLS)/.zig-$(ZIGLANG_VERSION)-zigbuild-$(CARGO_ZIGBUILD_VERSION):
	$(call phase,install ziglang $(ZIGLANG_VERSION) and cargo-zigbuild $(CARGO_ZIGBUILD_VERSION),python3 -m venv $(RELEASE_TOOLS) && $(RELEASE_TOOLS)/bin/pip install -q ziglang==$(ZIGLANG_VERSION) cargo-zigbuild==$(CARGO_ZIGBUILD_VERSION))
	touch $@

$(RELEASE_TOOLS)/.cargo-cyclonedx-$(CARGO_CYCLONEDX_VERSION):
	$(call phase,install cargo-cyclonedx $(CARGO_CYCLONEDX_VERSION),$(CARGO) install -q --locked --root $(RELEASE_TOOLS) cargo-cyclonedx@$(CARGO_CYCLONEDX_VERSION))
	touch $@

release-tools: $(RELEASE_TOOLS)/.zig-$(ZIGLANG_VERSION)-zigbuild-$(CARGO_ZIGBUILD_VERSION) $(RELEASE_TOOLS)/.cargo-cyclonedx-$(CARGO_CYCLONEDX_VERSION)

release-binaries: release-tools
	$(call phase,rust targets,rustup target add $(RELEASE_TARGETS))
	$(call phase,static binaries ($(RELEASE_TARGETS)),PATH="$(CURDIR)/$(RELEASE_TOOLS)/bin:$$PATH" CARGO_TARGET_DIR="$(RELEASE_TARGET_DIR)" $(CARGO) zigbuild --release --locked $(addprefix --target ,$(RELEASE_TARGETS)) -p pipewarden --bin pipewarden -p kfp-compiler --bin kfp-compile)

release: control-plane policies release-binaries
	$(call phase,release $(VERSION) to $(REGISTRY),REGISTRY="$(REGISTRY)" VERSION="$(VERSION)" DIST="$(DIST)" BINARIES="$(RELEASE_TARGET_DIR)" TARGETS="$(RELEASE_TARGETS)" POLICY_WASM="$(TARGET_DIR)/$(POLICY_TARGET)/policy/kfp_default.wasm" COSIGN_KEY="$(COSIGN_KEY)" TOOLS="$(TOOLS_BIN)" CARGO_CYCLONEDX="$(CURDIR)/$(RELEASE_TOOLS)/bin/cargo-cyclonedx" image/release.sh)

# `make release` against a local registry, then every artifact checked (tests/e2e/release/);
# not part of `make test`: the two release builds take longer than its budget allows (91 min
# from an empty target/dist on the loaded 2-core machine, 9-12 min after a commit, 37 s when
# built: docs/install/release.md).
test-release: control-plane policies release-binaries
	$(call phase,test-release,$(CARGO) test -p pipewarden-tests --test release -- --ignored --nocapture)

# A policy from the local registry: first pull, then warm starts beside --policy FILE.
bench-oci: control-plane policies
	$(call phase,bench-oci,$(CARGO) bench -p pipewarden-tests --bench oci_start)

# docs/reference/cli.md from the command definitions (a test fails when it is out of date).
cli-reference:
	$(call phase,cli reference,UPDATE_CLI_REFERENCE=1 $(CARGO) test -q -p pipewarden --test cli reference::the_cli_reference_is_current)

# The values table in deploy/helm/pipewarden/README.md from values.yaml (a test fails when stale).
chart-readme:
	$(call phase,chart readme,UPDATE_CHART_README=1 $(CARGO) test -q -p pipewarden-tests --test deploy the_chart_readme_values_table_is_generated_from_values_yaml)

# Crates whose modules must not import each other in a circle.
CYCLE_CHECKED := host/src guest/src policies/kfp-core/src policies/kfp-compiler/src tests/src

# cargo-deny from crates.io, installed once under .cache/ (about 5 minutes on 2 cores), checks
# advisories against deny/advisory-db (never fetched), licenses, bans and sources (deny.toml).
CARGO_DENY_VERSION := 0.20.2
CARGO_DENY_ROOT := .cache/cargo-deny-$(CARGO_DENY_VERSION)
CARGO_DENY := $(CARGO_DENY_ROOT)/bin/cargo-deny

$(CARGO_DENY):
	$(call phase,install cargo-deny $(CARGO_DENY_VERSION),$(CARGO) install -q --locked --root $(CARGO_DENY_ROOT) cargo-deny@$(CARGO_DENY_VERSION))

lint: $(CARGO_DENY)
	$(call phase,fmt,$(CARGO) fmt --all --check)
	$(call phase,module circles,python3 .ci/module_cycles.py $(CYCLE_CHECKED))
	$(call phase,clippy,$(CARGO) clippy --workspace --all-targets -- -D warnings)
	$(call phase,cargo deny,deny/check.sh $(CARGO_DENY))

# Python and JavaScript policies: the SDKs' own tests, the examples built from registry packages
# (pinned; installed under .cache/), and the shared cases through `pipewarden test` for all three
# languages. Needs python3 (3.10+) with venv, node 20+ and npm.
COMPONENTIZE_PY_VERSION := 0.25.1
COMPONENTIZE_JS_VERSION := 0.23.0
JCO_VERSION := 1.35.0
PY_VENV := .cache/python-sdk
JS_TOOLS := .cache/js-sdk
SDK_OUT := target/sdk
PIPEWARDEN_BIN = $(TARGET_DIR)/debug/pipewarden
# Compiled policies are cached: a debug build of the host takes minutes to compile an 18 MB
# interpreter component, a cached load milliseconds.
SDK_TEST := $(PIPEWARDEN_BIN) test --cache-dir .cache/policy-cache

$(PY_VENV)/.componentize-py-$(COMPONENTIZE_PY_VERSION):
	$(call phase,install componentize-py $(COMPONENTIZE_PY_VERSION),python3 -m venv $(PY_VENV) && $(PY_VENV)/bin/pip install -q componentize-py==$(COMPONENTIZE_PY_VERSION))
	touch $@

$(JS_TOOLS)/.componentize-js-$(COMPONENTIZE_JS_VERSION):
	$(call phase,install componentize-js $(COMPONENTIZE_JS_VERSION),mkdir -p $(JS_TOOLS) && npm install -s --no-fund --no-audit --prefix $(JS_TOOLS) @bytecodealliance/componentize-js@$(COMPONENTIZE_JS_VERSION) @bytecodealliance/jco@$(JCO_VERSION))
	touch $@

$(SDK_OUT)/python_example.wasm: $(PY_VENV)/.componentize-py-$(COMPONENTIZE_PY_VERSION) wit/policy.wit $(wildcard guest-python/pipewarden/*.py policies/python-example/*.py)
	mkdir -p $(SDK_OUT)
	$(call phase,build python_example.wasm,$(PY_VENV)/bin/componentize-py -d wit -w policy componentize -p guest-python -p policies/python-example app -o $@ >/dev/null)

# componentize-js is the engine of `jco componentize`; called directly, as jco 1.35's wrapper
# fails reading the WIT metadata of a world without wasi:http.
$(SDK_OUT)/js_example.wasm: $(JS_TOOLS)/.componentize-js-$(COMPONENTIZE_JS_VERSION) wit/policy.wit $(wildcard guest-js/src/*.js policies/js-example/*.js)
	mkdir -p $(SDK_OUT)
	$(call phase,build js_example.wasm,$(JS_TOOLS)/node_modules/.bin/componentize-js policies/js-example/policy.js --wit wit -n policy -d http -d fetch-event -o $@ >/dev/null)

sdk-examples: $(SDK_OUT)/python_example.wasm $(SDK_OUT)/js_example.wasm

# The SDKs' own tests, then the shared cases through `pipewarden test` in all three languages.
define SDK_PHASES
	$(call phase,sdk unit tests,python3 -m unittest discover -s guest-python/tests && node --test guest-js/test/)
	$(call phase,shared cases: rust,$(SDK_TEST) --policy $(TARGET_DIR)/$(POLICY_TARGET)/policy/kfp_default.wasm tests/cases/shared.yaml)
	$(call phase,shared cases: python,$(SDK_TEST) --policy $(SDK_OUT)/python_example.wasm --budget interpreter tests/cases/shared.yaml)
	$(call phase,shared cases: javascript,$(SDK_TEST) --policy $(SDK_OUT)/js_example.wasm --budget interpreter tests/cases/shared.yaml)
endef

# In `make test` the cargo tests have built pipewarden already (with the workspace's features).
test-sdk: policies sdk-examples
	$(call phase,pipewarden build,$(CARGO) build -q -p pipewarden)
	$(SDK_PHASES)

# Component size, load and fresh-instance decision times, peak memory: Python and JS beside Rust.
bench-sdk: policies sdk-examples
	$(call phase,bench-sdk,$(CARGO) bench -p pipewarden --bench policy -- sdk)
