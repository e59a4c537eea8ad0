//! The forms an SWF is kept in. A whole SWF is about 11 KB of JSON (its embedded workflow and
//! the last good render) and several times that as a parsed object. The watch delivers it as
//! [`WatchedSwf`]: its keys and the JSON text as it came, never parsed into a tree, since most
//! SWFs a shard watches are another shard's and are dropped unread. The store keeps
//! [`PackedSwf`]: the keys (name, namespace, uid, resourceVersion) and, while the budget has room
//! and until it is decided (`bodies`), the rest compressed, unpacked only while the SWF is being
//! decided.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use kube::api::{ApiResource, ObjectMeta};
use kube::core::DynamicResourceScope;
use kube::runtime::watcher;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use super::bodies::{Bodies, Body};
use crate::compress::{Format, compress, inflate};
use crate::swf::LiveSwf;

/// Far past any object the API server stores (etcd refuses requests over about 1.5 MiB).
const MAX_UNPACKED_BYTES: usize = 64 << 20;

/// An SWF as a list or watch delivers it.
#[derive(Clone, Debug)]
pub struct WatchedSwf {
    /// Only name, namespace, uid and resourceVersion.
    pub metadata: ObjectMeta,
    /// The whole object, as the API server wrote it.
    json: Box<RawValue>,
}

impl<'de> Deserialize<'de> for WatchedSwf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Keys {
            metadata: KeyMeta,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct KeyMeta {
            name: Option<String>,
            namespace: Option<String>,
            uid: Option<String>,
            resource_version: Option<String>,
        }
        let json = Box::<RawValue>::deserialize(deserializer)?;
        let keys: Keys = serde_json::from_str(json.get()).map_err(serde::de::Error::custom)?;
        let metadata = ObjectMeta {
            name: keys.metadata.name,
            namespace: keys.metadata.namespace,
            uid: keys.metadata.uid,
            resource_version: keys.metadata.resource_version,
            ..ObjectMeta::default()
        };
        Ok(WatchedSwf { metadata, json })
    }
}

/// An SWF as the reflector stores it. Copies share one body, and letting it go from one (the
/// store's) lets it go from the store.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PackedSwf {
    /// Only name, namespace, uid and resourceVersion.
    pub metadata: ObjectMeta,
    /// The whole object (without managed fields) as deflated JSON, while kept.
    #[serde(skip)]
    body: Mutex<Option<Arc<Body>>>,
}

