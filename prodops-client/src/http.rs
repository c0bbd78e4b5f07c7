//! The HTTP words of the client's public API, its own: a method, the headers of an answer and
//! the error of a request that got no answer. The HTTP library behind them is not part of the
//! API, so it can change without breaking a caller.

use std::fmt;

/// An HTTP method.
///
/// ```
/// use prodops_client::Method;
/// assert_eq!(Method::PATCH.as_str(), "PATCH");
/// assert_eq!(Method::from_name("put"), Some(Method::PUT));
/// assert_eq!(Method::from_name("BREW"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Method(Kind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub const GET: Method = Method(Kind::Get);
    pub const HEAD: Method = Method(Kind::Head);
    pub const POST: Method = Method(Kind::Post);
    pub const PUT: Method = Method(Kind::Put);
    pub const PATCH: Method = Method(Kind::Patch);
    pub const DELETE: Method = Method(Kind::Delete);

    /// `GET`, `POST`, ...
    pub const fn as_str(self) -> &'static str {
        match self.0 {
            Kind::Get => "GET",
            Kind::Head => "HEAD",
            Kind::Post => "POST",
            Kind::Put => "PUT",
            Kind::Patch => "PATCH",
            Kind::Delete => "DELETE",
        }
    }

    /// The method of this name (any case), if the API has it.
    pub fn from_name(name: &str) -> Option<Method> {
        [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether the method only reads (`GET`, `HEAD`): always safe to send again.
    pub const fn is_read(self) -> bool {
        matches!(self.0, Kind::Get | Kind::Head)
    }

    pub(crate) fn to_reqwest(self) -> reqwest::Method {
        match self.0 {
            Kind::Get => reqwest::Method::GET,
            Kind::Head => reqwest::Method::HEAD,
            Kind::Post => reqwest::Method::POST,
            Kind::Put => reqwest::Method::PUT,
            Kind::Patch => reqwest::Method::PATCH,
            Kind::Delete => reqwest::Method::DELETE,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The headers of an answer, in the order they came; names compare without case.
///
/// ```
/// let h = prodops_client::Headers::from_pairs([("X-Request-Id", "r1")]);
/// assert_eq!(h.get("x-request-id"), Some("r1"));
/// assert_eq!(h.iter().count(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// Headers from `(name, value)` pairs.
    pub fn from_pairs<N: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Headers {
        Headers(
            pairs
                .into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
        )
    }

    /// The first value of a header (as text; a value that is not text reads lossily).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the header is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every `(name, value)`, names in lower case.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub(crate) fn from_reqwest(map: &reqwest::header::HeaderMap) -> Headers {
        Headers(
            map.iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
        )
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = (&'a str, &'a str);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a str)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// What kind of failure left a request without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NetworkErrorKind {
    /// No connection was made: the request was not sent.
    Connect,
    /// The attempt ran out of time (`Config::timeout`); the server may have done the work.
    Timeout,
    /// The connection broke while the request or its answer was under way; the server may
    /// have done the work.
    Interrupted,
    /// Anything else (a redirect loop, an unreadable body, ...).
    Other,
}

/// A request that got no (whole) answer: unreachable, a broken connection, a timeout. Keeps
/// the underlying error as its [`source`](std::error::Error::source).
///
/// ```
/// use prodops_client::{NetworkError, NetworkErrorKind};
/// let e = NetworkError::new(NetworkErrorKind::Timeout, "took too long");
/// assert!(e.is_timeout());
/// assert_eq!(e.to_string(), "timed out: took too long");
/// ```
#[derive(Debug)]
pub struct NetworkError {
    kind: NetworkErrorKind,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl NetworkError {
    /// An error of this kind with this cause.
    pub fn new(
        kind: NetworkErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> NetworkError {
        NetworkError {
            kind,
            source: source.into(),
        }
    }

    /// What kind of failure this was.
    pub fn kind(&self) -> NetworkErrorKind {
        self.kind
    }

    /// The attempt ran out of time.
    pub fn is_timeout(&self) -> bool {
        self.kind == NetworkErrorKind::Timeout
    }

    /// No connection was made (the request was not sent).
    pub fn is_connect(&self) -> bool {
        self.kind == NetworkErrorKind::Connect
    }

    pub(crate) fn from_reqwest(e: reqwest::Error) -> NetworkError {
        let kind = if e.is_connect() {
            NetworkErrorKind::Connect
        } else if e.is_timeout() {
            NetworkErrorKind::Timeout
        } else if e.is_request() || e.is_body() || e.is_decode() {
            NetworkErrorKind::Interrupted
        } else {
            NetworkErrorKind::Other
        };
        NetworkError::new(kind, e)
    }
}

impl fmt::Display for NetworkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            NetworkErrorKind::Connect => "could not connect",
            NetworkErrorKind::Timeout => "timed out",
            NetworkErrorKind::Interrupted => "the connection broke",
            NetworkErrorKind::Other => "the request failed",
        };
        write!(f, "{what}: {}", self.source)
    }
}

impl std::error::Error for NetworkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}
