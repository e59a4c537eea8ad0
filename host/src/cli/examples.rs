//! The examples each command's `--help` ends with (and the CLI reference shows). Paths are the
//! repository's own: `make policies` builds the policy, the settings and fixtures are in git.

pub const RUN: &str = "\
Examples:
  # Report-only (the default install): decide every SWF and completion, write nothing
  pipewarden run --policy kfp_default.wasm \\
    --settings-from deployment/kubeflow/ml-pipeline --kfp-api-url http://ml-pipeline.kubeflow:8888 \\
    --rebuild-policy disable --exit-mode observe

  # Enforce, two replicas electing a leader, the fleet gauge by namespace
  POD_NAME=$(hostname) POD_NAMESPACE=kubeflow pipewarden run --leader-elect \\
    --policy kfp_default.wasm --settings policies/kfp-default/settings/kfp-2.17.0.json \\
    --target-version 2.17.0 --metrics-swf-namespaces";

pub const PLAN: &str = "\
Examples:
  # What run would do now, the summary by namespace first
  pipewarden plan --policy target/wasm32-wasip2/policy/kfp_default.wasm \\
    --settings-from deployment/kubeflow/ml-pipeline --kfp-api-url http://ml-pipeline.kubeflow:8888

  # A change ticket: only what would change, each diff cut at 20 lines
  pipewarden plan --policy kfp_default.wasm --settings settings.json --target-version 2.17.0 \\
    --only changed -o markdown --diff-lines 20 > plan.md

  # In CI: exit 1 when something would be written; one JSON line per row
  pipewarden plan --policy kfp_default.wasm --settings settings.json --target-version 2.17.0 \\
    --exit-code -o jsonl | jq -c 'select(.kind == \"swf\") | [.swf, .state]'";

pub const EVAL: &str = "\
Examples:
  # Decide a KFP 2.3 SWF for 2.17.0: the decision, the reason and the diff
  pipewarden eval --policy target/wasm32-wasip2/policy/kfp_default.wasm \\
    --settings policies/kfp-default/settings/kfp-2.17.0.json --target-version 2.17.0 \\
    tests/data/swf/kfp-2.3.yaml

  # A workflow watch-event sequence through the tombstones and the policy, as one JSON document
  pipewarden eval --policy kfp_default.wasm -o json tests/data/events/stale-copy-sequence.yaml

  # Exit 1 if any SWF differs from its render (2 on a policy error)
  pipewarden eval --policy kfp_default.wasm --settings settings.json --target-version 2.17.0 \\
    --exit-code swfs/*.yaml";

pub const PRECOMPILE: &str = "\
Examples:
  # Compile once into the cache the controller reads (an init container, say)
  pipewarden precompile --policy kfp_default.wasm --cache-dir /var/cache/pipewarden

  # Check a policy against its pin before publishing both
  pipewarden precompile --policy policy.wasm --policy-sha256-file policy.sha256 \\
    --cache-dir /tmp/pipewarden-check";

pub const TEST: &str = "\
Examples:
  # Every case of a policy's case file
  pipewarden test --policy target/wasm32-wasip2/policy/kfp_default.wasm \\
    policies/kfp-default/cases/cases.yaml

  # Only the cases whose name mentions a stale copy, as JUnit XML for CI
  pipewarden test --policy kfp_default.wasm --run 'stale' -o junit tests/cases/shared.yaml \\
    > junit.xml";

pub const COMPLETIONS: &str = "\
Examples:
  pipewarden completions bash | sudo tee /etc/bash_completion.d/pipewarden
  pipewarden completions zsh | tee \"${fpath[1]}/_pipewarden\"";

pub const POLICY_PUSH: &str = "\
Examples:
  # Push, then run with the digest-pinned reference it prints
  pipewarden policy push target/wasm32-wasip2/policy/kfp_default.wasm \\
    oci://registry.example.com/pipewarden/kfp-default:2.17.0";
