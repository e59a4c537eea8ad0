//! Helpers for creating objects in tests: YAML apply and ServiceAccount tokens.

use anyhow::{Context as _, Result};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams};
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt as _};
use serde::Deserialize as _;

/// Field manager for objects the tests set up.
pub const FIELD_MANAGER: &str = "pipewarden-tests";

/// Server-side applies every document of `yaml`; namespaced objects go to `namespace` when given.
/// Kinds are resolved through discovery, so any installed type works.
pub async fn apply_yaml(
    client: &Client,
    namespace: Option<&str>,
    yaml: &str,
) -> Result<Vec<DynamicObject>> {
    let mut applied = Vec::new();
    for document in serde_yaml::Deserializer::from_str(yaml) {
        let value = serde_yaml::Value::deserialize(document)?;
        if value.is_null() {
            continue;
        }
        let mut object: DynamicObject =
            serde_yaml::from_value(value).context("parsing a YAML document")?;
        let types = object
            .types
            .as_ref()
            .context("object without apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(types)?;
        let (resource, caps) = discovery::pinned_kind(client, &gvk).await?;
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Cluster => Api::all_with(client.clone(), &resource),
            Scope::Namespaced => {
                if let Some(ns) = namespace {
                    object.metadata.namespace = Some(ns.to_owned());
                }
                let ns = object.namespace().unwrap_or_else(|| "default".to_owned());
                Api::namespaced_with(client.clone(), &ns, &resource)
            }
        };
        let name = object.name_any();
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let result = api.patch(&name, &params, &Patch::Apply(&object)).await;
        applied.push(result.with_context(|| format!("applying {} {name}", gvk.kind))?);
    }
    Ok(applied)
}

/// A token for ServiceAccount `namespace/name` through the TokenRequest API (no controller-manager
/// runs here to mint one); creates the ServiceAccount if it does not exist.
pub async fn service_account_token(client: &Client, namespace: &str, name: &str) -> Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    if accounts.get_opt(name).await?.is_none() {
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        accounts.create(&PostParams::default(), &account).await?;
    }
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    let issued = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    Ok(issued
        .status
        .context("TokenRequest returned no status")?
        .token)
}
