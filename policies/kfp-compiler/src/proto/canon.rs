//! The protojson round trip (unmarshal, then marshal) on JSON values.

use std::fmt;

use serde_json::{Map, Number, Value};

use super::{Field, Label, Message, Ty, enum_value_known};
use crate::release::Release;

/// What to do with a key the message does not declare.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// `protojson.Unmarshal`: an error.
    Reject,
    /// `protojson.UnmarshalOptions{DiscardUnknown: true}`: dropped.
    Discard,
}

/// Where in the input a value did not fit its message, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoError {
    /// Keys from the top, innermost last (e.g. `root.dag.tasks.train.retryPolicy`).
    pub path: String,
    pub message: String,
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "at {}: {}", self.path, self.message)
        }
    }
}

/// The error while it unwinds: path segments innermost first, joined once at the top.
struct Failure {
    reversed_path: Vec<String>,
    message: String,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Failure {
            reversed_path: Vec::new(),
            message: message.into(),
        }
    }

    fn at(mut self, segment: &str) -> Self {
        self.reversed_path.push(segment.to_owned());
        self
    }
}

type Result<T> = std::result::Result<T, Failure>;

/// How a release's `protojson` reads: its proto declarations, and unknown keys.
#[derive(Clone, Copy)]
struct Reading {
    release: Release,
    unknown: Unknown,
}

/// `input` parsed as `message` and written back as protojson does, keyed by JSON names,
/// with the latest supported release's proto. Default-valued implicit fields, empty lists
/// and empty maps are left out; messages that are set stay, even when empty.
pub fn canonicalize(
    message: &'static Message,
    input: &Value,
    unknown: Unknown,
) -> std::result::Result<Value, ProtoError> {
    canonicalize_for(Release::LATEST, message, input, unknown)
}

/// [`canonicalize`] with the proto as `release` declares it.
pub fn canonicalize_for(
    release: Release,
    message: &'static Message,
    input: &Value,
    unknown: Unknown,
) -> std::result::Result<Value, ProtoError> {
    canonicalize_without(release, message, input, unknown, &[])
}

/// [`canonicalize_for`], with the named top-level `Struct` fields checked but left out of
/// the result (for callers that read them another way and would only drop the copy).
pub fn canonicalize_without(
    release: Release,
    message: &'static Message,
    input: &Value,
    unknown: Unknown,
    left_out: &[&str],
) -> std::result::Result<Value, ProtoError> {
    let reading = Reading { release, unknown };
    canonical_message(message, input, reading, left_out).map_err(|failure| {
        let mut path = failure.reversed_path;
        path.reverse();
        ProtoError {
            path: path.join("."),
            message: failure.message,
        }
    })
}

fn canonical_message(
    message: &'static Message,
    input: &Value,
    reading: Reading,
    left_out: &[&str],
) -> Result<Value> {
    let Value::Object(fields) = input else {
        return Err(Failure::new(format!(
            "expected an object for {}, got {}",
            message.name,
            kind(input)
        )));
    };
    let mut out = Map::new();
    let mut oneofs: Vec<(&'static str, &'static str)> = Vec::new();
    for (key, value) in fields {
        let Some(field) = message.field(key, reading.release) else {
            if reading.unknown == Unknown::Reject {
                return Err(Failure::new(format!(
                    "unknown field {key:?} in {}",
                    message.name
                )));
            }
            continue;
        };
        if matches!(field.ty, Ty::Struct) && left_out.contains(&field.json) {
            if !(value.is_null() || value.is_object()) {
                return Err(mismatch("an object", value).at(key));
            }
            continue;
        }
        let canonical = canonical_field(field, value, reading).map_err(|f| f.at(key))?;
        let Some(canonical) = canonical else {
            continue;
        };
        if out.contains_key(field.json) {
            return Err(Failure::new(format!("field {:?} given twice", field.json)).at(key));
        }
        if let Label::Oneof(group) = field.label {
            if let Some((_, other)) = oneofs.iter().find(|(g, _)| *g == group) {
                return Err(
                    Failure::new(format!("oneof {group:?} already set by {other:?}")).at(key),
                );
            }
            oneofs.push((group, field.json));
        }
        out.insert(field.json.to_owned(), canonical);
    }
    Ok(Value::Object(out))
}

