# pipewarden: `make demo` runs the demo, `make test` builds everything and runs all tests.
# Each phase prints one line when it starts and one with its outcome and duration.

CARGO ?= cargo
POLICY_TARGET := wasm32-wasip2
DEMO_ARGS ?=
POLICIES := -p kfp-default -p kfp-downstream-example -p hostile-policy -p other-world-policy -p contract-0-1-0-policy

# $(call phase,NAME,COMMAND): runs COMMAND as a named, timed phase (COMMAND must not contain commas).
define phase
	@t0=$$(date +%s); echo "==> $(1)"; \
	if $(2); then echo "==> $(1): ok ($$(( $$(date +%s) - t0 ))s)"; \
	else status=$$?; echo "==> $(1): FAILED ($$(( $$(date +%s) - t0 ))s)"; exit $$status; fi
endef

.PHONY: demo test toolchain control-plane policies bench bench-swf lint image image-ref bench-oci

# The image `make image` builds and pushes: $(REGISTRY)/pipewarden:$(VERSION) unless IMAGE is given.
REGISTRY ?= ghcr.io/pipewarden
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
IMAGE ?= $(REGISTRY)/pipewarden:$(VERSION)
# A static glibc binary (the image has no libc); --target keeps build scripts dynamic.
STATIC_TARGET := x86_64-unknown-linux-gnu
TARGET_DIR = $(or $(CARGO_TARGET_DIR),target)

demo: control-plane policies
	$(call phase,demo,$(CARGO) run -q -p pipewarden-tests --bin demo -- $(DEMO_ARGS))

test: toolchain control-plane policies
	$(call phase,cargo test,$(CARGO) test --workspace --no-fail-fast)
	$(call phase,fmt,$(CARGO) fmt --all --check)
	$(call phase,clippy,$(CARGO) clippy --workspace --all-targets -- -D warnings)

# The Wasm target for policies. Go must already be installed: it builds the control plane.
toolchain:
	@command -v go >/dev/null || { echo "go not found: the control plane is built with Go 1.24 or newer" >&2; exit 1; }
	$(call phase,toolchain,rustup target add $(POLICY_TARGET))

# etcd + kube-apiserver from the pinned Go modules; skipped when prebuilt ones are supplied.
control-plane:
ifdef PIPEWARDEN_CONTROL_PLANE_BIN
	@echo "==> control plane: using prebuilt binaries in $(PIPEWARDEN_CONTROL_PLANE_BIN)"
else
	$(call phase,control plane,tests/control-plane/build.sh)
endif

policies: toolchain
	$(call phase,policies,$(CARGO) build --profile policy --target $(POLICY_TARGET) $(POLICIES))

bench: policies
	$(call phase,bench,$(CARGO) bench -p pipewarden)

# 2,000 SWFs reconciled on the local control plane, pipewarden beside the upstream baseline.
bench-swf: control-plane policies
	$(call phase,bench-swf,$(CARGO) bench -p pipewarden-tests --bench swf_reconcile)

# The container image, without a container daemon: a static pipewarden on an empty base,
# assembled and pushed with crane (built beside the control plane). `crane auth login` or a
# Docker config file supplies the registry credentials.
image: control-plane
	$(call phase,static binary,RUSTFLAGS='-C target-feature=+crt-static' $(CARGO) build --release --locked --target $(STATIC_TARGET) -p pipewarden --bin pipewarden)
	$(call phase,image,image/assemble.sh $(TARGET_DIR)/$(STATIC_TARGET)/release/pipewarden $(IMAGE))

image-ref:
	@echo $(IMAGE)

# A policy from the local registry: first pull, then warm starts beside --policy FILE.
bench-oci: control-plane policies
	$(call phase,bench-oci,$(CARGO) bench -p pipewarden-tests --bench oci_start)

lint:
	$(call phase,fmt,$(CARGO) fmt --all --check)
	$(call phase,clippy,$(CARGO) clippy --workspace --all-targets -- -D warnings)
