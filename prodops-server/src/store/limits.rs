//! What ends a transaction's statements early: the statement timeout, and the request that
//! started the transaction going away.
//!
//! Every transaction runs on a blocking thread ([`Store::read`](super::Store::read),
//! [`Store::write`](super::Store::write)) while the request's task awaits it. When that task's
//! future is dropped (hyper drops a handler whose client closed the connection), the
//! [`CancelOnDrop`] it holds cancels the transaction: the blocking thread stops at its next
//! statement, and the statement in progress is stopped by what the database registered
//! ([`Cancel::arm`]): a cancel request to the PostgreSQL backend; on SQLite the progress and
//! busy handlers every connection carries see the flag.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long one statement may run (or wait for a lock) unless configured otherwise
/// (`prodops-server serve --statement-timeout`).
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The cancellation of one transaction, shared by the request's task and the blocking thread
/// running the transaction.
#[derive(Default)]
pub struct Cancel {
    cancelled: AtomicBool,
    /// How to stop the statement in progress, while the transaction holds its connection.
    stop: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Cancel {
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Registers how to stop the statement in progress on the transaction's connection; false
    /// (nothing registered) when the transaction is already cancelled.
    pub fn arm(&self, stop: Box<dyn FnOnce() + Send>) -> bool {
        let mut slot = self.stop.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_cancelled() {
            return false;
        }
        *slot = Some(stop);
        true
    }

    /// Forgets the registered stop, before the connection goes back to its pool; answers
    /// whether the transaction was cancelled, in which case a stop may have been sent and the
    /// connection must serve no other transaction.
    pub fn disarm(&self) -> bool {
        let mut slot = self.stop.lock().unwrap_or_else(|p| p.into_inner());
        *slot = None;
        self.is_cancelled()
    }

    /// Cancels the transaction: its next statement does not start and the one in progress is
    /// stopped. The stop runs under the lock [`Cancel::disarm`] takes, so it never reaches a
    /// connection that has moved on to another transaction.
    pub fn cancel(&self) {
        let mut slot = self.stop.lock().unwrap_or_else(|p| p.into_inner());
        self.cancelled.store(true, Ordering::Release);
        if let Some(stop) = slot.take() {
            stop();
        }
    }
}

/// Cancels a transaction when dropped before [`CancelOnDrop::defuse`]: held by the future that
/// awaits the transaction, so that dropping the future (the client went away) stops the work.
pub struct CancelOnDrop(Option<Arc<Cancel>>);

impl CancelOnDrop {
    pub fn new(cancel: Arc<Cancel>) -> Self {
        CancelOnDrop(Some(cancel))
    }

    /// The transaction ended on its own; nothing to cancel.
    pub fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}

/// The request ids whose transactions are running in this process, with how many each has.
static IN_FLIGHT: Mutex<Option<HashMap<Arc<str>, usize>>> = Mutex::new(None);

/// The ids of the requests (`X-Request-Id`) whose storage work is still running in this
/// process: a transaction counts from the moment its blocking thread picks it up (waiting for
/// a connection or a lock included) until it has ended. For diagnostics and for the tests that
/// show an abandoned request stops its queries.
pub fn requests_in_flight() -> Vec<String> {
    let map = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
    map.as_ref()
        .map(|m| m.keys().map(|k| k.to_string()).collect())
        .unwrap_or_default()
}

/// Marks a transaction as running for its request (if it has one) until dropped.
pub(crate) struct InFlight(Option<Arc<str>>);

impl InFlight {
    pub(crate) fn enter(request_id: Option<Arc<str>>) -> InFlight {
        if let Some(id) = &request_id {
            let mut map = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
            *map.get_or_insert_with(HashMap::new)
                .entry(id.clone())
                .or_default() += 1;
        }
        InFlight(request_id)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(id) = self.0.take() {
            let mut map = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(m) = map.as_mut()
                && let Some(n) = m.get_mut(&id)
            {
                *n -= 1;
                if *n == 0 {
                    m.remove(&id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn a_stop_runs_once_and_only_while_armed() {
        let cancel = Cancel::default();
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        assert!(cancel.arm(Box::new(move || {
            h.fetch_add(1, Ordering::SeqCst);
        })));
        assert!(!cancel.disarm());
        cancel.cancel();
        assert_eq!(hits.load(Ordering::SeqCst), 0, "disarmed: no stop");
        assert!(cancel.is_cancelled());
        assert!(!cancel.arm(Box::new(|| {})), "cancelled: nothing to arm");
        assert!(cancel.disarm());

        let cancel = Arc::new(Cancel::default());
        let h = hits.clone();
        assert!(cancel.arm(Box::new(move || {
            h.fetch_add(1, Ordering::SeqCst);
        })));
        drop(CancelOnDrop::new(cancel.clone()));
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        cancel.cancel();
        assert_eq!(hits.load(Ordering::SeqCst), 1);

        let cancel = Arc::new(Cancel::default());
        CancelOnDrop::new(cancel.clone()).defuse();
        assert!(!cancel.is_cancelled());
    }

    #[test]
    fn in_flight_counts_per_request() {
        let id: Arc<str> = Arc::from(format!("test-{}", uuid::Uuid::now_v7()));
        let a = InFlight::enter(Some(id.clone()));
        let b = InFlight::enter(Some(id.clone()));
        assert!(requests_in_flight().contains(&id.to_string()));
        drop(a);
        assert!(requests_in_flight().contains(&id.to_string()));
        drop(b);
        assert!(!requests_in_flight().contains(&id.to_string()));
    }
}
