//! The target version from a KFP apiserver served over HTTPS, as KFP's cert-manager TLS
//! overlays serve it: trusted through `--kfp-api-ca-file` (the certificate Secret's `ca.crt`),
//! refused without it, with an error that says why.

use anyhow::{Result, ensure};
use pipewarden_tests::deploy_support::{TempDir, pipewarden_binary};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

// The plan runs block a worker; the stand-in serves from the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_kfp_apiserver_is_trusted_through_its_ca_file_and_refused_without_it() -> Result<()>
{
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    let (kfp, ca_pem) = KfpApi::serve_tls(TARGET).await?;
    let dir = TempDir::new("kfp-tls")?;
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, ca_pem)?;
    let ca = ca_file.display().to_string();

    let plan = |with_ca: bool| {
        let mut command = std::process::Command::new(pipewarden_binary()?);
        command
            .args(["plan", "-o", "json", "--exit-gate=false"])
            .env_clear()
            .env("KUBECONFIG", control_plane.kubeconfig())
            .env("PIPEWARDEN_NAMESPACES", &namespace)
            .env("PIPEWARDEN_POLICY", built_policy(DEFAULT_POLICY))
            .env("PIPEWARDEN_SETTINGS", repo_path(DEFAULT_SETTINGS))
            .env("PIPEWARDEN_KFP_API_URL", &kfp.url);
        if with_ca {
            command.env("PIPEWARDEN_KFP_API_CA_FILE", &ca);
        }
        anyhow::Ok(command.output()?)
    };
    let refused = plan(false)?;
    let error = String::from_utf8_lossy(&refused.stderr);
    println!("without the CA file: {}", error.trim());
    ensure!(refused.status.code() == Some(2), "{:?}", refused.status);
    ensure!(
        error.contains(&kfp.url) && error.to_lowercase().contains("certificate"),
        "the error does not say the certificate was not trusted: {error}"
    );
    let trusted = plan(true)?;
    let report: serde_json::Value = serde_json::from_slice(&trusted.stdout)?;
    ensure!(report["target_version"] == TARGET, "{report}");

    let running = ControllerArgs::new(std::slice::from_ref(&namespace))
        .unset("--target-version")
        .set("--kfp-api-url", &kfp.url)
        .set("--kfp-api-ca-file", &ca)
        .start(control_plane)
        .await?;
    wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "the SWF stamped for the version the https endpoint reports",
        |swf| stamped_version(swf) == Some(TARGET),
    )
    .await?;
    running.stop().await;
    Ok(())
}
