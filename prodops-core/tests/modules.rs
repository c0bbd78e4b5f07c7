//! No import cycle between the files of `prodops-core/src`. The rule, and the scanner shared
//! with prodops-cli, are in `tests/support/file_cycles.rs`: a file depends on another when it
//! names an item through that file's module (a `use` or a qualified path: `crate::a::x`,
//! `super::x`, `self::child::x`, `child::x`; `mod x;` declarations do not count), and those
//! dependencies form no loop at file level, a `mod.rs` (or `a.rs` beside `a/`) and its own
//! children included: what both need goes into a file both use (`api/endpoint.rs`,
//! `line_quantities.rs`), and tests that need higher modules sit in a child file
//! (`inventory/tests.rs`, `resource/patch_tests.rs`).

#[path = "support/file_cycles.rs"]
mod file_cycles;

/// The one cycle that stays: the registry lists every resource, roles among them, and a role's
/// validation checks each permission against the registered resources
/// (`organization::validate_permission`); a notification names the organization's members. A
/// second list of the resources' permission names would cut it, at the price of the registry
/// no longer being the one list of resources.
const KNOWN: &[(&[&str], &str)] = &[(
    &[
        "src/notification.rs",
        "src/organization.rs",
        "src/registry.rs",
    ],
    "roles are validated against the registry, which lists roles",
)];

#[test]
fn the_files_import_each_other_in_no_cycle() {
    file_cycles::assert_no_cycle_except(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), KNOWN);
}
