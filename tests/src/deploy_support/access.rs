//! What a client may do, as the API server's authorizer answers (SelfSubjectAccessReview).

use anyhow::{Context as _, Result};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

/// One request: API group, resource, verb, namespace ("" for cluster-wide), object name ("" for
/// any).
#[derive(Clone, Copy, Debug)]
pub struct Access<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub verb: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Whether the authorizer lets `client` do `access`.
pub async fn allowed(client: &kube::Client, access: Access<'_>) -> Result<bool> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(access.group.into()),
                resource: Some(access.resource.into()),
                verb: Some(access.verb.into()),
                namespace: Some(access.namespace.into()).filter(|n: &String| !n.is_empty()),
                name: Some(access.name.into()).filter(|n: &String| !n.is_empty()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answer = api.create(&PostParams::default(), &review).await?;
    Ok(answer.status.context("no review status")?.allowed)
}
