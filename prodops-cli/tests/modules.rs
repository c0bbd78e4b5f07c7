//! No import cycle between the files of `prodops-cli/src`: the rule and the scanner are in
//! `prodops-core/tests/support/file_cycles.rs`. In short, a file depends on another when it
//! names an item through that file's module (`use` or a qualified path: `crate::a::x`,
//! `super::x`, `self::child::x`, `child::x`; not `mod x;`), and the dependencies between files
//! form no loop, a `mod.rs` and its own children included. Low modules (`context.rs`,
//! `args.rs`) hold what the command modules share; `run.rs` and `cli.rs` sit on top.

#[path = "../../prodops-core/tests/support/file_cycles.rs"]
mod file_cycles;

#[test]
fn the_files_import_each_other_in_no_cycle() {
    file_cycles::assert_no_cycle(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
}
