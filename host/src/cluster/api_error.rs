//! API errors as one log line an operator can act on: the API server's own sentence when it
//! answered; otherwise every cause, and the URL the client was trying to reach (kube's own
//! message for a refused connection is only `client error (Connect)`).

use kube::runtime::watcher;

/// `error` as one line; `server` is the API server's URL.
pub fn describe(error: &kube::Error, server: &str) -> String {
    match error {
        kube::Error::Api(status) => {
            format!("{} ({} {})", status.message, status.code, status.reason)
        }
        other => format!("{} (API server {server})", causes(other)),
    }
}

/// A watch failure as one line, with what the watch was doing.
pub fn describe_watch(error: &watcher::Error, server: &str) -> String {
    match error {
        watcher::Error::InitialListFailed(e) => format!("list failed: {}", describe(e, server)),
        watcher::Error::WatchStartFailed(e) => {
            format!("watch could not start: {}", describe(e, server))
        }
        watcher::Error::WatchFailed(e) => format!("watch failed: {}", describe(e, server)),
        watcher::Error::WatchError(status) => format!(
            "watch ended by the API server: {} ({} {})",
            status.message, status.code, status.reason
        ),
        other => other.to_string(),
    }
}

/// An error from a request made through anyhow (e.g. the lease), described the same way.
pub fn describe_any(error: &anyhow::Error, server: &str) -> String {
    match error.downcast_ref::<kube::Error>() {
        Some(kube_error) => describe(kube_error, server),
        None => format!("{error:#}"),
    }
}

/// The error and its sources, joined; a source repeating what was already said is left out.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Refused;

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("tcp connect error: Connection refused (os error 111)")
        }
    }

    impl std::error::Error for Refused {}

    #[test]
    fn a_connection_error_names_the_url_and_every_cause() {
        let error = kube::Error::Service(Box::new(Refused));
        let line = describe_watch(
            &watcher::Error::InitialListFailed(error),
            "https://10.0.0.1:6443/",
        );
        assert_eq!(
            line,
            "list failed: ServiceError: tcp connect error: Connection refused (os error 111) \
             (API server https://10.0.0.1:6443/)"
        );
    }

    #[test]
    fn an_answer_from_the_api_server_is_quoted_without_the_url() {
        let status = kube::core::Status::failure("scheduledworkflows is forbidden", "Forbidden")
            .with_code(403);
        let line = describe(
            &kube::Error::Api(Box::new(status)),
            "https://10.0.0.1:6443/",
        );
        assert_eq!(line, "scheduledworkflows is forbidden (403 Forbidden)");
    }
}
