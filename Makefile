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

.PHONY: demo test toolchain control-plane policies bench bench-swf bench-swf-10k lint

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

# SWFS SWFs (2,000 unless given) reconciled on the local control plane, pipewarden beside the
# upstream baseline: wall time, requests per SWF, peak RSS and the ratio to upstream-style.
SWFS ?= 2000
bench-swf: control-plane policies
	$(call phase,bench-swf,PIPEWARDEN_BENCH_SWFS=$(SWFS) $(CARGO) bench -p pipewarden-tests --bench swf_reconcile)

# The same at 10,000 SWFs (several minutes on 2 cores); not part of `make test`.
bench-swf-10k:
	$(MAKE) bench-swf SWFS=10000

lint:
	$(call phase,fmt,$(CARGO) fmt --all --check)
	$(call phase,clippy,$(CARGO) clippy --workspace --all-targets -- -D warnings)
