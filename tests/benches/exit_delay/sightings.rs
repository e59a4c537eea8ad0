//! A watch of the bench's own that hands each object to `note` with the instant it arrived,
//! running once its initial list is done.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::StreamExt as _;
use kube::api::Api;
use kube::runtime::watcher;
use serde::de::DeserializeOwned;

/// Starts the watch and waits (up to a minute) until it runs.
pub async fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
    note: impl Fn(&K, Instant) + Send + 'static,
) -> Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let mut events = watcher(api, config).boxed();
    let (ready, started) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut ready = Some(ready);
        while let Some(event) = events.next().await {
            // The instant first: nothing between the stream and the clock.
            let at = Instant::now();
            match event {
                Ok(watcher::Event::InitDone) => {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                }
                Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                    note(&object, at)
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(60), started).await??;
    Ok(())
}
