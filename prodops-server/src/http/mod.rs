//! The gateway every request passes (`app`: request id → key lookup → rate limit →
//! idempotency fingerprint → error shape) and the request kernel the layers above build on:
//! `Call` and `PathId`, the request context, the error shape, idempotent replays, rate limits,
//! the clock and the rules for input text.

pub mod action;
pub mod app;
pub mod call;
pub mod clock;
pub mod context;
pub mod error;
pub mod idempotency;
pub mod parts;
pub mod ratelimit;
pub mod reply;
pub mod text;
pub mod typed;
