//! Failures of a command and their exit codes (decisions.md section 8).

use prodops_client::Error;

/// Exit codes: 0 success; 2 usage error; 3 authentication or permission (401, 403); 4 not found
/// (404); 5 rejected request (400, 405, 409, 413, rejected import rows); 6 rate-limited after
/// retries; 7 network error or 5xx; 8 declined at a confirmation prompt, or Ctrl-C at the key
/// prompt of `auth login` (nothing was changed); 9 the change feed no longer keeps the events
/// after the cursor asked from (410: events were missed).
pub mod code {
    pub const USAGE: i32 = 2;
    pub const AUTH: i32 = 3;
    pub const NOT_FOUND: i32 = 4;
    pub const REJECTED: i32 = 5;
    pub const RATE_LIMITED: i32 = 6;
    pub const NETWORK: i32 = 7;
    pub const DECLINED: i32 = 8;
    pub const GONE: i32 = 9;
}

/// Why a command failed: a message for stderr and an exit code, and for an error the server
/// answered, its error object as it came (printed whole when errors are JSON, docs/cli.md).
#[derive(Debug)]
pub struct Fail {
    pub code: i32,
    pub message: String,
    pub api_error: Option<Box<serde_json::Value>>,
}

pub type CmdResult<T = ()> = Result<T, Fail>;

impl Fail {
    pub fn new(code: i32, message: impl Into<String>) -> Fail {
        Fail {
            code,
            message: message.into(),
            api_error: None,
        }
    }
    pub fn usage(message: impl Into<String>) -> Fail {
        Fail {
            code: code::USAGE,
            message: message.into(),
            api_error: None,
        }
    }
    pub fn auth(message: impl Into<String>) -> Fail {
        Fail {
            code: code::AUTH,
            message: message.into(),
            api_error: None,
        }
    }
    pub fn rejected(message: impl Into<String>) -> Fail {
        Fail {
            code: code::REJECTED,
            message: message.into(),
            api_error: None,
        }
    }
    pub fn io(what: &str, err: std::io::Error) -> Fail {
        // A closed pipe (`prodops worker list | head`) is not worth a message.
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            return Fail {
                code: 0,
                message: String::new(),
                api_error: None,
            };
        }
        Fail {
            code: code::USAGE,
            message: format!("{what}: {err}"),
            api_error: None,
        }
    }
}

/// The exit code of an API or transport error.
pub fn exit_code(err: &Error) -> i32 {
    match err {
        Error::Api { status, .. } => match *status {
            401 | 403 => code::AUTH,
            404 => code::NOT_FOUND,
            410 => code::GONE,
            429 => code::RATE_LIMITED,
            s if s >= 500 => code::NETWORK,
            _ => code::REJECTED,
        },
        Error::Network(_) | Error::Decode(_) => code::NETWORK,
        Error::Config(_) => code::USAGE,
    }
}

/// The full message of an error: the line, then one line per detail.
pub fn describe(err: &Error) -> String {
    let mut out = err.to_string();
    if let Error::Network(e) = err {
        // The network error's own line already names its first cause: the chain goes on from
        // the cause's cause (what reqwest and the OS said), each once.
        let mut source = std::error::Error::source(e).and_then(std::error::Error::source);
        while let Some(s) = source {
            out.push_str(&format!(": {s}"));
            source = s.source();
        }
    }
    for d in err.details() {
        out.push_str("\n  - ");
        if let Some(i) = d.index {
            out.push_str(&format!("[{i}] "));
        }
        if let Some(f) = &d.field {
            out.push_str(&format!("{f}: "));
        }
        out.push_str(&d.message);
    }
    out
}

impl From<Error> for Fail {
    fn from(err: Error) -> Fail {
        let api_error = match &err {
            Error::Api {
                code,
                message,
                details,
                request_id,
                ..
            } => Some(Box::new(serde_json::json!({
                "error": {
                    "code": code,
                    "message": message,
                    "requestId": request_id,
                    "details": details.iter().map(|d| {
                        let mut detail = serde_json::json!({
                            "field": d.field, "index": d.index, "message": d.message,
                        });
                        if let Some(c) = &d.oldest_cursor {
                            detail["oldestCursor"] = serde_json::json!(c);
                        }
                        detail
                    }).collect::<Vec<_>>(),
                }
            }))),
            _ => None,
        };
        Fail {
            code: exit_code(&err),
            message: describe(&err),
            api_error,
        }
    }
}

/// The error code of a failure that did not come from the server: `CLI_` and what the exit
/// code means, so a script tells a local refusal from the API's `VALIDATION_ERROR` and kin.
pub fn local_code(exit: i32) -> &'static str {
    match exit {
        code::USAGE => "CLI_USAGE",
        code::AUTH => "CLI_AUTH",
        code::NOT_FOUND => "CLI_NOT_FOUND",
        code::REJECTED => "CLI_REJECTED",
        code::RATE_LIMITED => "CLI_RATE_LIMITED",
        code::NETWORK => "CLI_NETWORK",
        code::DECLINED => "CLI_DECLINED",
        _ => "CLI_ERROR",
    }
}

impl Fail {
    /// The failure as the API's error object: the server's own when it answered one, else one
    /// with a local code ([`local_code`]); `exitCode` added beside it.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = match &self.api_error {
            Some(v) => (**v).clone(),
            None => serde_json::json!({
                "error": { "code": local_code(self.code), "message": self.message }
            }),
        };
        if let Some(obj) = value.as_object_mut() {
            obj.insert("exitCode".into(), self.code.into());
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> Error {
        Error::Api {
            status,
            code: "X".into(),
            message: "m".into(),
            details: vec![],
            request_id: None,
        }
    }

    #[test]
    fn statuses_map_to_the_documented_codes() {
        for (status, expected) in [
            (400, 5),
            (401, 3),
            (403, 3),
            (404, 4),
            (405, 5),
            (409, 5),
            (413, 5),
            (429, 6),
            (500, 7),
            (503, 7),
        ] {
            assert_eq!(exit_code(&api(status)), expected, "{status}");
        }
        assert_eq!(exit_code(&Error::Config("x".into())), 2);
    }
}
