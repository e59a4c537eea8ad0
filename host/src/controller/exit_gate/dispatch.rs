//! Handing work to the shard that owns its uid, with a bound on what waits: each shard's
//! queue holds a fixed number of items, and the views the policy has yet to see (a workflow's
//! spec can be as large as the API server takes) share a byte budget. A full queue or an
//! exhausted budget makes the sender wait: the watch, the catch-up listing and the re-checks
//! slow down instead of holding more.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::gate::Work;
use crate::controller::context::Context;
use crate::exit::tombstone::UidKey;

/// Items waiting for each shard.
pub(super) const SHARD_CAPACITY: usize = 256;
/// KiB of policy views queued or being decided at once, over all shards.
const VIEW_BUDGET_KIB: usize = 32 * 1024;

/// One item on a shard's queue, with its share of the view budget (returned once decided).
pub(super) struct Queued {
    pub work: Work,
    pub _budget: Option<OwnedSemaphorePermit>,
}

#[derive(Clone)]
pub(super) struct Dispatcher {
    ctx: Context,
    shards: Vec<mpsc::Sender<Queued>>,
    budget: Arc<Semaphore>,
}

impl Dispatcher {
    /// A dispatcher over one queue per shard, and the receivers the workers drain.
    pub fn new(ctx: &Context) -> (Dispatcher, Vec<mpsc::Receiver<Queued>>) {
        let (shards, receivers) = (0..ctx.concurrency)
            .map(|_| mpsc::channel(SHARD_CAPACITY))
            .unzip();
        let dispatcher = Dispatcher {
            ctx: ctx.clone(),
            shards,
            budget: Arc::new(Semaphore::new(VIEW_BUDGET_KIB)),
        };
        (dispatcher, receivers)
    }

    /// Hands `work` to the worker that owns its uid, waiting while that worker is busy or the
    /// view budget is spent. Work of another replica's shard (`--shard`) is dropped.
    pub async fn send(&self, work: Work) -> anyhow::Result<()> {
        if !self.ctx.shard.owns(work.uid()) {
            return Ok(());
        }
        let kib = work.view_bytes().div_ceil(1024).clamp(1, VIEW_BUDGET_KIB) as u32;
        let budget = self
            .budget
            .clone()
            .acquire_many_owned(kib)
            .await
            .expect("the semaphore is never closed");
        let shard = (UidKey::new(work.uid()).as_u128() % self.shards.len() as u128) as usize;
        let queued = Queued {
            work,
            _budget: Some(budget),
        };
        self.shards[shard]
            .send(queued)
            .await
            .map_err(|_| anyhow::anyhow!("exit worker {shard} is gone"))
    }
}
