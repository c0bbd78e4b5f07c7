//! `prodops-server`: serve the API, and the operator subcommands (decisions.md section 1).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use prodops_server::store::Store;
use prodops_server::{Config, Error, admin, migrate};
use uuid::Uuid;

/// mimalloc: the bulk write and import paths allocate and free many small values, a pattern it
/// handles well, and it keeps the resident set from fragmenting across threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_allow_thp` (v3's `mimalloc.h`; `libmimalloc-sys` names no constant).
/// Left on, mimalloc backs its arena with transparent huge pages where the kernel allows them
/// (THP `madvise` or `always`), and then returns freed memory to the system only in whole
/// 2 MiB pages (`mi_option_minimal_purge_size`): the freed stretches between a bulk import's
/// live values stayed resident (docs/operations.md, "Memory"). Off, mimalloc purges in 64 KiB
/// pages and sets `PR_SET_THP_DISABLE` for the process.
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Sets the allocator options mimalloc reads while it starts (before `main`: its start-up is a
/// constructor of its own, which runs after this one, and the Rust runtime allocates before
/// `main` is called). A default only: `MIMALLOC_ALLOW_THP=1` in the environment still wins.
/// mimalloc's purge delay keeps its default (1 s): the blocking threads return what a bulk
/// call freed as they finish it (`store::memory`), and at 100 ms or 10 ms instead the bulk
/// imports ran up to a fifth slower for no lower peak (bench/README.md, "server-memory").
extern "C" fn allocator_options() {
    // SAFETY: writes a static option value; no thread exists yet.
    unsafe { libmimalloc_sys::mi_option_set_default(MI_OPTION_ALLOW_THP, 0) };
}

/// Runs [`allocator_options`] early: `.init_array` entries with a priority run before the
/// unnumbered ones (mimalloc's, built by gcc) and those of priority 101 (built by clang).
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array.00099")]
static ALLOCATOR_OPTIONS: extern "C" fn() = allocator_options;

const DEFAULT_DATABASE: &str = "sqlite://prodops.db";

#[derive(Parser)]
#[command(
    name = "prodops-server",
    version,
    about = "The Production Operations API v2 server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct DatabaseArg {
    /// sqlite://PATH (created if missing), sqlite::memory: or postgres://...
    #[arg(long, env = "PRODOPS_DATABASE_URL", default_value = DEFAULT_DATABASE)]
    database: String,
}

