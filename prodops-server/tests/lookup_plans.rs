//! A bulk call with ids looks its records up by id (`records::get_many_raw`), 512 ids per
//! statement, on the real database (a new database beside `PRODOPS_TEST_DATABASE_URL` for
//! PostgreSQL, else SQLite; each test's own, so that the statistics its plans come from are
//! its own and not those another test's writes and refreshes left, but for the one test that
//! needs a table of the shared database's size): each id one probe of the
//! primary key. On PostgreSQL that holds once the statistics know the
//! organization; while they still see it as empty, as in the first seconds of its first import,
//! the planner took the ids as a filter over every record of the organization (issue 14;
//! bench/README.md), so the server refreshes them after an organization's first bulk write
//! (`Store::after_bulk_write`). Its own test binary: that refresh is remembered per process.

use prodops_server::store::records::{self, NewRow};
use prodops_server::store::{Dialect, Store, StoreError};
#[path = "common/plans.rs"]
mod plans;
use plans::plan;
use uuid::Uuid;

const ROWS: usize = 5_000;

/// A store on a database of its own (`prodops_tests::database_of_its_own`), with what keeps
/// that database: its statistics are the test's alone.
struct OwnStore {
    store: Store,
    _database: Option<prodops_tests::OwnDatabase>,
    _dir: tempfile::TempDir,
}

async fn store_of_its_own() -> OwnStore {
    let dir = tempfile::tempdir().unwrap();
    let (url, database) = prodops_tests::database_of_its_own(dir.path()).await;
    OwnStore {
        store: Store::open(&url).await.unwrap(),
        _database: database,
        _dir: dir,
    }
}

fn workers(org: Uuid) -> Vec<NewRow> {
    (0..ROWS)
        .map(|i| {
            NewRow::of_text(
                serde_json::json!({
                    "id": Uuid::new_v4(), "organizationId": org, "name": format!("W{i}"),
                    "status": "active", "isArchived": false,
                    "createdAt": "2026-11-25T12:00:00.000Z", "updatedAt": "2026-11-25T12:00:00.000Z",
                })
                .to_string(),
            )
            .unwrap()
        })
        .collect()
}

