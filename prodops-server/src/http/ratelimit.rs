//! Rate limits per API key (decisions.md section 6), in fixed windows.
//!
//! Counting happens in memory so a request never waits on the database for it; a background
//! task adds each process's counts to `rate_limit_windows` every [`SYNC_INTERVAL`] and reads
//! back the total of all processes sharing the database; a process meeting a key for the first
//! time in a window starts from that total. One process is therefore exact; with several, the
//! limit holds to within what they admit in one sync interval.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::http::clock::{Clock, system_secs};
use crate::store::{SqlValue, Store, StoreError};

pub const SYNC_INTERVAL: Duration = Duration::from_millis(250);

/// Where a bucket stands after a request.
#[derive(Debug, Clone, Copy)]
pub struct Standing {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// Seconds until the window resets.
    pub reset_secs: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Bucket {
    window_start: u64,
    /// Admitted here and not yet added to the database.
    unsynced: u64,
    /// The database total of all processes at the last sync (this one's synced counts included).
    synced_total: u64,
}

pub struct RateLimiter {
    limit: u64,
    window_secs: u64,
    buckets: Mutex<HashMap<String, Bucket>>,
    /// What windows turn on.
    clock: Clock,
}

impl RateLimiter {
    pub fn new(limit: u32, window: Duration) -> Self {
        RateLimiter {
            limit: limit as u64,
            window_secs: window.as_secs().max(1),
            buckets: Mutex::new(HashMap::new()),
            clock: Clock::system(),
        }
    }

    /// The same limiter, its windows turning on `clock`.
    pub fn with_clock(self, clock: Clock) -> Self {
        RateLimiter { clock, ..self }
    }

    fn now_secs(&self) -> u64 {
        self.clock.now_secs().max(0) as u64
    }

    fn window_start(&self, now: u64) -> u64 {
        now - now % self.window_secs
    }

    /// Counts one request against `bucket`, unless the bucket is spent. The first request of a
    /// bucket in a window reads the count all processes have recorded so far, so a process
    /// that just started (or just met this key) does not begin from zero.
    pub async fn admit(&self, store: &Store, bucket: &str) -> Standing {
        if let Some(standing) = self.count(bucket, None) {
            return standing;
        }
        let start = self.window_start(self.now_secs());
        // Failing open: a database hiccup must not turn every request into a 429.
        let shared = shared_count(store, &row_key(bucket, self.window_secs as i64), start)
            .await
            .unwrap_or(0);
        self.count(bucket, Some((start, shared)))
            .expect("a seeded bucket always counts")
    }

    /// Counts one request. Without `seed`, only a bucket already known in the current window is
    /// counted (`None` otherwise); with `seed` (the window it was read for, and the shared count),
    /// an unknown bucket starts from that count, or from zero if the window has turned since.
    fn count(&self, bucket: &str, seed: Option<(u64, u64)>) -> Option<Standing> {
        let now = self.now_secs();
        let start = self.window_start(now);
        let reset_secs = start + self.window_secs - now;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let known = buckets.get(bucket).is_some_and(|b| b.window_start == start);
        if !known {
            let (seed_start, shared) = seed?;
            let synced_total = if seed_start == start { shared } else { 0 };
            buckets.insert(
                bucket.to_string(),
                Bucket {
                    window_start: start,
                    unsynced: 0,
                    synced_total,
                },
            );
        }
        let b = buckets.get_mut(bucket)?;
        let used = b.synced_total + b.unsynced;
        if used >= self.limit {
            return Some(Standing {
                allowed: false,
                limit: self.limit,
                remaining: 0,
                reset_secs,
            });
        }
        b.unsynced += 1;
        Some(Standing {
            allowed: true,
            limit: self.limit,
            remaining: self.limit - used - 1,
            reset_secs,
        })
    }

