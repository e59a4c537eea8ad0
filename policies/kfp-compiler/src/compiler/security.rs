//! Security contexts KFP puts on the templates it generates (Go's `security_context.go`).

use serde_json::{Map, Value, json};

use crate::argo;
use crate::options::CompileOptions;

fn seccomp_runtime_default() -> Value {
    json!({ "type": "RuntimeDefault" })
}

/// System templates (drivers, importer): non-root pod and containers, no privilege
/// escalation, all capabilities dropped, runtime-default seccomp.
pub fn apply_to_template(template: &mut Map<String, Value>) {
    let pod = argo::object_field(template, "securityContext");
    pod.entry("runAsNonRoot").or_insert(Value::Bool(true));
    pod.entry("seccompProfile")
        .or_insert_with(seccomp_runtime_default);
    for_each_container(template, |container| harden(container, true));
}

/// The user's executor template: user images may run as root, so only the launcher init
/// container must be non-root; admin defaults, when configured, override the user container.
///
/// `admin_defaults`: whether the release reads `DEFAULT_SECURITY_CONTEXT_*` (#12859).
pub fn apply_to_executor_template(
    template: &mut Map<String, Value>,
    options: &CompileOptions,
    admin_defaults: bool,
) {
    let pod = argo::object_field(template, "securityContext");
    pod.entry("seccompProfile")
        .or_insert_with(seccomp_runtime_default);
    if let Some(Value::Object(container)) = template.get_mut("container") {
        harden(container, false);
        let context = argo::object_field(container, "securityContext");
        let options = Some(options).filter(|_| admin_defaults);
        if let Some(user) = options.and_then(|o| o.default_run_as_user) {
            context.insert("runAsUser".into(), json!(user));
        }
        if let Some(group) = options.and_then(|o| o.default_run_as_group) {
            context.insert("runAsGroup".into(), json!(group));
        }
        if let Some(non_root) = options.and_then(|o| o.default_run_as_non_root) {
            context.insert("runAsNonRoot".into(), json!(non_root));
        }
    }
    for container in containers_mut(template, "initContainers") {
        harden(container, true);
    }
    for container in containers_mut(template, "sidecars") {
        harden(container, false);
    }
}

fn for_each_container(
    template: &mut Map<String, Value>,
    mut apply: impl FnMut(&mut Map<String, Value>),
) {
    if let Some(Value::Object(container)) = template.get_mut("container") {
        apply(container);
    }
    for key in ["initContainers", "sidecars"] {
        for container in containers_mut(template, key) {
            apply(container);
        }
    }
}

fn containers_mut<'a>(
    template: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    template
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// Fills the container security context fields that are unset.
fn harden(container: &mut Map<String, Value>, non_root: bool) {
    let context = argo::object_field(container, "securityContext");
    context
        .entry("allowPrivilegeEscalation")
        .or_insert(Value::Bool(false));
    if non_root {
        context.entry("runAsNonRoot").or_insert(Value::Bool(true));
    }
    context
        .entry("capabilities")
        .or_insert_with(|| json!({ "drop": ["ALL"] }));
    context
        .entry("seccompProfile")
        .or_insert_with(seccomp_runtime_default);
}
