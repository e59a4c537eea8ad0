//! Named steps for [`FakeApi`] scripts, so a test reads as what the API server does ("finds",
//! "writes", "conflicts") rather than as methods and status codes repeated in every test.

use http::Method;
use serde_json::Value;

use super::fake_api::{FakeApi, status};

impl FakeApi {
    /// The next read of `path` finds `object`.
    pub fn finds(&self, path: &str, object: Value) -> &Self {
        self.expect(Method::GET, path, 200, object)
    }

    /// The next read of `path` finds nothing: the object is gone.
    pub fn finds_nothing(&self, path: &str) -> &Self {
        self.expect(Method::GET, path, 404, status(404, "NotFound", "gone"))
    }

    /// The next patch of `path` is written; the server answers with `object`.
    pub fn writes(&self, path: &str, object: Value) -> &Self {
        self.expect(Method::PATCH, path, 200, object)
    }

    /// The next patch of `path` meets a conflict: the object changed since it was read.
    pub fn write_conflicts(&self, path: &str) -> &Self {
        self.expect(
            Method::PATCH,
            path,
            409,
            status(409, "Conflict", "the object has been modified"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn each_named_step_answers_as_its_name_says() {
        let api = FakeApi::new();
        let pod = |rv: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "resourceVersion": rv}})
        };
        api.finds("/pods/p", pod("1"))
            .writes("/pods/p", pod("2"))
            .write_conflicts("/pods/p")
            .finds_nothing("/pods/p");
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(api.client(), "n");
        let patch = kube::api::Patch::Merge(json!({}));
        let params = kube::api::PatchParams::default();
        let read = pods.get("p").await.expect("found");
        assert_eq!(read.metadata.resource_version.as_deref(), Some("1"));
        let written = pods.patch("p", &params, &patch).await.expect("written");
        assert_eq!(written.metadata.resource_version.as_deref(), Some("2"));
        let conflict = pods.patch("p", &params, &patch).await.unwrap_err();
        assert!(
            matches!(&conflict, kube::Error::Api(s) if s.code == 409),
            "{conflict}"
        );
        let gone = pods.get("p").await.unwrap_err();
        assert!(
            matches!(&gone, kube::Error::Api(s) if s.code == 404),
            "{gone}"
        );
        api.assert_done();
    }
}
