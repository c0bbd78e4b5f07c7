//! Writes the pgbench scripts of two reads, exactly the statements the server sends for them on
//! PostgreSQL (`prodops_server::store::read_statements`), for `bench/worker-reads.sh`:
//!
//! - `DIR/by-id.sql`: `GET /{resource}/{id}`, the key lookup with the record (one statement);
//! - `DIR/list.sql`: `GET /{resource}?pageSize=N` in the default order, the key lookup joined
//!   with the page (one statement), as the server sends it once it knows the key's organization;
//! - `DIR/defines`: the `-D name=value` arguments that give the scripts' variables their values.
//!
//! Usage: `pgbench-reads TABLE ORGANIZATION_ID API_KEY RECORD_ID PAGE_SIZE DIR`, then
//! `pgbench -M prepared -f DIR/by-id.sql $(cat DIR/defines) ...`.

use std::path::PathBuf;
use std::process::ExitCode;

use uuid::Uuid;

/// `$1`, `$2`, ... of `sql` as pgbench variables `:{prefix}1`, ... (highest first, so `$1` is
/// never taken for the start of `$10`).
fn as_variables(sql: &str, count: usize, name: impl Fn(usize) -> String) -> String {
    let mut out = sql.to_string();
    for n in (1..=count).rev() {
        out = out.replace(&format!("${n}"), &format!(":{}", name(n)));
    }
    out
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [table, org, key, record, limit, dir] = args.as_slice() else {
        eprintln!("usage: pgbench-reads TABLE ORGANIZATION_ID API_KEY RECORD_ID PAGE_SIZE DIR");
        return ExitCode::from(2);
    };
    let (Ok(org), Ok(limit)) = (Uuid::parse_str(org), limit.parse::<u64>()) else {
        eprintln!("pgbench-reads: ORGANIZATION_ID must be a UUID and PAGE_SIZE a number");
        return ExitCode::from(2);
    };
    let table: &'static str = Box::leak(table.clone().into_boxed_str());
    let hash = prodops_server::app::hash_key(key);
    let statements = prodops_server::store::read_statements(table, org, &hash, limit);
    let dir = PathBuf::from(dir);
    let by_id = as_variables(&statements.by_id, 2, |n| ["id", "hash"][n - 1].to_string());
    let list = as_variables(&statements.list, statements.list_params.len(), |n| {
        format!("p{n}")
    });
    let mut defines = vec![format!("-Did={record}"), format!("-Dhash={hash}")];
    for (i, value) in statements.list_params.iter().enumerate() {
        defines.push(format!("-Dp{}={value}", i + 1));
    }
    let written = std::fs::write(dir.join("by-id.sql"), format!("{by_id};\n"))
        .and_then(|()| std::fs::write(dir.join("list.sql"), format!("{list};\n")))
        .and_then(|()| std::fs::write(dir.join("defines"), defines.join("\n") + "\n"));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pgbench-reads: writing to {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