    /// Adds this process's counts to the shared table and reads back the shared totals.
    pub async fn sync(&self, store: &Store) -> Result<(), StoreError> {
        let current = self.window_start(self.now_secs());
        // The table is shared with every process on the database: its rows are dropped on the
        // system clock, whatever clock this process's windows turn on.
        let now = system_secs();
        let pending: Vec<(String, Bucket)> = {
            let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
            buckets.retain(|_, b| b.window_start == current);
            buckets.iter().map(|(k, b)| (k.clone(), *b)).collect()
        };
        if pending.is_empty() {
            return Ok(());
        }
        let window_secs = self.window_secs as i64;
        let to_send = pending.clone();
        let totals: Vec<(String, u64, u64)> = store
            .write(move |tx| {
                let mut totals = Vec::with_capacity(to_send.len());
                for (bucket, b) in &to_send {
                    let rows = tx.query(
                        "INSERT INTO rate_limit_windows (bucket, window_start, count, window_secs) VALUES (?, ?, ?, ?) \
                         ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + excluded.count \
                         RETURNING count",
                        &[
                            row_key(bucket, window_secs).into(),
                            SqlValue::Int(b.window_start as i64),
                            SqlValue::Int(b.unsynced as i64),
                            SqlValue::Int(window_secs),
                        ],
                    )?;
                    let total = rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).unwrap_or(0);
                    totals.push((bucket.clone(), b.unsynced, total as u64));
                }
                // Each row carries its own window length: processes configured with other windows
                // share the table, and only a row's own window says when it is over.
                tx.execute(
                    "DELETE FROM rate_limit_windows WHERE window_start + 2 * window_secs < ?",
                    &[SqlValue::Int(now)],
                )?;
                Ok::<_, StoreError>(totals)
            })
            .await?;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        for (bucket, sent, total) in totals {
            if let Some(b) = buckets.get_mut(&bucket)
                && b.window_start == current
            {
                b.unsynced = b.unsynced.saturating_sub(sent);
                b.synced_total = total;
            }
        }
        Ok(())
    }
}

/// The row of a bucket in `rate_limit_windows`: the window length is part of it, so processes
/// configured with different windows never add to each other's counts.
fn row_key(bucket: &str, window_secs: i64) -> String {
    format!("{bucket}@{window_secs}s")
}

async fn shared_count(store: &Store, bucket: &str, start: u64) -> Result<u64, StoreError> {
    let bucket = bucket.to_string();
    store
        .read(move |tx| {
            let rows = tx.query(
                "SELECT count FROM rate_limit_windows WHERE bucket = ? AND window_start = ?",
                &[bucket.clone().into(), SqlValue::Int(start as i64)],
            )?;
            Ok(rows
                .first()
                .and_then(|r| r.first())
                .and_then(SqlValue::as_i64)
                .unwrap_or(0) as u64)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admit_seeded(limiter: &RateLimiter, bucket: &str, shared: u64) -> Vec<Standing> {
        let seed = (limiter.window_start(limiter.now_secs()), shared);
        (0..4)
            .filter_map(|_| limiter.count(bucket, Some(seed)))
            .collect()
    }

    #[test]
    fn admits_up_to_the_limit() {
        let limiter = RateLimiter::new(3, Duration::from_secs(3600)).with_clock(Clock::manual());
        let standings = admit_seeded(&limiter, "k", 0);
        assert!(standings[..3].iter().all(|s| s.allowed));
        assert_eq!(standings[2].remaining, 0);
        assert!(!standings[3].allowed);
        assert!(
            limiter.count("other", None).is_none(),
            "an unknown bucket must be seeded first"
        );
    }

    #[test]
    fn a_seeded_bucket_starts_from_the_shared_count() {
        let limiter = RateLimiter::new(3, Duration::from_secs(3600)).with_clock(Clock::manual());
        let standings = admit_seeded(&limiter, "k", 2);
        assert!(standings[0].allowed);
        assert_eq!(standings[0].remaining, 0);
        assert!(!standings[1].allowed);
    }

    #[test]
    fn a_spent_bucket_is_whole_again_when_its_window_turns() {
        let clock = Clock::manual();
        let limiter = RateLimiter::new(3, Duration::from_secs(60)).with_clock(clock.clone());
        let standings = admit_seeded(&limiter, "k", 0);
        let refused = standings[3];
        assert!(!refused.allowed);
        assert!((1..=60).contains(&refused.reset_secs));
        clock.advance(Duration::from_secs(refused.reset_secs - 1));
        assert!(!limiter.count("k", None).unwrap().allowed, "not yet");
        clock.advance(Duration::from_secs(1));
        assert!(
            limiter.count("k", None).is_none(),
            "a new window: the bucket is read from the database again"
        );
        let fresh = admit_seeded(&limiter, "k", 0);
        assert!(fresh[0].allowed);
        assert_eq!(fresh[0].remaining, 2);
    }
}
