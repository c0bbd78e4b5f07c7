//! Every standard resource, in one list the server, the client and the CLI iterate over.

use crate::resource::{Kind, ResourceKind};

/// All standard resources. Adding a resource type means adding one line here.
pub fn resources() -> &'static [&'static dyn ResourceKind] {
    static ALL: &[&dyn ResourceKind] = &[&Kind::<crate::worker::Worker>::new()];
    ALL
}

/// The resource served at `/api/v2/<path>`.
pub fn by_path(path: &str) -> Option<&'static dyn ResourceKind> {
    resources().iter().copied().find(|r| r.desc().path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn paths_tables_are_unique() {
        let mut paths = HashSet::new();
        let mut tables = HashSet::new();
        for r in resources() {
            assert!(paths.insert(r.desc().path), "duplicate path {}", r.desc().path);
            assert!(tables.insert(r.desc().table), "duplicate table {}", r.desc().table);
        }
    }
}
