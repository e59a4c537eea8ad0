//! A stand-in for the KFP apiserver's health endpoint, whose version a test changes: plain
//! HTTP, or HTTPS with a certificate of its own CA, as KFP's cert-manager TLS overlays serve it.

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
    tag: Arc<Mutex<Answer>>,
    server: tokio::task::JoinHandle<()>,
}

impl KfpApi {
    /// Serves `GET /apis/v2beta1/healthz` on a free loopback port, reporting `tag`.
    pub async fn serve(tag: &str) -> Result<Self> {
        let tag = Arc::new(Mutex::new(Answer::new(tag)));
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

    /// [`KfpApi::serve`] over TLS for `127.0.0.1`, with a certificate signed by a fresh CA;
    /// returns the CA certificate (PEM), as the `ca.crt` of the certificate's Secret.
    pub async fn serve_tls(tag: &str) -> Result<(Self, String)> {
        let (server_config, ca_pem) = tls_server_config()?;
        let tag = Arc::new(Mutex::new(Answer::new(tag)));
        let app = Router::new()
            .route("/apis/v2beta1/healthz", get(healthz))
            .with_state(tag.clone());
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("https://{}", tcp.local_addr()?);
        let listener = TlsListener {
            tcp,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server_config)),
        };
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((KfpApi { url, tag, server }, ca_pem))
    }

    /// What the endpoint reports from now on, as after an upgrade of KFP.
    pub fn set_tag(&self, tag: &str) {
        self.tag.lock().expect("tag").tag = tag.to_owned();
    }

    /// Whether the endpoint reports multi-user mode (`multi_user`; true unless set).
    pub fn set_multi_user(&self, multi_user: bool) {
        self.tag.lock().expect("tag").multi_user = multi_user;
    }
}

/// What the endpoint answers.
struct Answer {
    tag: String,
    multi_user: bool,
}

impl Answer {
    fn new(tag: &str) -> Self {
        Answer {
            tag: tag.to_owned(),
            multi_user: true,
        }
    }
}

impl Drop for KfpApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The answer's shape as KFP 2.x gives it.
async fn healthz(State(answer): State<Arc<Mutex<Answer>>>) -> impl IntoResponse {
    let (tag, multi_user) = {
        let answer = answer.lock().expect("tag");
        (answer.tag.clone(), answer.multi_user)
    };
    let body = json!({
        "commit_sha": "0123456789abcdef",
        "tag_name": tag,
        "multi_user": multi_user,
        "pipeline_store": "database"
    });
    ([(CONTENT_TYPE, "application/json")], body.to_string())
}

/// TCP connections that completed a TLS handshake; failed handshakes (a client that does not
/// trust the CA) are dropped.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A CA, and a server certificate for 127.0.0.1 it signed: the server's TLS config and the
/// CA's PEM.
fn tls_server_config() -> Result<(tokio_rustls::rustls::ServerConfig, String)> {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    use tokio_rustls::rustls;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &ca)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let private = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], private)?;
    Ok((config, ca.pem()))
}
