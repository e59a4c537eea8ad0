//! The compressed SWFs the store keeps, within a byte budget (`--swf-bodies-mib`). A body is
//! only read to decide its SWF, so it is let go once the SWF is decided with nothing left to do
//! (a resync of it at the same resourceVersion needs none), and an SWF listed while the budget
//! is spent is kept as its keys alone. Deciding one without a body reads it from the API server
//! first, as KFP's own reconcile reads each SWF. The store's memory so stays within the budget
//! however many SWFs the cluster holds.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus_client::metrics::gauge::Gauge;

/// The budget, and the bytes held against it.
#[derive(Debug)]
pub struct Bodies {
    limit: i64,
    /// `pipewarden_swf_body_bytes`: the bytes held, which the budget is checked against.
    held: Gauge,
}

/// One kept body; its bytes count against the budget until it is dropped.
pub struct Body {
    bytes: Box<[u8]>,
    bodies: Arc<Bodies>,
}

impl Bodies {
    pub fn new(limit_bytes: usize, held: Gauge) -> Arc<Bodies> {
        Arc::new(Bodies {
            limit: i64::try_from(limit_bytes).unwrap_or(i64::MAX),
            held,
        })
    }

    /// No budget to speak of: every body is kept.
    #[cfg(test)]
    pub fn unlimited() -> Arc<Bodies> {
        Bodies::new(usize::MAX, Gauge::default())
    }

    /// `bytes` as a kept body, or None when they do not fit in what is left of the budget.
    pub fn keep(self: &Arc<Self>, bytes: Vec<u8>) -> Option<Arc<Body>> {
        let len = i64::try_from(bytes.len()).ok()?;
        let fits = |held: i64| (held.saturating_add(len) <= self.limit).then_some(held + len);
        self.held
            .inner()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, fits)
            .ok()?;
        Some(Arc::new(Body {
            bytes: bytes.into_boxed_slice(),
            bodies: self.clone(),
        }))
    }

    /// Bytes held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        usize::try_from(self.held.get()).unwrap_or_default()
    }
}

impl Body {
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        self.bodies.held.dec_by(self.bytes.len() as i64);
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Body({} bytes)", self.bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_bodies_until_the_budget_is_spent_and_gives_it_back_on_drop() {
        let gauge = Gauge::default();
        let bodies = Bodies::new(100, gauge.clone());
        let first = bodies.keep(vec![0; 60]).expect("fits");
        assert!(bodies.keep(vec![0; 41]).is_none(), "60 + 41 > 100");
        let second = bodies.keep(vec![0; 40]).expect("60 + 40 fits exactly");
        assert_eq!((bodies.held(), gauge.get()), (100, 100));
        drop(first);
        assert_eq!((bodies.held(), gauge.get()), (40, 40));
        let shared = second.clone();
        drop(second);
        assert_eq!(bodies.held(), 40, "still held by its other owner");
        drop(shared);
        assert_eq!((bodies.held(), gauge.get()), (0, 0));
    }

    #[test]
    fn a_zero_budget_keeps_nothing_but_empty_bodies() {
        let bodies = Bodies::new(0, Gauge::default());
        assert!(bodies.keep(vec![1]).is_none());
        assert!(bodies.keep(Vec::new()).is_some());
    }
}
