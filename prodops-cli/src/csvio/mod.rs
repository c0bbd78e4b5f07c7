//! One CSV import/export mechanism for every resource that has one (decisions.md section 8).
//!
//! A resource describes its CSV in a [`Spec`](spec::Spec): the columns in export order with the kind of
//! each cell, the field `--key` may match by, whether rows form a tree through `parentId`, and
//! the placeholders core's rules need to check a partial row. The mechanism does the rest:
//!
//! - Import streams the file: a reader thread parses and checks every row with core's rules
//!   (the server's own types and checks) and groups rows into batches. In a tree, a row waits
//!   until its parent's row has been placed (parents before children, whatever the file's
//!   order); a batch records the last earlier batch holding one of its parents and is sent only
//!   once every batch up to that one is written. Batches go through `PUT /r/bulk`, several in
//!   flight. A batch the server rejects is cut down to its good rows (the server names each
//!   bad record's `index`) and sent again, so good rows are written and each bad row is
//!   reported with its line number.
//! - Export writes records as they stream in (the resource supplies them in order).
//!
//! The parts:
//!
//! - `spec.rs`: the description ([`Spec`](spec::Spec), [`Column`](spec::Column), the cell [`CellKind`](spec::CellKind)s).
//! - `command.rs`: the `import` command and the export flags every resource shares, the progress
//!   bar and the messages printed beside it.
//! - `cells.rs`: a CSV cell read into JSON for import, JSON strings written with no needless
//!   escapes, a record's JSON value written as a cell's text for export.
//! - `import/`: [`import()`](import::import) drives the pipeline. `import/reader.rs` is the reader thread: it reads
//!   the file and hands each row to `import/rows.rs`, which writes the row's JSON and checks it
//!   with core's rules; the reader then places the checked row into a batch, parents before
//!   children. `import/batches.rs` holds the batches and sends them: `--key` values resolved to
//!   ids, rejected rows cut out and the rest resent.
//! - `export.rs`: a record's JSON text read straight into its cells' texts by serde visitors
//!   (`RecordCells`, [`Layout`](export::Layout)) and written by the [`RowWriter`](export::RowWriter).
//! - `worker.rs`, `deliverable.rs` and `lot.rs`: the resources' specs and commands (the worker's
//!   spec in `worker_spec.rs`). A lot's code is unique per item: its spec's key is scoped
//!   (`Spec::key_scope`), and rows are matched by item and code.
//! - `export.rs` also exports a standard list in one streamed request, `GET /r/export`, read
//!   in one snapshot (`export_list`: workers, lots).
//!
//! This file only declares the parts: each names the others' items by their own module, so
//! that no part depends on this file while it depends on the parts.

mod cells;
mod command;
mod export;
mod import;
mod spec;
mod worker_spec;

pub mod deliverable;
pub mod lot;
pub mod worker;
