//! Watches every replica's "may write" flag for the whole test and records any moment two
//! replicas could write at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pipewarden::controller::ControllerHandle;
use tokio::sync::watch;

type Flags = Arc<Mutex<Vec<(String, watch::Receiver<bool>)>>>;

pub struct WriterWatch {
    replicas: Flags,
    overlaps: Arc<Mutex<Vec<Vec<String>>>>,
    sampler: tokio::task::JoinHandle<()>,
}

impl WriterWatch {
    pub fn start() -> WriterWatch {
        let replicas = Flags::default();
        let overlaps = Arc::new(Mutex::new(Vec::new()));
        let sampler = tokio::spawn(sample(replicas.clone(), overlaps.clone()));
        WriterWatch {
            replicas,
            overlaps,
            sampler,
        }
    }

    /// Watches `handle` from now on (its flag stays readable after it stops).
    pub fn add(&self, name: &str, handle: &ControllerHandle) {
        let flag = handle.ctx.may_write.clone();
        self.replicas
            .lock()
            .expect("replicas")
            .push((name.to_owned(), flag));
    }

    /// Every sample in which more than one replica could write, by replica names.
    pub fn overlaps(&self) -> Vec<Vec<String>> {
        self.overlaps.lock().expect("overlaps").clone()
    }
}

impl Drop for WriterWatch {
    fn drop(&mut self) {
        self.sampler.abort();
    }
}

/// Reads every flag twice in a row; a replica counts as a writer only if both reads say so, so
/// two writers in one sample really overlapped between the reads.
async fn sample(replicas: Flags, overlaps: Arc<Mutex<Vec<Vec<String>>>>) {
    loop {
        let writing: Vec<String> = {
            let replicas = replicas.lock().expect("replicas");
            let first: Vec<bool> = replicas.iter().map(|(_, f)| *f.borrow()).collect();
            replicas
                .iter()
                .zip(first)
                .filter(|((_, flag), before)| *before && *flag.borrow())
                .map(|((name, _), _)| name.clone())
                .collect()
        };
        if writing.len() > 1 {
            overlaps.lock().expect("overlaps").push(writing);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