#[derive(Args, Clone)]
struct FilesArgs {
    /// Where document files are kept: a directory (`file:///var/lib/prodops/files` or a path)
    /// or an S3-compatible bucket (`s3://BUCKET`, configured by the AWS_* variables). Default:
    /// next to the SQLite file (`prodops.db.files`), else `./prodops-files`.
    #[arg(long, env = "PRODOPS_FILES")]
    files: Option<String>,
    /// How long a generated document link (`documentUrl`) works, in seconds.
    #[arg(long, env = "PRODOPS_DOCUMENT_LINK_TTL", default_value_t = 3600)]
    document_link_ttl: u64,
    /// The address document links start with (e.g. https://prodops.example.com). Default:
    /// http://<bound address>.
    #[arg(long, env = "PRODOPS_PUBLIC_URL")]
    public_url: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve /api/v2. Prints `listening on http://HOST:PORT` on stdout once it accepts connections.
    ///
    /// Example: prodops-server serve --bind 127.0.0.1:0 --database sqlite://prodops.db
    Serve {
        #[arg(long, env = "PRODOPS_BIND", default_value = "127.0.0.1:8080")]
        bind: SocketAddr,
        #[command(flatten)]
        db: DatabaseArg,
        /// Requests per window per API key (a bulk call counts as one).
        #[arg(long, env = "PRODOPS_RATE_LIMIT", default_value_t = 6000)]
        rate_limit: u32,
        /// The rate limit window, in seconds.
        #[arg(long, env = "PRODOPS_RATE_LIMIT_WINDOW", default_value_t = 60)]
        rate_limit_window: u64,
        /// Seconds one database statement may run or wait for a lock before it is stopped and
        /// the request answers 503 (0: no limit).
        #[arg(long, env = "PRODOPS_STATEMENT_TIMEOUT", default_value_t = 30)]
        statement_timeout: u64,
        /// Days events of the change feed are kept (GET /event; docs/events.md); older events
        /// are pruned every hour.
        #[arg(long, env = "PRODOPS_EVENT_RETENTION_DAYS", default_value_t = 30)]
        event_retention_days: u64,
        /// Milliseconds between two looks of the job that announces what time changes
        /// (`deliverable.became-late`; docs/events.md, docs/operations.md); 0: this process
        /// never runs it and leaves it to the others sharing the database.
        #[arg(long, env = "PRODOPS_ALERT_EVENTS_POLL_MS", default_value_t = 10_000)]
        alert_events_poll_ms: u64,
        #[command(flatten)]
        files: FilesArgs,
    },
    /// Organizations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Subcommand)]
enum OrgCommand {
    /// Create an organization and an admin API key; prints {"organizationId", "apiKey"}.
    ///
    /// Example: prodops-server org create --name "Acme Fabrication" --flag documentsHubEnabled
    Create {
        #[arg(long, env = "PRODOPS_ORG_NAME")]
        name: String,
        /// A feature flag to enable (FLAG or FLAG=true|false); repeatable.
        #[arg(long = "flag", env = "PRODOPS_ORG_FLAGS", value_delimiter = ',')]
        flags: Vec<String>,
        #[command(flatten)]
        db: DatabaseArg,
    },
    /// Set a feature flag: documentsHubEnabled, deliveryComponentCargoEnabled.
    ///
    /// Example: prodops-server org set-flag --org ORG_ID documentsHubEnabled=true
    SetFlag {
        #[arg(long, env = "PRODOPS_ORG_ID")]
        org: Uuid,
        /// FLAG=true or FLAG=false
        #[arg(env = "PRODOPS_ORG_FLAG")]
        flag: String,
        #[command(flatten)]
        db: DatabaseArg,
    },
    /// Set an organization setting: stockFrozenUntil (a day YYYY-MM-DD, or null to clear it).
    ///
    /// Example: prodops-server org set --org ORG_ID stockFrozenUntil=2026-10-31
    Set {
        #[arg(long, env = "PRODOPS_ORG_ID")]
        org: Uuid,
        /// NAME=VALUE (NAME=null clears it)
        #[arg(env = "PRODOPS_ORG_SETTING")]
        setting: String,
        #[command(flatten)]
        db: DatabaseArg,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create a key for an organization; prints {"apiKeyId", "apiKey"}.
    ///
    /// Example: prodops-server key create --org ORG_ID --permission Worker.Read --permission Worker.Update
    Create {
        #[arg(long, env = "PRODOPS_ORG_ID")]
        org: Uuid,
        /// A key with every permission.
        #[arg(long, env = "PRODOPS_KEY_ADMIN", conflicts_with = "permissions")]
        admin: bool,
        /// A permission <Resource>.<Action> (Worker.Read, Item.Update, ...); repeatable.
        #[arg(
            long = "permission",
            env = "PRODOPS_KEY_PERMISSIONS",
            value_delimiter = ',',
            required_unless_present = "admin"
        )]
        permissions: Vec<String>,
        #[command(flatten)]
        db: DatabaseArg,
    },
    /// Revoke a key; it stops working at once.
    ///
    /// Example: prodops-server key revoke --key-id KEY_ID
    Revoke {
        #[arg(long, env = "PRODOPS_KEY_ID")]
        key_id: Uuid,
        #[command(flatten)]
        db: DatabaseArg,
    },
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("PRODOPS_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
    // A panic is logged as one line, without a backtrace; the request answers 500.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        tracing::error!("panic: {message}");
    }));
}