async fn insert(store: &Store, org: Uuid, rows: Vec<NewRow>) {
    store
        .write(move |tx| {
            for chunk in rows.chunks(1_000) {
                records::insert_rows(tx, "worker", org, chunk)?;
            }
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
}

/// Runs `write` and waits until PostgreSQL has analyzed `worker` once more.
async fn analyzed_after(store: &Store, write: impl FnOnce()) {
    tables_analyzed_after(store, &["worker"], write).await
}

/// Runs `write` and waits until PostgreSQL has analyzed each of `tables` once more.
async fn tables_analyzed_after(store: &Store, tables: &[&'static str], write: impl FnOnce()) {
    let count = |table: &'static str| async move {
        store
            .read(move |tx| {
                Ok::<_, StoreError>(
                    tx.query(
                        "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = ?",
                        &[table.into()],
                    )?[0][0]
                        .as_i64()
                        .unwrap_or(0),
                )
            })
            .await
            .unwrap()
    };
    let mut before = Vec::new();
    for table in tables {
        before.push(count(table).await);
    }
    write();
    for (table, before) in tables.iter().zip(before) {
        let mut analyzed = false;
        for _ in 0..100 {
            if count(table).await > before {
                analyzed = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(analyzed, "{table} was not analyzed after the bulk write");
    }
    // The count moves when `ANALYZE` ends, before its transaction commits the statistics
    // (`Store::after_bulk_write` sends `BEGIN READ WRITE; ANALYZE ...; COMMIT` as one query,
    // active until the commit): a plan read in between saw the old ones.
    for _ in 0..100 {
        let running = store
            .read(|tx| {
                Ok::<_, StoreError>(
                    tx.query(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE state = 'active' AND query LIKE 'BEGIN READ WRITE; ANALYZE %'",
                        &[],
                    )?[0][0]
                        .as_i64()
                        .unwrap_or(0),
                )
            })
            .await
            .unwrap();
        if running == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the statistics of {tables:?} were not committed after the bulk write");
}

/// The tables a bulk write of deliverables fills beside their records (the tree index, the
/// property value index) have their statistics refreshed with the records' own: with stale
/// ones, the children reads of a deliverable import scanned the organization's whole tree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_write_of_deliverables_refreshes_the_statistics_of_their_side_tables() {
    let own = store_of_its_own().await;
    let store = &own.store;
    if store.dialect() != Dialect::Postgres {
        // SQLite's planner keeps no statistics the server would have to refresh.
        return;
    }
    let org = Uuid::now_v7();
    tables_analyzed_after(
        store,
        &[
            "deliverable",
            "deliverable_tree",
            "deliverable_property_index",
        ],
        || store.after_bulk_write("deliverable", org, 1_000),
    )
    .await;
}

/// The server's connections plan without JIT compilation, whatever the database's default:
/// its statements are index probes whose estimates can pass `jit_above_cost` far above what
/// they cost (116 ms compiling a 2 ms read of a deliverable import).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_connections_plan_without_jit() {
    let own = store_of_its_own().await;
    let store = &own.store;
    if store.dialect() != Dialect::Postgres {
        return;
    }
    let jit = |write: bool| {
        let store = store.clone();
        async move {
            let show = |tx: &mut dyn prodops_server::store::Tx| {
                Ok::<_, StoreError>(
                    tx.query("SHOW jit", &[])?[0][0]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            };
            if write {
                store.write(show).await.unwrap()
            } else {
                store.read(show).await.unwrap()
            }
        }
    };
    assert_eq!(jit(false).await, "off");
    assert_eq!(jit(true).await, "off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_by_ids_probes_the_primary_key_after_the_organizations_first_bulk_write() {
    let dir = tempfile::tempdir().unwrap();
    // On the shared database, unlike the other tests here: the probes are the right plan only
    // for a table the size of a shop's, and the 10,000 rows this test writes alone are not
    // one (on a database of its own PostgreSQL rightly scans them).
    let url = prodops_tests::shared_database_url()
        .unwrap_or_else(|| prodops_tests::sqlite_url_in(dir.path()));
    let store = Store::open(&url).await.unwrap();
    let (known, new) = (Uuid::now_v7(), Uuid::now_v7());
    insert(&store, known, workers(known)).await;
    if store.dialect() == Dialect::Postgres {
        // Statistics that know the first organization and not the second, refreshed by the
        // server a moment ago.
        analyzed_after(&store, || store.after_bulk_write("worker", known, ROWS)).await;
    }
    let rows = workers(new);
    let mut ids: Vec<Uuid> = rows
        .iter()
        .step_by(10)
        .take(500)
        .map(|r| r.id.parse().unwrap())
        .collect();
    let wanted: Vec<(Uuid, String)> = rows
        .iter()
        .step_by(10)
        .take(500)
        .map(|r| (r.id.parse().unwrap(), r.data.clone()))
        .collect();
    insert(&store, new, rows).await;
    if store.dialect() == Dialect::Postgres {
        // As the server does after the bulk call: the organization's first one refreshes the
        // statistics although the last refresh was a moment ago.
        analyzed_after(&store, || store.after_bulk_write("worker", new, ROWS)).await;
    }
    // Twelve ids that are not there, one of the other organization among them.
    ids.extend((0..11).map(|_| Uuid::new_v4()));
    let other: Uuid = store
        .read(move |tx| {
            Ok::<_, StoreError>(
                tx.query(
                    "SELECT id FROM worker WHERE organization_id = ? LIMIT 1",
                    &[known.into()],
                )?[0][0]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            )
        })
        .await
        .unwrap();
    ids.push(other);

    let (sql, params) = records::get_many_sql(store.dialect(), "worker", new, &ids);
    let p = plan(&store, sql, params).await;
    match store.dialect() {
        Dialect::Postgres => assert!(
            p.contains("Index Cond: ((organization_id = ")
                && p.contains("AND (id = ANY (")
                && !p.contains("Filter"),
            "{}",
            p.chars().take(2_000).collect::<String>()
        ),
        Dialect::Sqlite => assert!(
            p.contains("(organization_id=? AND id=?)") && !p.contains("SCAN worker"),
            "{p}"
        ),
    }

    let found = store
        .read(move |tx| records::get_many_raw(tx, "worker", new, &ids))
        .await
        .unwrap();
    assert_eq!(found.len(), wanted.len());
    for (id, data) in &wanted {
        assert_eq!(found.get(id), Some(data));
    }
}

/// A dependency check reads its tree's dependencies (`dependencies::tree_dependencies`): the
/// tree's range of the path index, then each node's dependencies through the
/// `(organization_id, predecessorId)` expression index. On SQLite a comparison with the
/// node's TEXT column kept that index out of use, and every node of the tree scanned every
/// dependency of the organization: a bulk PUT of 10,000 dependencies in 100 trees ran past
/// the statement timeout (bench/README.md, "dependencies").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trees_dependencies_are_read_through_the_predecessor_index() {
    use prodops_server::deliverables::dependencies::tree_dependencies_sql;
    use prodops_server::store::sql::FieldPath;
    let own = store_of_its_own().await;
    let store = &own.store;
    let dialect = store.dialect();
    let field = |f: &str| dialect.text_expr(&FieldPath::parse(f).unwrap());
    let sql = tree_dependencies_sql(
        "dependency",
        &field("predecessorId"),
        &field("successorId"),
        &dialect.plain_column("t.id"),
    );
    let params = vec![
        Uuid::new_v4().into(),
        "/a".to_string().into(),
        "/b".to_string().into(),
    ];
    let p = plan(store, sql, params).await;
    match dialect {
        Dialect::Sqlite => assert!(
            p.contains("ix_dependency_predecessor (organization_id=? AND <expr>=?)")
                && !p.contains("SCAN x"),
            "{p}"
        ),
        // PostgreSQL plans from its statistics (an empty table is read whole, rightly): the
        // statement is checked to be valid there.
        Dialect::Postgres => assert!(p.contains("dependency"), "{p}"),
    }
}

/// The same for the other subtree reads through a field's index (`tree::subtree_records_sql`):
/// a tree's dependencies for the schedule, a subtree's work sessions for its crew time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subtree_records_are_read_through_the_fields_index() {
    use prodops_server::deliverables::tree::subtree_records_sql;
    use prodops_server::store::sql::FieldPath;
    let own = store_of_its_own().await;
    let store = &own.store;
    let dialect = store.dialect();
    for (table, field, index) in [
        ("dependency", "predecessorId", "ix_dependency_predecessor"),
        (
            "work_session",
            "deliverableId",
            "ix_work_session_deliverable",
        ),
    ] {
        let sql = subtree_records_sql(
            table,
            &dialect.text_expr(&FieldPath::parse(field).unwrap()),
            &dialect.plain_column("t.id"),
        );
        let params = vec![
            Uuid::new_v4().into(),
            "/a".to_string().into(),
            "/b".to_string().into(),
        ];
        let p = plan(store, sql, params).await;
        match dialect {
            Dialect::Sqlite => assert!(
                p.contains(&format!("{index} (organization_id=? AND <expr>=?)"))
                    && !p.contains("SCAN r"),
                "{table}: {p}"
            ),
            Dialect::Postgres => assert!(p.contains(table), "{table}: {p}"),
        }
    }
}

/// The job that announces what time changes reads each bound of the deliverables' alert
/// windows as a range of that bound's index (`store/alert_times.rs`). Those indexes are
/// partial (a bound no read asks for keeps its row out: most rows, each otherwise an insert at
/// a random place per deliverable written), and each read names their condition, so the
/// planner can take them: on SQLite, which matches the condition as written, it must.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alert_jobs_reads_are_ranges_of_the_partial_bound_indexes() {
    use prodops_server::store::alert_times::{self, Bound};
    let own = store_of_its_own().await;
    let store = &own.store;
    let dialect = store.dialect();
    // As a database whose indexes were made over every row (before migration step 86): the
    // step makes them partial.
    store
        .write(|tx| {
            tx.execute(
                "DROP INDEX IF EXISTS ix_deliverable_alert_until",
                &[],
            )?;
            tx.execute(
                "CREATE INDEX ix_deliverable_alert_until ON deliverable ((alerts_window & 4294967295), id)",
                &[],
            )?;
            alert_times::make_indexes_partial(tx)
        })
        .await
        .unwrap();
    for bound in [Bound::Until, Bound::From] {
        let index = alert_times::index_name(bound);
        let definition = store
            .read(move |tx| {
                let sql = match tx.dialect() {
                    Dialect::Sqlite => "SELECT sql FROM sqlite_master WHERE name = ?",
                    Dialect::Postgres => "SELECT indexdef FROM pg_indexes WHERE indexname = ?",
                };
                Ok::<_, StoreError>(
                    tx.query(sql, &[index.to_string().into()])?
                        .into_iter()
                        .flat_map(|r| r.into_iter().filter_map(|v| v.into_string()))
                        .collect::<String>(),
                )
            })
            .await
            .unwrap();
        assert!(
            definition.contains("WHERE"),
            "{index} is not partial: {definition}"
        );
        let [at_second, range] = alert_times::statements(bound, 500);
        for (sql, params) in [
            (
                at_second,
                vec![
                    1_800_000_000i64.into(),
                    Uuid::new_v4().to_string().into(),
                    false.into(),
                ],
            ),
            (
                range,
                vec![
                    1_800_000_000i64.into(),
                    1_800_000_060i64.into(),
                    false.into(),
                ],
            ),
        ] {
            let p = plan(store, sql, params).await;
            match dialect {
                Dialect::Sqlite => assert!(
                    p.contains(&format!("USING INDEX {index}")) && !p.contains("SCAN deliverable"),
                    "{p}"
                ),
                // PostgreSQL plans an empty table as read whole, rightly: the statement is
                // checked to be valid there.
                Dialect::Postgres => assert!(p.contains("deliverable"), "{p}"),
            }
        }
    }
}

/// A tree write reads the children of up to 500 parents at a time
/// (`deliverables::children_with_records`): one probe of the parent index per parent, never a
/// read of the organization's whole range with the parents as a filter, nor (PostgreSQL, with
/// statistics taken early in an import) a scan of the table per parent. The statement runs as
/// the server runs it, through `with_index_probes`, in a write transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_children_of_many_parents_are_probes_of_the_parent_index() {
    use prodops_server::store::deliverables::{children_with_records_statement, with_index_probes};
    let own = store_of_its_own().await;
    let store = &own.store;
    let dialect = store.dialect();
    let org = Uuid::new_v4();
    let mut parents: Vec<Uuid> = (0..499).map(|_| Uuid::new_v4()).collect();
    let big_parent = Uuid::new_v4();
    parents.push(big_parent);
    // Two sets of statistics, each with the statement it once misled: one parent over every
    // node of the organization (an import's first order), so that a probe of any parent is
    // estimated at the whole organization; and a large organization of 200 parents of 1,000
    // nodes each (a first import of the reference tree) read for an organization the
    // statistics do not know yet (a new organization's first import, its batch just
    // inserted), estimated at a row, where the primary key's range with the parent as a
    // filter looked as cheap as the probe.
    let (skewed, other) = (org, Uuid::new_v4());
    let set_ups = [
        (
            "SELECT ?, md5(g::text), ?, ?, lpad(g::text, 8, '0'), g FROM generate_series(1, 3000) g",
            children_with_records_statement(dialect, skewed, &parents),
        ),
        (
            "SELECT md5(?), md5('o' || g), md5(?::text || (g / 1000)), ?, lpad(g::text, 8, '0'), g \
             FROM generate_series(1, 200000) g",
            children_with_records_statement(dialect, Uuid::new_v4(), &parents),
        ),
    ];
    let plans = store
        .write(move |tx| {
            let mut plans = Vec::new();
            for (rows, (sql, params)) in &set_ups {
                if dialect == Dialect::Postgres {
                    tx.execute(
                        &format!(
                            "INSERT INTO deliverable_tree \
                             (organization_id, id, parent_id, root_id, path, sort_key) {rows}"
                        ),
                        &[
                            skewed.to_string().into(),
                            big_parent.to_string().into(),
                            other.to_string().into(),
                        ],
                    )?;
                    tx.execute("ANALYZE deliverable_tree", &[])?;
                }
                let explain = match dialect {
                    Dialect::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
                    Dialect::Postgres => format!("EXPLAIN {sql}"),
                };
                let rows = with_index_probes(tx, |tx| tx.query(&explain, params))?;
                plans.push(
                    rows.into_iter()
                        .flat_map(|r| r.into_iter().filter_map(|v| v.into_string()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            // The settings are set back for the rest of the transaction.
            if dialect == Dialect::Postgres {
                for setting in ["enable_seqscan", "enable_bitmapscan", "enable_sort"] {
                    let now = tx.query(&format!("SHOW {setting}"), &[])?;
                    assert_eq!(now[0][0].as_str(), Some("on"), "{setting}");
                }
            }
            Ok::<_, StoreError>(plans)
        })
        .await
        .unwrap();
    for p in plans {
        match dialect {
            Dialect::Sqlite => assert!(
                p.contains("ix_deliverable_tree_parent (organization_id=? AND parent_id=?)"),
                "{p}"
            ),
            Dialect::Postgres => assert!(
                p.lines()
                    .any(|l| l.contains("Index Cond")
                        && l.contains("parent_id = \"*VALUES*\".column1"))
                    && p.contains("ix_deliverable_tree_parent")
                    && !p.contains("Seq Scan on deliverable_tree")
                    && !p.contains("Bitmap Heap Scan on deliverable_tree")
                    && !p.contains("using deliverable_tree_pkey"),
                "{p}"
            ),
        }
    }
}
