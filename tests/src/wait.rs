//! Polling with a deadline.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

const INTERVAL: Duration = Duration::from_millis(50);

/// Calls `check` until it yields `Some`, fails, or `timeout` passes (then fails naming `what`).
pub async fn until<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(INTERVAL).await;
    }
}
