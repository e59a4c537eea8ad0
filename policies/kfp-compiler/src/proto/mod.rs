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

pub use canon::{ProtoError, Unknown, canonicalize, canonicalize_without};

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
}

pub struct Message {
    pub name: &'static str,
    pub fields: &'static [Field],
}

impl Message {
    fn field(&self, key: &str) -> Option<&Field> {
        self.fields
            .iter()
            .find(|field| field.json == key || field.proto == key)
    }
}

/// Shorthand for the message tables.
const fn field(json: &'static str, proto: &'static str, ty: Ty, label: Label) -> Field {
    Field {
        json,
        proto,
        ty,
        label,
    }
}
