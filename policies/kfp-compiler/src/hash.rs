//! The `<hash>` in `components-<hash>` and `implementations-<hash>`.
//!
//! KFP hashes a container executor with `sha256(json.Marshal(container))`, where `container`
//! is the generated Go struct: fields in `.proto` order, `snake_case` keys from the struct
//! tags, zero values left out, int64 as a bare number. This module writes that struct JSON
//! from the canonical (protojson) form of the container.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::gojson;

/// How one struct field is written.
enum Kind {
    Str,
    StrList,
    Float,
    Int64,
    Struct(&'static [GoField]),
    StructList(&'static [GoField]),
}

/// (Go JSON key, protojson key, kind).
type GoField = (&'static str, &'static str, Kind);

const CONTAINER: &[GoField] = &[
    ("image", "image", Kind::Str),
    ("command", "command", Kind::StrList),
    ("args", "args", Kind::StrList),
    ("lifecycle", "lifecycle", Kind::Struct(LIFECYCLE)),
    ("resources", "resources", Kind::Struct(RESOURCES)),
    ("env", "env", Kind::StructList(ENV_VAR)),
];

const LIFECYCLE: &[GoField] = &[("pre_cache_check", "preCacheCheck", Kind::Struct(EXEC))];

const EXEC: &[GoField] = &[
    ("command", "command", Kind::StrList),
    ("args", "args", Kind::StrList),
];

const RESOURCES: &[GoField] = &[
    ("cpu_limit", "cpuLimit", Kind::Float),
    ("memory_limit", "memoryLimit", Kind::Float),
    ("cpu_request", "cpuRequest", Kind::Float),
    ("memory_request", "memoryRequest", Kind::Float),
    ("resource_cpu_limit", "resourceCpuLimit", Kind::Str),
    ("resource_memory_limit", "resourceMemoryLimit", Kind::Str),
    ("resource_cpu_request", "resourceCpuRequest", Kind::Str),
    (
        "resource_memory_request",
        "resourceMemoryRequest",
        Kind::Str,
    ),
    ("accelerator", "accelerator", Kind::Struct(ACCELERATOR)),
];

const ACCELERATOR: &[GoField] = &[
    ("type", "type", Kind::Str),
    ("count", "count", Kind::Int64),
    ("resource_type", "resourceType", Kind::Str),
    ("resource_count", "resourceCount", Kind::Str),
];

const ENV_VAR: &[GoField] = &[("name", "name", Kind::Str), ("value", "value", Kind::Str)];

/// Hex SHA-256 of the Go struct JSON of a canonical `PipelineContainerSpec`.
pub fn container_hash(container: &Value) -> String {
    let mut text = String::with_capacity(1024);
    write_struct(CONTAINER, container, &mut text);
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn write_struct(fields: &[GoField], value: &Value, out: &mut String) {
    out.push('{');
    let mut first = true;
    for (go_key, proto_key, kind) in fields {
        let Some(field) = value.get(*proto_key) else {
            continue;
        };
        // Zero values are already absent from the canonical form, except -0.0.
        if matches!(kind, Kind::Float) && field.as_f64() == Some(0.0) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        gojson::write_str(go_key, out);
        out.push(':');
        match kind {
            Kind::Str | Kind::StrList | Kind::Float => gojson::write_value(field, out),
            Kind::Int64 => out.push_str(field.as_str().unwrap_or("0")),
            Kind::Struct(inner) => write_struct(inner, field, out),
            Kind::StructList(inner) => {
                out.push('[');
                for (i, item) in field.as_array().into_iter().flatten().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_struct(inner, item, out);
                }
                out.push(']');
            }
        }
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn struct_json_keeps_proto_order_and_snake_case() {
        let container = json!({
            "image": "python:3.11",
            "args": ["a<b"],
            "command": ["sh"],
            "resources": {"cpuLimit": 1.5, "resourceCpuLimit": "2", "accelerator": {"count": "2"}},
            "env": [{"name": "A", "value": "1"}]
        });
        let mut text = String::new();
        write_struct(CONTAINER, &container, &mut text);
        assert_eq!(
            text,
            r#"{"image":"python:3.11","command":["sh"],"args":["a\u003cb"],"resources":{"cpu_limit":1.5,"resource_cpu_limit":"2","accelerator":{"count":2}},"env":[{"name":"A","value":"1"}]}"#
        );
    }
}