fn print_json(value: &impl serde::Serialize) {
    println!("{}", serde_json::to_string(value).expect("serializable"));
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, not when the
/// future is first polled, so a signal sent right after `listening on` is not lost.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

/// The address a client on this machine uses to reach `addr`.
fn client_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
        ip if ip.is_unspecified() => "[::1]".to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("http://{ip}:{}", addr.port())
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    bind: SocketAddr,
    database: String,
    rate_limit: u32,
    window: u64,
    statement_timeout: u64,
    event_retention_days: u64,
    alert_events_poll_ms: u64,
    files: FilesArgs,
) -> Result<(), Error> {
    let statement_timeout = Duration::from_secs(statement_timeout);
    let store = Store::open_with(&database, statement_timeout).await?;
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    let first_start = !store.read(|tx| migrate::has_organizations(tx)).await?;
    if first_start {
        let created = admin::create_org(&store, "Default organization", &[]).await?;
        eprintln!(
            "prodops-server: new database; created the organization \"Default organization\" ({}) with an admin API key.\n\
             Point the prodops CLI at this server with:\n\
             export PRODOPS_BASE_URL={}\n\
             export PRODOPS_API_KEY={}",
            created.organization_id,
            client_url(addr),
            created.api_key
        );
    }
    let config = Config {
        bind,
        database_url: database,
        rate_limit,
        rate_limit_window: Duration::from_secs(window.max(1)),
        files: files
            .files
            .as_deref()
            .map(prodops_server::blob::FilesConfig::parse)
            .transpose()?,
        document_link_ttl: Duration::from_secs(files.document_link_ttl.max(1)),
        public_url: files.public_url,
        clock: prodops_server::clock::Clock::system(),
        statement_timeout,
        event_retention: Duration::from_secs(event_retention_days.max(1) * 24 * 3600),
        alert_events: (alert_events_poll_ms > 0)
            .then(|| Duration::from_millis(alert_events_poll_ms)),
        webhooks: prodops_server::webhooks::WebhookConfig::from_env().map_err(Error::Invalid)?,
    };
    let running = prodops_server::serve_on(listener, store, &config).await?;
    let stop = shutdown_signal()?;
    println!("listening on http://{addr}");
    stop.await;
    tracing::info!("shutting down: finishing requests in flight");
    running.shutdown().await;
    Ok(())
}

async fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Serve {
            bind,
            db,
            rate_limit,
            rate_limit_window,
            statement_timeout,
            event_retention_days,
            alert_events_poll_ms,
            files,
        } => {
            serve(
                bind,
                db.database,
                rate_limit,
                rate_limit_window,
                statement_timeout,
                event_retention_days,
                alert_events_poll_ms,
                files,
            )
            .await
        }
        Command::Org(OrgCommand::Create { name, flags, db }) => {
            let store = Store::open(&db.database).await?;
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            print_json(&admin::create_org(&store, &name, &flags).await?);
            Ok(())
        }
        Command::Org(OrgCommand::SetFlag { org, flag, db }) => {
            let (name, value) = admin::parse_flag(&flag)?;
            if !flag.contains('=') {
                return Err(Error::Invalid(format!(
                    "write the flag as {name}=true or {name}=false"
                )));
            }
            let store = Store::open(&db.database).await?;
            admin::set_flag(&store, org, &name, value).await
        }
        Command::Org(OrgCommand::Set { org, setting, db }) => {
            admin::parse_setting(&setting)?;
            let store = Store::open(&db.database).await?;
            admin::set_setting(&store, org, &setting).await
        }
        Command::Key(KeyCommand::Create {
            org,
            admin: is_admin,
            permissions,
            db,
        }) => {
            let store = Store::open(&db.database).await?;
            let permissions: Vec<&str> = permissions.iter().map(String::as_str).collect();
            print_json(&admin::create_key(&store, org, is_admin, &permissions).await?);
            Ok(())
        }
        Command::Key(KeyCommand::Revoke { key_id, db }) => {
            let store = Store::open(&db.database).await?;
            admin::revoke_key(&store, key_id).await
        }
    }
}

fn main() -> ExitCode {
    #[cfg(not(target_os = "linux"))]
    allocator_options();
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // A blocking thread idle this long exits, and its heap, which mimalloc returns only
        // when the thread allocates again or ends, goes back to the system: 2 s after a burst
        // of bulk calls (tokio's default is 10 s; docs/operations.md, "Memory").
        .thread_keep_alive(std::time::Duration::from_secs(2))
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("prodops-server: error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("prodops-server: error: {e}");
            ExitCode::FAILURE
        }
    }
}
