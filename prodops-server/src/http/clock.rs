//! The clock the server reads for what expires with the time of day: document links
//! (`expires`), rate-limit windows, and the alerts answered as of the moment of a read. A server runs on the system clock; a test can run one on
//! a clock it moves by hand ([`Clock::manual`]), so that expiry is tested by moving the clock
//! past it instead of racing real time with sleeps.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The system clock (the default), or a clock that moves only when told to.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

/// Seconds since the Unix epoch on the system clock.
pub fn system_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock standing at the system time now, that moves only by [`Clock::advance`]. Clones
    /// share it: one clock can drive several servers.
    pub fn manual() -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(system_secs()))),
        }
    }

    /// Whether this clock moves only by hand.
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }

    /// Seconds since the Unix epoch.
    pub fn now_secs(&self) -> i64 {
        match &self.manual {
            Some(at) => at.load(Ordering::SeqCst),
            None => system_secs(),
        }
    }

    /// The moment alerts are evaluated at (`prodops_core::alerts`): now, in whole seconds.
    pub fn as_of(&self) -> prodops_core::alerts::AsOf {
        prodops_core::alerts::AsOf::from_secs(self.now_secs())
    }

    /// Moves a manual clock forward (whole seconds; a fraction is dropped).
    ///
    /// # Panics
    /// On the system clock, which no one moves.
    pub fn advance(&self, by: Duration) {
        let at = self
            .manual
            .as_ref()
            .expect("only a manual clock can be advanced");
        at.fetch_add(by.as_secs() as i64, Ordering::SeqCst);
    }

    /// Sets a manual clock to `secs` after the Unix epoch, which may be back in time (tests of
    /// reads whose clock goes back before the stored records were written).
    ///
    /// # Panics
    /// On the system clock, which no one moves.
    pub fn set_secs(&self, secs: i64) {
        self.manual
            .as_ref()
            .expect("only a manual clock can be set")
            .store(secs, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = Clock::manual();
        let start = clock.now_secs();
        assert!(start > 0 && start <= system_secs());
        let other = clock.clone();
        other.advance(Duration::from_secs(90));
        assert_eq!(clock.now_secs(), start + 90);
        other.set_secs(start - 60);
        assert_eq!(clock.now_secs(), start - 60);
        assert!(!Clock::system().is_manual());
    }
}
