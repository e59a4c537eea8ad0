//! Just enough protobuf to read KFP's IR the way Go's `protojson` does.
//!
//! The Go compiler parses the IR into generated proto structs and writes parts of it back with
//! `protojson`. That round trip drops default-valued fields, renames `snake_case` keys to
//! `lowerCamelCase`, turns enum numbers into names, int64 into strings and normalises
//! durations. [`canonicalize`] performs the same round trip on JSON, driven by the message
//! tables in [`pipeline`], [`deployment`], [`platform`] and [`kubernetes`].

mod canon;
pub mod deployment;
pub mod kubernetes;
pub mod pipeline;
pub mod platform;

pub use canon::{ProtoError, Unknown, canonicalize, canonicalize_for, canonicalize_without};

use crate::release::Release;

/// A field's type as protojson sees it.
#[derive(Clone, Copy)]
pub enum Ty {
    String,
    Bool,
    Int32,
    Int64,
    Double,
    /// Value names by number.
    Enum(&'static [&'static str]),
    Message(&'static Message),
    /// `google.protobuf.Struct`: any JSON object.
    Struct,
    /// `google.protobuf.Value`: any JSON value, `null` included.
    Value,
    /// `google.protobuf.Duration`: `"1.5s"`.
    Duration,
}

/// How a field is present on the wire.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// proto3 scalar without presence: dropped when it holds its default.
    Implicit,
    /// `optional` scalar or any message: kept whenever set.
    Explicit,
    /// Member of the named oneof: kept whenever set, at most one member set.
    Oneof(&'static str),
    Repeated,
    /// `map<string, ty>`.
    Map,
}

pub struct Field {
    /// lowerCamelCase name protojson writes.
    pub json: &'static str,
    /// Original name, also accepted on input.
    pub proto: &'static str,
    pub ty: Ty,
    pub label: Label,
    /// The releases whose proto declares the field (a renumbered or renamed field is two
    /// entries).
    pub since: Release,
    /// The last release that declares it; `None` while every later one does.
    pub until: Option<Release>,
}

impl Field {
    /// The field is new in `release`.
    const fn since(mut self, release: Release) -> Field {
        self.since = release;
        self
    }

    /// The field is gone after `release`.
    const fn until(mut self, release: Release) -> Field {
        self.until = Some(release);
        self
    }

    fn declared_in(&self, release: Release) -> bool {
        self.since <= release && self.until.is_none_or(|until| release <= until)
    }
}

pub struct Message {
    pub name: &'static str,
    pub fields: &'static [Field],
}

impl Message {
    /// The field named `key` (JSON or proto name) as `release` declares it.
    fn field(&self, key: &str, release: Release) -> Option<&Field> {
        self.fields
            .iter()
            .find(|field| (field.json == key || field.proto == key) && field.declared_in(release))
    }
}

/// Enum values a release added, by name: an older release does not know the name (and
/// writes the number back as a number).
const ENUM_VALUES_SINCE: [(&str, Release); 1] = [
    // ParameterType.TASK_CONFIG, 2.15.0.
    ("TASK_CONFIG", Release::V2_15_0),
];

fn enum_value_known(name: &str, release: Release) -> bool {
    ENUM_VALUES_SINCE
        .iter()
        .all(|(value, since)| *value != name || release >= *since)
}

/// Shorthand for the message tables.
const fn field(json: &'static str, proto: &'static str, ty: Ty, label: Label) -> Field {
    Field {
        json,
        proto,
        ty,
        label,
        since: Release::V2_14_4,
        until: None,
    }
}
