//! Reused buffers for large reads (a hierarchy read of 10,000 nodes moves about 15 MB).
//!
//! Building such a body in freshly allocated memory costs a page fault per 4 KiB page (and the
//! allocator hands the pages back to the system when the body is freed): measured, that was a
//! quarter of a hierarchy read. A few buffers are kept instead, and a response body (or each part of a
//! body sent in parts) hands its buffer back when the connection has sent it. At most [`KEPT`] buffers of at most
//! [`MAX_KEPT_BYTES`] each, [`TOTAL_KEPT_BYTES`] in all, are retained; others are freed as usual
//! (docs/operations.md, "Memory").

use std::sync::Mutex;

use bytes::Bytes;

/// Buffers retained between requests.
const KEPT: usize = 4;
/// The largest buffer retained (a bigger read allocates and frees its own): a hierarchy read of
/// 10,000 nodes fits.
const MAX_KEPT_BYTES: usize = 16 << 20;
/// What the pool may hold in all, whatever the reads were.
const TOTAL_KEPT_BYTES: usize = 32 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for at least `capacity` bytes, reused when one is free.
pub fn take(capacity: usize) -> Vec<u8> {
    let reused = {
        let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
        // The smallest kept buffer that is big enough, else the biggest (it grows).
        let pick = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= capacity)
            .min_by_key(|(_, b)| b.capacity())
            .or_else(|| pool.iter().enumerate().max_by_key(|(_, b)| b.capacity()))
            .map(|(i, _)| i);
        pick.map(|i| pool.swap_remove(i))
    };
    let mut buf = reused.unwrap_or_default();
    buf.clear();
    buf.reserve(capacity);
    buf
}

/// Hands a buffer back for reuse.
pub fn give(buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > MAX_KEPT_BYTES {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let held: usize = pool.iter().map(Vec::capacity).sum();
    if pool.len() < KEPT && held + buf.capacity() <= TOTAL_KEPT_BYTES {
        pool.push(buf);
    } else if let Some(smallest) = pool.iter_mut().min_by_key(|b| b.capacity())
        && smallest.capacity() < buf.capacity()
        && held - smallest.capacity() + buf.capacity() <= TOTAL_KEPT_BYTES
    {
        *smallest = buf;
    }
}

/// A response body owning a buffer, which goes back to the pool once sent.
struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

/// The bytes of `buf`, whose buffer returns to the pool once they are dropped (sent).
pub fn bytes(buf: Vec<u8>) -> Bytes {
    Bytes::from_owner(Pooled(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the pool is process-wide, and parallel tests would take each other's buffers.
    #[test]
    fn buffers_are_reused_bodies_hand_theirs_back_and_oversized_ones_are_not_kept() {
        let mut b = take(1 << 16);
        b.extend_from_slice(b"abc");
        give(b);
        let again = take(100);
        assert!(again.is_empty(), "a reused buffer starts empty");
        assert!(again.capacity() >= 1 << 16, "the kept buffer came back");
        give(again);
        give(Vec::with_capacity(MAX_KEPT_BYTES + 1));
        {
            let pool = POOL.lock().unwrap();
            assert!(pool.iter().all(|b| b.capacity() <= MAX_KEPT_BYTES));
            assert!(pool.len() <= KEPT);
        }
        let kept = POOL.lock().unwrap().len();
        let mut out = take(1 << 20);
        out.extend_from_slice(b"{\"values\":[]}");
        assert_eq!(POOL.lock().unwrap().len(), kept.saturating_sub(1));
        drop(bytes(out));
        assert_eq!(POOL.lock().unwrap().len(), kept.max(1));
    }
}
