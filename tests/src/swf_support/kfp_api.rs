//! A stand-in for the KFP apiserver's health endpoint, whose version a test changes.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

pub struct KfpApi {
    /// Base URL, as `--kfp-api-url` takes it.
    pub url: String,
    tag: Arc<Mutex<String>>,
    server: tokio::task::JoinHandle<()>,
}

impl KfpApi {
    /// Serves `GET /apis/v2beta1/healthz` on a free loopback port, reporting `tag`.
    pub async fn serve(tag: &str) -> Result<Self> {
        let tag = Arc::new(Mutex::new(tag.to_owned()));
        let app = Router::new()
            .route("/apis/v2beta1/healthz", get(healthz))
            .with_state(tag.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(KfpApi { url, tag, server })
    }

    /// What the endpoint reports from now on, as after an upgrade of KFP.
    pub fn set_tag(&self, tag: &str) {
        *self.tag.lock().expect("tag") = tag.to_owned();
    }
}

impl Drop for KfpApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The answer's shape as KFP 2.x gives it.
async fn healthz(State(tag): State<Arc<Mutex<String>>>) -> impl IntoResponse {
    let tag = tag.lock().expect("tag").clone();
    let body = json!({
        "commit_sha": "0123456789abcdef",
        "tag_name": tag,
        "multi_user": true,
        "pipeline_store": "database"
    });
    ([(CONTENT_TYPE, "application/json")], body.to_string())
}
