//! A decision that misses its deadline is tried once more, at once, in a fresh instance: on a
//! busy node a single miss says more about the node than about the policy. A second miss is
//! the policy's.

use std::sync::Arc;

use super::error::{Export, PolicyError};

/// Told of every decision tried again after a timeout (the controller counts them).
#[derive(Clone)]
pub struct RetryObserver(Arc<dyn Fn(Export) + Send + Sync>);

impl RetryObserver {
    pub fn new(observe: impl Fn(Export) + Send + Sync + 'static) -> Self {
        RetryObserver(Arc::new(observe))
    }
}

impl std::fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryObserver")
    }
}

/// Runs `attempt`, and once more if it timed out, telling `observer` about the retry.
pub(crate) fn retry_timeout_once<R>(
    export: Export,
    observer: Option<&RetryObserver>,
    mut attempt: impl FnMut() -> Result<R, PolicyError>,
) -> Result<R, PolicyError> {
    match attempt() {
        Err(PolicyError::Timeout { limit, .. }) => {
            tracing::debug!(%export, ?limit, "policy call timed out; trying it once more");
            if let Some(observer) = observer {
                (observer.0)(export);
            }
            attempt()
        }
        done => done,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn timeout() -> PolicyError {
        PolicyError::Timeout {
            export: Export::ShouldRebuild,
            limit: Duration::from_millis(10),
        }
    }

    /// Runs `outcomes` in order through the retry; returns the result, attempts and retries.
    fn run(outcomes: Vec<Result<u32, PolicyError>>) -> (Result<u32, PolicyError>, usize, usize) {
        let retries = Arc::new(AtomicUsize::new(0));
        let counted = retries.clone();
        let observer = RetryObserver::new(move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        let mut outcomes = outcomes.into_iter();
        let mut attempts = 0;
        let result = retry_timeout_once(Export::ShouldRebuild, Some(&observer), || {
            attempts += 1;
            outcomes.next().expect("no more attempts planned")
        });
        (result, attempts, retries.load(Ordering::Relaxed))
    }

    #[test]
    fn a_timeout_is_tried_once_more_and_its_success_counts() {
        let (result, attempts, retries) = run(vec![Err(timeout()), Ok(7)]);
        assert_eq!(result.unwrap(), 7);
        assert_eq!((attempts, retries), (2, 1));
    }

    #[test]
    fn a_second_timeout_is_the_error() {
        let (result, attempts, retries) = run(vec![Err(timeout()), Err(timeout())]);
        assert!(matches!(result, Err(PolicyError::Timeout { .. })));
        assert_eq!((attempts, retries), (2, 1));
    }

    #[test]
    fn other_errors_and_successes_are_not_retried() {
        let trap = PolicyError::Trap {
            export: Export::ShouldRebuild,
            message: "unreachable".into(),
        };
        let (result, attempts, retries) = run(vec![Err(trap)]);
        assert!(matches!(result, Err(PolicyError::Trap { .. })));
        assert_eq!((attempts, retries), (1, 0));
        let (result, attempts, retries) = run(vec![Ok(1)]);
        assert_eq!(result.unwrap(), 1);
        assert_eq!((attempts, retries), (1, 0));
    }
}
