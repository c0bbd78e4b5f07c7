//! The `prodops` command (issue 3 builds it out).

fn main() {
    eprintln!(
        "prodops: the command line arrives with issue 3; use `prodops-server` and the HTTP API for now"
    );
    std::process::exit(2);
}