fn canonical_field(field: &Field, value: &Value, reading: Reading) -> Result<Option<Value>> {
    match field.label {
        Label::Repeated => {
            let items = match value {
                Value::Null => return Ok(None),
                Value::Array(items) => items,
                other => {
                    return Err(Failure::new(format!(
                        "expected a list, got {}",
                        kind(other)
                    )));
                }
            };
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                out.push(element(field.ty, item, reading).map_err(|f| f.at(&index.to_string()))?);
            }
            Ok((!out.is_empty()).then_some(Value::Array(out)))
        }
        Label::Map => {
            let entries = match value {
                Value::Null => return Ok(None),
                Value::Object(entries) => entries,
                other => return Err(Failure::new(format!("expected a map, got {}", kind(other)))),
            };
            let mut out = Map::new();
            for (key, item) in entries {
                out.insert(
                    key.clone(),
                    element(field.ty, item, reading).map_err(|f| f.at(key))?,
                );
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        Label::Implicit | Label::Explicit | Label::Oneof(_) => {
            // null leaves a field unset, except a google.protobuf.Value, where it is NullValue.
            if value.is_null() && !matches!(field.ty, Ty::Value) {
                return Ok(None);
            }
            let canonical = element(field.ty, value, reading)?;
            if field.label == Label::Implicit && is_default(field.ty, &canonical) {
                return Ok(None);
            }
            Ok(Some(canonical))
        }
    }
}

fn element(ty: Ty, value: &Value, reading: Reading) -> Result<Value> {
    if value.is_null() && !matches!(ty, Ty::Value) {
        return Err(Failure::new("null is not allowed here"));
    }
    match ty {
        Ty::String => match value {
            Value::String(_) => Ok(value.clone()),
            other => Err(mismatch("a string", other)),
        },
        Ty::Bool => match value {
            Value::Bool(_) => Ok(value.clone()),
            other => Err(mismatch("a boolean", other)),
        },
        Ty::Int32 => {
            let n = integer(value)?;
            i32::try_from(n).map_err(|_| Failure::new(format!("{n} does not fit int32")))?;
            Ok(Value::Number(n.into()))
        }
        Ty::Int64 => Ok(Value::String(integer(value)?.to_string())),
        Ty::Double => double(value),
        Ty::Enum(names) => match value {
            Value::String(name)
                if names.contains(&name.as_str()) && enum_value_known(name, reading.release) =>
            {
                Ok(value.clone())
            }
            Value::String(name) => Err(Failure::new(format!("unknown enum value {name:?}"))),
            Value::Number(_) => {
                let n = integer(value)?;
                Ok(usize::try_from(n)
                    .ok()
                    .and_then(|index| names.get(index))
                    .filter(|name| enum_value_known(name, reading.release))
                    .map_or_else(
                        || Value::Number(n.into()),
                        |name| Value::String((*name).to_owned()),
                    ))
            }
            other => Err(mismatch("an enum name", other)),
        },
        Ty::Message(message) => canonical_message(message, value, reading, &[]),
        Ty::Struct => match value {
            Value::Object(_) => Ok(value.clone()),
            other => Err(mismatch("an object", other)),
        },
        Ty::Value => Ok(value.clone()),
        Ty::Duration => match value {
            Value::String(text) => duration(text).map(Value::String),
            other => Err(mismatch("a duration string", other)),
        },
    }
}

fn is_default(ty: Ty, value: &Value) -> bool {
    match (ty, value) {
        (Ty::String, Value::String(s)) => s.is_empty(),
        (Ty::Bool, Value::Bool(b)) => !b,
        (Ty::Int32, Value::Number(n)) => n.as_i64() == Some(0),
        (Ty::Int64, Value::String(s)) => s == "0",
        // -0.0 has presence in Go's proto3 encoding.
        (Ty::Double, Value::Number(n)) => n.as_f64().is_some_and(|f| f.to_bits() == 0),
        (Ty::Enum(names), Value::String(s)) => names.first() == Some(&s.as_str()),
        (Ty::Enum(_), Value::Number(n)) => n.as_i64() == Some(0),
        _ => false,
    }
}

/// An integral JSON number or decimal string.
fn integer(value: &Value) -> Result<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.3e18)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| Failure::new(format!("{n} is not an integer"))),
        Value::String(text) => text
            .trim()
            .parse()
            .map_err(|_| Failure::new(format!("{text:?} is not an integer"))),
        other => Err(mismatch("an integer", other)),
    }
}

