//! The form an SWF is kept in between reconciles. A whole SWF is about 11 KB of JSON (its
//! embedded workflow and the last good render) and several times that as a parsed object; the
//! store keeps only what keys and schedules a reconcile (name, namespace, uid,
//! resourceVersion) and the rest compressed, unpacked only while the SWF is being decided.

use std::borrow::Cow;
use std::io::{Read as _, Write as _};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use kube::core::DynamicResourceScope;
use kube::runtime::watcher;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An SWF as the reflector stores it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PackedSwf {
    /// Only name, namespace, uid and resourceVersion.
    pub metadata: ObjectMeta,
    /// The whole object (without managed fields) as deflated JSON.
    packed: Box<[u8]>,
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("cannot encode the SWF: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot (de)compress the SWF: {0}")]
    Io(#[from] std::io::Error),
}

impl PackedSwf {
    /// Managed fields are bookkeeping no decision reads; they are dropped.
    pub fn pack(mut swf: DynamicObject) -> Result<Self, PackError> {
        swf.metadata.managed_fields = None;
        let metadata = ObjectMeta {
            name: swf.metadata.name.clone(),
            namespace: swf.metadata.namespace.clone(),
            uid: swf.metadata.uid.clone(),
            resource_version: swf.metadata.resource_version.clone(),
            ..ObjectMeta::default()
        };
        // Serialized first and compressed in one write: the encoder zero-fills its whole
        // output buffer on every write, and serde writes each token on its own.
        let json = serde_json::to_vec(&swf)?;
        // Fast compression: the watch of a mass rebuild packs every write's echo.
        let mut encoder =
            DeflateEncoder::new(Vec::with_capacity(json.len() / 4), Compression::fast());
        encoder.write_all(&json)?;
        Ok(PackedSwf {
            metadata,
            packed: encoder.finish()?.into_boxed_slice(),
        })
    }

    /// The whole object again, as the JSON the policy reads (no typed object in between).
    pub fn unpack(&self) -> Result<Value, PackError> {
        let mut json = Vec::with_capacity(self.packed.len() * 4);
        DeflateDecoder::new(&self.packed[..]).read_to_end(&mut json)?;
        Ok(serde_json::from_slice(&json)?)
    }

    /// Bytes kept for the object besides its metadata.
    pub fn packed_len(&self) -> usize {
        self.packed.len()
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

/// Packs every object of a watch event. An object that cannot be packed (it came from JSON, so
/// only an allocation failure could do this) is kept as metadata alone: its reconcile reports it.
pub fn pack_event(event: watcher::Event<DynamicObject>) -> watcher::Event<PackedSwf> {
    let pack = |swf: DynamicObject| {
        let metadata = swf.metadata.clone();
        PackedSwf::pack(swf).unwrap_or_else(|error| {
            tracing::warn!(name = metadata.name, %error, "cannot pack an SWF");
            PackedSwf {
                metadata,
                packed: Box::default(),
            }
        })
    };
    match event {
        watcher::Event::Apply(swf) => watcher::Event::Apply(pack(swf)),
        watcher::Event::Delete(swf) => watcher::Event::Delete(pack(swf)),
        watcher::Event::InitApply(swf) => watcher::Event::InitApply(pack(swf)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

impl kube::Resource for PackedSwf {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swf() -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "ScheduledWorkflow",
            "metadata": {
                "name": "daily", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42",
                "labels": {"a": "b"},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            },
            "spec": {"workflow": {"spec": {"templates": [{"name": "x".repeat(4000)}]}}},
        }))
        .expect("an SWF")
    }

    #[test]
    fn unpacks_to_the_object_without_managed_fields() {
        let packed = PackedSwf::pack(swf()).expect("packed");
        let mut expected = swf();
        expected.metadata.managed_fields = None;
        let unpacked = packed.unpack().expect("unpacked");
        assert_eq!(unpacked, serde_json::to_value(expected).unwrap());
    }

    #[test]
    fn keeps_only_the_keys_uncompressed() {
        let packed = PackedSwf::pack(swf()).expect("packed");
        assert_eq!(packed.metadata.name.as_deref(), Some("daily"));
        assert_eq!(packed.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(packed.metadata.uid.as_deref(), Some("u-1"));
        assert_eq!(packed.resource_version(), Some("42"));
        assert!(packed.metadata.labels.is_none());
        assert!(packed.packed_len() < 1000, "{}", packed.packed_len());
    }

    #[test]
    fn an_empty_pack_is_an_error_not_an_object() {
        let broken = PackedSwf {
            metadata: ObjectMeta::default(),
            packed: Box::default(),
        };
        assert!(broken.unpack().is_err());
    }
}
