//! Answers written while they are read (`GET /deliverable/{id}/hierarchy`, `GET /lot/{id}/trace`):
//! the read runs in its transaction on a blocking thread and hands the body over in parts
//! through a channel, so that a large answer is never held whole and the socket is written
//! while the database is read. What comes first decides the answer: an error before any part
//! is answered with its status and the error shape; after a part has gone out the status is
//! sent, so a failure can only cut the body short (the client sees a body that does not
//! parse, or a connection closed before the end of a chunked body).

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::http::error::{ApiError, ApiResult};

/// A body is sent in parts of about this size as it is written.
pub const PART_BYTES: usize = 256 << 10;

/// One part of a body; `Last` when the body is complete.
pub enum Part {
    More(Bytes),
    Last(Bytes),
}

/// Where a read sends its parts.
pub type PartSender = mpsc::Sender<ApiResult<Part>>;
/// Where the answer takes them from.
pub type PartReceiver = mpsc::Receiver<ApiResult<Part>>;

/// A channel for one body's parts (a few parts ahead of the socket at most).
pub fn channel() -> (PartSender, PartReceiver) {
    mpsc::channel(4)
}

/// The `200 application/json` answer whose body comes through `receiver`: the error if one
/// comes before any part, else the parts as they come. `what` names the read in the error
/// answered when the channel closes without a word.
pub async fn answer(mut receiver: PartReceiver, what: &str) -> ApiResult<Response> {
    let json = [(header::CONTENT_TYPE, "application/json")];
    match receiver.recv().await {
        None => Err(ApiError::internal(format!(
            "the {what} read ended without an answer"
        ))),
        Some(Err(e)) => Err(e),
        Some(Ok(Part::Last(body))) => Ok((StatusCode::OK, json, Body::from(body)).into_response()),
        Some(Ok(Part::More(first))) => {
            // The rest as it comes; a failure now can only cut the body short.
            let rest = futures::stream::unfold(receiver, |mut r| async move {
                let item = match r.recv().await? {
                    Ok(Part::More(b) | Part::Last(b)) => Ok(b),
                    Err(e) => Err(std::io::Error::other(e.message)),
                };
                Some((item, r))
            });
            let body = futures::stream::once(async move { Ok(first) }).chain(rest);
            Ok((StatusCode::OK, json, Body::from_stream(body)).into_response())
        }
    }
}

/// The value of [`answer_at_cursor`]'s cursor before the read sets it.
pub const NO_CURSOR: i64 = -1;

/// [`answer`] for a read in one snapshot that stores the snapshot's feed cursor in `cursor`
/// before it sends any part (again on each attempt of its transaction): the answer names it
/// in `Prodops-Feed-Cursor`.
pub async fn answer_at_cursor(
    receiver: PartReceiver,
    cursor: &std::sync::atomic::AtomicI64,
    what: &str,
) -> ApiResult<Response> {
    let mut response = answer(receiver, what).await?;
    // Stored before the first part was sent, so before `answer` had it.
    let feed = cursor.load(std::sync::atomic::Ordering::Acquire);
    if feed == NO_CURSOR {
        return Err(ApiError::internal(format!(
            "the {what} read named no feed cursor"
        )));
    }
    response.headers_mut().insert(
        header::HeaderName::from_static(prodops_core::event::FEED_CURSOR_HEADER),
        header::HeaderValue::from(feed),
    );
    Ok(response)
}

/// A body being written on the read's thread, sent a part at a time.
pub struct PartWriter<'a> {
    /// What is written and not sent yet.
    pub body: Vec<u8>,
    parts: &'a PartSender,
    /// Whether a part went out (the status with it: the read cannot answer an error any more).
    sent: bool,
    /// Whether the client left (the channel is closed): the read should stop.
    closed: bool,
}

impl<'a> PartWriter<'a> {
    pub fn new(parts: &'a PartSender) -> Self {
        PartWriter {
            body: Vec::with_capacity(PART_BYTES + (64 << 10)),
            parts,
            sent: false,
            closed: false,
        }
    }

    /// Sends what is written once it reaches [`PART_BYTES`]; false when the client left.
    pub fn send_if_full(&mut self) -> bool {
        if self.body.len() >= PART_BYTES && !self.closed {
            let full =
                std::mem::replace(&mut self.body, Vec::with_capacity(PART_BYTES + (64 << 10)));
            if self
                .parts
                .blocking_send(Ok(Part::More(Bytes::from(full))))
                .is_err()
            {
                self.closed = true;
            } else {
                self.sent = true;
            }
        }
        !self.closed
    }

    /// Whether a part went out.
    pub fn sent(&self) -> bool {
        self.sent
    }

    /// Sends the rest of the body as the last part.
    pub fn finish(self) {
        if !self.closed {
            let _ = self
                .parts
                .blocking_send(Ok(Part::Last(Bytes::from(self.body))));
        }
    }
}
