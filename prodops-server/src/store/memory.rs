//! Giving freed memory back after a long piece of blocking work (docs/operations.md, "Memory").
//!
//! mimalloc keeps each thread's freed memory with that thread, and returns it to the system
//! only when the thread allocates again after the purge delay. A blocking-pool thread that ran
//! one bulk call (parsing 5,000 records, building their rows, a refresh of their parents) and
//! then sat idle kept its tens of MiB resident for as long as it stayed idle: after a 50,000-node
//! import, about 100 MiB above the memory before it, most of it free.

use std::time::{Duration, Instant};

/// Work shorter than this returns nothing: a read by id or a small write frees too little to
/// be worth the pages it would fault back in, and runs thousands of times a second.
const LONG_JOB: Duration = Duration::from_millis(20);

/// Called on a blocking thread at the end of a job that started at `started`: after a long
/// one, collects this thread's heap and returns its free pages (and any other freed memory
/// whose purge is due) to the system at once.
pub(crate) fn release_after_long_job(started: Instant) {
    if started.elapsed() >= LONG_JOB {
        // SAFETY: mimalloc's collection of the calling thread's own heap; it takes no pointer
        // and is safe to call at any time, whichever allocator the process uses for the rest.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}