impl Clone for PackedSwf {
    fn clone(&self) -> Self {
        PackedSwf {
            metadata: self.metadata.clone(),
            body: Mutex::new(self.body()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("cannot encode the SWF: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot (de)compress the SWF: {0}")]
    Io(#[from] std::io::Error),
}

impl PackedSwf {
    /// Managed fields are bookkeeping no decision reads; they are dropped. Only the top level
    /// and the metadata are split into their fields; every value is copied as it came. The
    /// body is kept only if it fits in what is left of `bodies`.
    pub fn pack(swf: &WatchedSwf, bodies: &Arc<Bodies>) -> Result<Self, PackError> {
        let text = swf.json.get();
        let top = fields(text)?;
        let mut metadata = Vec::new();
        if let Some((_, value)) = top.iter().find(|(key, _)| key == "metadata") {
            let fields = fields(value.get())?;
            let kept = fields
                .iter()
                .filter(|(key, _)| key != "managedFields")
                .map(|(key, value)| (key.as_str(), value.get().as_bytes()));
            write_object(&mut metadata, kept)?;
        }
        let mut json = Vec::with_capacity(text.len());
        let top = top.iter().map(|(key, value)| {
            let value = match key.as_str() {
                "metadata" => &metadata[..],
                _ => value.get().as_bytes(),
            };
            (key.as_str(), value)
        });
        write_object(&mut json, top)?;
        // Fast compression: the watch of a mass rebuild packs every write's echo.
        let packed = compress(Format::Deflate, 1, &json)?;
        Ok(PackedSwf {
            metadata: swf.metadata.clone(),
            body: Mutex::new(bodies.keep(packed)),
        })
    }

    /// Its keys alone.
    pub fn keys_only(swf: WatchedSwf) -> Self {
        PackedSwf {
            metadata: swf.metadata,
            body: Mutex::default(),
        }
    }

    /// The whole object again: its JSON text, given to the policy as it is, and its tree.
    /// None when its body is not kept.
    pub fn unpack(&self) -> Result<Option<LiveSwf>, PackError> {
        let Some(body) = self.body() else {
            return Ok(None);
        };
        let json = inflate(body.bytes(), MAX_UNPACKED_BYTES)?;
        let json = String::from_utf8(json).map_err(|e| std::io::Error::other(e.utf8_error()))?;
        Ok(Some(LiveSwf::parse(json)?))
    }

    /// Lets the body go: the SWF is decided at this version.
    pub fn release(&self) {
        drop(self.lock().take());
    }

    /// Bytes kept for the object besides its metadata.
    pub fn packed_len(&self) -> usize {
        self.body().map_or(0, |body| body.bytes().len())
    }

    fn body(&self) -> Option<Arc<Body>> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Body>>> {
        // A panic while holding it cannot leave the Option half-written.
        self.body
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

/// Writes a JSON object of `fields`, each value already JSON text.
fn write_object<'a>(
    out: &mut Vec<u8>,
    fields: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<(), serde_json::Error> {
    out.push(b'{');
    for (index, (key, value)) in fields.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        out.extend_from_slice(value);
    }
    out.push(b'}');
    Ok(())
}

/// The fields of a JSON object in their order, each value unparsed.
fn fields(object: &str) -> Result<Vec<(String, &RawValue)>, serde_json::Error> {
    struct Fields;
    impl<'de> serde::de::Visitor<'de> for Fields {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut fields = Vec::new();
            while let Some(field) = map.next_entry()? {
                fields.push(field);
            }
            Ok(fields)
        }
    }
    serde_json::Deserializer::from_str(object).deserialize_map(Fields)
}

/// Packs every object of a watch event (a deleted one to its keys). An object that cannot be
/// packed (it came as JSON, so only an allocation failure could do this) is kept as its keys:
/// its reconcile reads it again.
pub fn pack_event(
    event: watcher::Event<WatchedSwf>,
    bodies: &Arc<Bodies>,
) -> watcher::Event<PackedSwf> {
    let pack = |swf: WatchedSwf| {
        PackedSwf::pack(&swf, bodies).unwrap_or_else(|error| {
            tracing::warn!(name = swf.metadata.name, %error, "cannot pack an SWF");
            PackedSwf::keys_only(swf)
        })
    };
    match event {
        watcher::Event::Apply(swf) => watcher::Event::Apply(pack(swf)),
        watcher::Event::Delete(swf) => watcher::Event::Delete(PackedSwf::keys_only(swf)),
        watcher::Event::InitApply(swf) => watcher::Event::InitApply(pack(swf)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// Both forms are SWFs to kube's reflector and controller, keyed by their metadata.
macro_rules! swf_resource {
    ($form:ty) => {
        impl kube::Resource for $form {
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
    };
}

swf_resource!(WatchedSwf);
swf_resource!(PackedSwf);

#[cfg(test)]
mod tests {
    use kube::core::{ObjectList, WatchEvent};
    use serde_json::Value;

    use super::*;

    fn swf() -> Value {
        serde_json::json!({
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "ScheduledWorkflow",
            "metadata": {
                "name": "daily", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42",
                "labels": {"a": "b"},
                "annotations": {"quoted \"key\"": "line\nbreak \u{e9}"},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            },
            "spec": {"workflow": {"spec": {"templates": [{"name": "x".repeat(4000)}]}}},
            "status": {"conditions": []},
        })
    }

    fn watched(object: &Value) -> WatchedSwf {
        serde_json::from_str(&object.to_string()).expect("an SWF")
    }

    #[test]
    fn unpacks_to_the_object_without_managed_fields() {
        let packed = PackedSwf::pack(&watched(&swf()), &Bodies::unlimited()).expect("packed");
        let mut expected = swf();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let unpacked = packed.unpack().expect("unpacked").expect("kept");
        assert_eq!(unpacked.value, expected);
    }

    #[test]
    fn a_body_beyond_the_budget_is_not_kept_and_a_released_one_is_given_back() {
        let bodies = Bodies::new(5000, prometheus_client::metrics::gauge::Gauge::default());
        let first = PackedSwf::pack(&watched(&swf()), &bodies).expect("packed");
        let kept = first.packed_len();
        assert!(
            kept > 0 && bodies.held() == kept,
            "{kept} {}",
            bodies.held()
        );
        let mut large = swf();
        large["spec"]["big"] =
            serde_json::json!((0..2000).map(|n| n * 7919 % 104729).collect::<Vec<_>>());
        let second = PackedSwf::pack(&watched(&large), &bodies).expect("packed");
        assert_eq!(second.packed_len(), 0, "over budget: keys alone");
        assert!(second.unpack().expect("no error").is_none());
        assert_eq!(second.metadata.name.as_deref(), Some("daily"));
        // The store's copy and the event's share the body; letting the store's go frees it.
        let stored = first.clone();
        drop(first);
        assert_eq!(bodies.held(), kept);
        stored.release();
        assert_eq!((bodies.held(), stored.packed_len()), (0, 0));
    }

    #[test]
    fn keeps_only_the_keys_uncompressed() {
        let packed = PackedSwf::pack(&watched(&swf()), &Bodies::unlimited()).expect("packed");
        assert_eq!(packed.metadata.name.as_deref(), Some("daily"));
        assert_eq!(packed.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(packed.metadata.uid.as_deref(), Some("u-1"));
        assert_eq!(packed.resource_version(), Some("42"));
        assert!(packed.metadata.labels.is_none());
        assert!(packed.packed_len() < 1000, "{}", packed.packed_len());
    }

    #[test]
    fn keeps_the_fields_in_the_order_they_came() {
        let text = r#"{"spec":{"b":1,"a":2},"kind":"ScheduledWorkflow","metadata":{"uid":"u","name":"n","managedFields":[]}}"#;
        let swf: WatchedSwf = serde_json::from_str(text).expect("an SWF");
        let packed = PackedSwf::pack(&swf, &Bodies::unlimited()).expect("packed");
        let json = inflate(packed.body().unwrap().bytes(), usize::MAX).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            r#"{"spec":{"b":1,"a":2},"kind":"ScheduledWorkflow","metadata":{"uid":"u","name":"n"}}"#
        );
    }

    // kube decodes lists through a flattened struct and watch events as an adjacently tagged
    // enum; the raw object must survive both. The API server writes an event's `type` before
    // its `object` (the field order of Go's metav1.WatchEvent), which lets serde hand the
    // object over unbuffered.
    #[test]
    fn decodes_from_kubes_list_and_watch_answers() {
        let list = serde_json::json!({
            "apiVersion": "kubeflow.org/v1beta1", "kind": "ScheduledWorkflowList",
            "metadata": {"resourceVersion": "7"}, "items": [swf(), swf()],
        });
        let list: ObjectList<WatchedSwf> = serde_json::from_str(&list.to_string()).expect("a list");
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.items[1].metadata.uid.as_deref(), Some("u-1"));
        let event = format!(r#"{{"type":"MODIFIED","object":{}}}"#, swf());
        match serde_json::from_str::<WatchEvent<WatchedSwf>>(&event).expect("an event") {
            WatchEvent::Modified(swf) => {
                assert_eq!(swf.metadata.resource_version.as_deref(), Some("42"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_object_without_metadata_is_refused() {
        assert!(serde_json::from_str::<WatchedSwf>(r#"{"spec":{}}"#).is_err());
        assert!(serde_json::from_str::<WatchedSwf>("[]").is_err());
    }

    #[test]
    fn an_empty_body_is_an_error_not_an_object() {
        let broken = PackedSwf::default();
        *broken.lock() = Bodies::unlimited().keep(Vec::new());
        assert!(broken.unpack().is_err());
    }
}
