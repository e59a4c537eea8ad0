//! `pipewarden run`: settings only for the loop that renders, and an unreachable API server
//! named in the log.

use super::common::{self, built_policy};
use super::{Scratch, pipewarden_with_env, refusal};

#[test]
fn run_needs_settings_only_for_the_loop_that_renders() {
    let policy = built_policy("kfp-default");
    let policy = policy.to_str().unwrap();
    let out = pipewarden_with_env(&["run", "--policy", policy], &[]);
    assert_eq!(
        refusal(&out),
        "error: --settings (PIPEWARDEN_SETTINGS) or --settings-from (PIPEWARDEN_SETTINGS_FROM) \
         is required by the SWF loop, which renders; without the SWF loop (--swf-loop=false) \
         they are not"
    );
    // Without the SWF loop the start goes past the settings, to the cluster it needs.
    let out = pipewarden_with_env(&["run", "--policy", policy, "--swf-loop=false"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("--settings"), "{stderr}");
    assert!(
        stderr.contains("cannot build a Kubernetes client"),
        "{stderr}"
    );
}

#[test]
fn run_without_an_api_server_logs_watch_failures_naming_its_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Nothing listens there any more: every request is refused.
    let kubeconfig = Scratch::new(
        "kubeconfig.yaml",
        &format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n\
             clusters: [{{name: nowhere, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n\
             users: [{{name: nobody, user: {{token: none}}}}]\n\
             contexts: [{{name: nowhere, context: {{cluster: nowhere, user: nobody}}}}]\n"
        ),
    );
    let mut child = common::default_policy_command("run")
        .args(["--swf-loop=false", "--http-addr=127.0.0.1:0"])
        .env_clear()
        .env("KUBECONFIG", kubeconfig.arg())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let url = format!("API server https://127.0.0.1:{port}/");
    let mut seen = Vec::new();
    // A hang guard, not a speed target: the first list fails at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let found = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match received.recv_timeout(left) {
            Ok(line) if line.contains("watch failed") => break Some(line),
            Ok(line) => seen.push(line),
            Err(_) => break None,
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let line = found.unwrap_or_else(|| panic!("no watch failure logged:\n{}", seen.join("\n")));
    assert!(line.contains(&url), "{line}");
    assert!(line.contains("Connection refused"), "{line}");
    assert!(
        seen.iter().all(|l| !l.contains("ERROR")),
        "ERROR lines before it: {seen:#?}"
    );
    assert!(
        seen.iter().any(|l| l.contains("policy loaded")),
        "started without --settings: {seen:#?}"
    );
}