fn double(value: &Value) -> Result<Value> {
    match value {
        Value::Number(n) => Ok(Value::Number(
            Number::from_f64(n.as_f64().unwrap_or(0.0)).unwrap_or_else(|| 0.into()),
        )),
        Value::String(text) if matches!(text.as_str(), "NaN" | "Infinity" | "-Infinity") => {
            Ok(value.clone())
        }
        // JSON number syntax, as protojson accepts inside a string.
        Value::String(text) => serde_json::from_str::<f64>(text)
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| Failure::new(format!("{text:?} is not a number"))),
        other => Err(mismatch("a number", other)),
    }
}

/// A `google.protobuf.Duration` in protojson's form: seconds, then 0, 3, 6 or 9 fraction
/// digits, then `s`.
fn duration(text: &str) -> Result<String> {
    let bad = || Failure::new(format!("{text:?} is not a duration"));
    let body = text.strip_suffix('s').ok_or_else(bad)?;
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) || fraction.len() > 9 {
        return Err(bad());
    }
    if body.contains('.') && fraction.is_empty() {
        return Err(bad());
    }
    let seconds: i64 = whole.parse().map_err(|_| bad())?;
    let nanos: u32 = format!("{fraction:0<9}").parse().map_err(|_| bad())?;
    let sign = if negative && (seconds != 0 || nanos != 0) {
        "-"
    } else {
        ""
    };
    if nanos == 0 {
        return Ok(format!("{sign}{seconds}s"));
    }
    let mut digits = format!("{nanos:09}");
    while digits.len() > 3 && digits.ends_with("000") {
        digits.truncate(digits.len() - 3);
    }
    Ok(format!("{sign}{seconds}.{digits}s"))
}

fn mismatch(expected: &str, got: &Value) -> Failure {
    Failure::new(format!("expected {expected}, got {}", kind(got)))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::pipeline::{COMPONENT_SPEC, PIPELINE_SPEC};
    use serde_json::json;

    #[test]
    fn durations_take_protojson_form() {
        assert_eq!(duration("0s").ok(), Some("0s".to_owned()));
        assert_eq!(duration("3600s").ok(), Some("3600s".to_owned()));
        assert_eq!(duration("1.5s").ok(), Some("1.500s".to_owned()));
        assert_eq!(duration("-0.000001s").ok(), Some("-0.000001s".to_owned()));
        assert_eq!(duration("1.0000000001s").ok(), None);
        assert_eq!(duration("1m").ok(), None);
    }

    #[test]
    fn defaults_are_dropped_and_names_normalised() {
        let input = json!({
            "executor_label": "exec-a",
            "inputDefinitions": {"parameters": {
                "x": {"parameterType": 2, "isOptional": false, "defaultValue": null},
                "y": {"parameter_type": "STRING", "description": ""}
            }},
            "outputDefinitions": {}
        });
        let got = canonicalize(&COMPONENT_SPEC, &input, Unknown::Reject).unwrap();
        assert_eq!(
            got,
            json!({
                "executorLabel": "exec-a",
                "inputDefinitions": {"parameters": {
                    "x": {"parameterType": "NUMBER_INTEGER", "defaultValue": null},
                    "y": {"parameterType": "STRING"}
                }},
                "outputDefinitions": {}
            })
        );
    }

    #[test]
    fn unknown_fields_and_double_oneofs_are_errors() {
        let err = canonicalize(
            &PIPELINE_SPEC,
            &json!({"root": {"dagg": {}}}),
            Unknown::Reject,
        )
        .unwrap_err();
        assert_eq!(err.path, "root");
        assert!(err.message.contains("dagg"), "{err}");
        let err = canonicalize(
            &PIPELINE_SPEC,
            &json!({"root": {"dag": {}, "executorLabel": "x"}}),
            Unknown::Reject,
        )
        .unwrap_err();
        assert!(err.message.contains("oneof"), "{err}");
    }

    #[test]
    fn int64_becomes_a_string() {
        let got = canonicalize(
            &crate::proto::kubernetes::EXECUTOR_CONFIG,
            &json!({"activeDeadlineSeconds": 30, "tolerations": [{"key": "a", "tolerationSeconds": 0}]}),
            Unknown::Reject,
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"activeDeadlineSeconds": "30", "tolerations": [{"key": "a", "tolerationSeconds": "0"}]})
        );
    }
}
