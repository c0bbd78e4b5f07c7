//! Rule violations: what a rule returns instead of a decision.

use serde::{Deserialize, Serialize};

/// One broken rule, as listed in the `details` of a 400 error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, crate::openapi::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// The field the rule is about (dotted path, `data.properties.width`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Index of the record in a bulk request, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    pub message: String,
}

impl Violation {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            field: Some(field.into()),
            index: None,
            message: message.into(),
        }
    }

    pub fn general(message: impl Into<String>) -> Self {
        Violation {
            field: None,
            index: None,
            message: message.into(),
        }
    }

    pub fn at_index(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }
}

/// Collects violations; `into_result` turns an empty list into `Ok`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Violations(pub Vec<Violation>);

impl Violations {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn push(&mut self, v: Violation) {
        self.0.push(v);
    }
    pub fn field(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(Violation::field(field, message));
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn into_result(self) -> Result<(), Vec<Violation>> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0)
        }
    }
}
