//! The PostgreSQL store: the connections, the schema and its migrations,
//! and every statement the replicas share.
//!
//! Connections come from a small pool of exclusive clients (a transaction
//! needs its connection to itself); a connection that died (the server
//! restarted) is dropped and a new one opened. Every operation is retried
//! while the database is unreachable, for [`OUTAGE`] at most, so a
//! restarted PostgreSQL costs the runs a pause, not their state.
//!
//! Times that decide ownership (`lease_until`) are the database's `now()`,
//! so the replicas' clocks never have to agree.
//!
//! TLS follows the URL's `sslmode` and `sslrootcert` ([`super::tls`]):
//! verified whenever used, required by default off loopback.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio_postgres::{Client, Config, NoTls};

use super::tls::{self, Tls};

/// How long an operation waits for an unreachable database before failing.
pub const OUTAGE: Duration = Duration::from_secs(60);
/// The most connections one replica opens: with PostgreSQL's default of
/// 100, a handful of replicas fit.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a lease lasts without a heartbeat.
pub const LEASE: Duration = Duration::from_secs(5);

/// The environment variables the password is read from, in order (never
/// the URL: it would be in argv and the config file).
pub const PASSWORD_VARS: [&str; 2] = ["NANOHERMES_STORE_PASSWORD", "PGPASSWORD"];

/// The key of the advisory lock migrations hold (any constant will do;
/// this one reads "nanohrms").
const MIGRATION_LOCK: i64 = 0x6e61_6e6f_6872_6d73;

/// The schema, one entry per version: applied in order, each once, in one
/// transaction with its row in `schema_version`.
const MIGRATIONS: &[&str] = &[
    // 1: tasks, sessions and their messages.
    "CREATE TABLE nh_tasks (
        task_id text PRIMARY KEY,
        owner text NOT NULL,
        hidden boolean NOT NULL,
        status text NOT NULL,
        created_at text NOT NULL,
        updated_at text NOT NULL,
        session_id text NOT NULL,
        workspace text NOT NULL,
        args text NOT NULL,
        answers text NOT NULL,
        result text,
        last_step text NOT NULL DEFAULT 'started',
        cancel_requested boolean NOT NULL DEFAULT false,
        question text,
        answer text,
        lease_owner text,
        lease_until timestamptz NOT NULL DEFAULT now(),
        takeovers integer NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX nh_tasks_one_per_workspace ON nh_tasks (workspace) WHERE status = 'working';
    CREATE INDEX nh_tasks_working ON nh_tasks (lease_until) WHERE status = 'working';
    CREATE TABLE nh_sessions (
        session_id text PRIMARY KEY,
        workspace text NOT NULL,
        usage text NOT NULL,
        surfaced text NOT NULL
    );
    CREATE TABLE nh_messages (
        session_id text NOT NULL REFERENCES nh_sessions ON DELETE CASCADE,
        idx integer NOT NULL,
        message text NOT NULL,
        PRIMARY KEY (session_id, idx)
    );",
];

/// The database every replica shares.
pub struct Pg {
    config: Config,
    tls: Tls,
    idle: Mutex<Vec<Client>>,
    /// One permit per connection in use.
    permits: tokio::sync::Semaphore,
    shown: String,
}

/// A failure: `Down` while the database cannot be reached (retried),
/// `Failed` for anything else.
#[derive(Debug)]
pub enum PgError {
    /// The connection is gone or could not be made.
    Down(String),
    /// The statement failed.
    Failed(String),
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgError::Down(e) => write!(f, "the store is unreachable: {e}"),
            PgError::Failed(e) => write!(f, "the store refused: {e}"),
        }
    }
}

impl From<tokio_postgres::Error> for PgError {
    fn from(e: tokio_postgres::Error) -> PgError {
        // Class 08 (connection exception) and 57 (operator intervention:
        // the server is shutting down or restarting) pass, as does a lost
        // connection; anything else is the statement's own failure, and a
        // server the TLS check refuses is a setting to fix, not an outage.
        let transient = match e.code() {
            Some(code) => code.code().starts_with("08") || code.code().starts_with("57"),
            None => !tls::is_refusal(&e),
        };
        let text = match e.as_db_error() {
            Some(db) => db.message().to_owned(),
            None => e.to_string(),
        };
        if transient {
            PgError::Down(text)
        } else {
            PgError::Failed(text)
        }
    }
}

impl Pg {
    /// Parses `url` (`postgres://user@host:port/db`, with libpq's
    /// `sslmode` and `sslrootcert` if wanted); the password comes from
    /// [`PASSWORD_VARS`]. A password in the URL is refused.
    pub fn new(url: &str) -> Result<Pg, String> {
        let (base, tls_settings) = tls::split_url(url)?;
        let mut config: Config = base
            .parse()
            // The URL is not echoed: a mistyped one may hold a password.
            .map_err(|e| {
                format!("--store: not a PostgreSQL URL (postgres://USER@HOST:PORT/DB): {e}")
            })?;
        if config.get_password().is_some() {
            return Err(format!(
                "--store: put no password in the URL (it would show in the process list); set {} instead",
                PASSWORD_VARS[0]
            ));
        }
        if let Some(password) = PASSWORD_VARS
            .iter()
            .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        {
            config.password(password);
        }
        config.application_name("nanohermes serve");
        config.connect_timeout(Duration::from_secs(5));
        let tls = Tls::new(&tls_settings, &mut config)?;
        Ok(Pg {
            config,
            tls,
            idle: Mutex::default(),
            permits: tokio::sync::Semaphore::new(MAX_CONNECTIONS),
            shown: url.to_owned(),
        })
    }

    /// The URL, as the start line shows it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether the connections are encrypted, as the start line says it.
    pub fn tls(&self) -> &'static str {
        self.tls.describe(&self.config)
    }

    async fn take(&self) -> Result<Client, PgError> {
        loop {
            let client = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match client {
                Some(client) if !client.is_closed() => return Ok(client),
                Some(_) => continue,
                None => break,
            }
        }
        // The two connectors give connections of two types: each is driven
        // by a task of its own.
        let client = match &self.tls {
            Tls::Off => {
                let (client, connection) = self.config.connect(NoTls).await?;
                tokio::spawn(drive(connection));
                client
            }
            Tls::On(tls) => {
                let (client, connection) = self.config.connect(tls.clone()).await?;
                tokio::spawn(drive(connection));
                client
            }
        };
        Ok(client)
    }

    fn give_back(&self, client: Client) {
        if !client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(client);
        }
    }

    /// Runs `op` on a connection of its own, again on a new connection
    /// while the database is down, for [`OUTAGE`] at most.
    pub async fn with<T, F, Fut>(&self, mut op: F) -> Result<T, PgError>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = (Client, Result<T, PgError>)>,
    {
        let deadline = tokio::time::Instant::now() + OUTAGE;
        let mut pause = Duration::from_millis(50);
        loop {
            let permit = self.permits.acquire().await;
            let attempt = match self.take().await {
                Ok(client) => {
                    let (client, result) = op(client).await;
                    self.give_back(client);
                    result
                }
                Err(e) => Err(e),
            };
            drop(permit);
            match attempt {
                Err(PgError::Down(e)) if tokio::time::Instant::now() < deadline => {
                    tracing::info!("store down, retrying: {e}");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    /// Tries the database once (for `/ready`).
    pub async fn ping(&self) -> Result<(), PgError> {
        let _permit = self.permits.acquire().await;
        let client = self.take().await?;
        let result = client.simple_query("SELECT 1").await.map(|_| ());
        self.give_back(client);
        Ok(result?)
    }

    /// Creates or migrates the schema; replicas starting together wait for
    /// each other on an advisory lock, so each version is applied once.
    pub async fn migrate(&self) -> Result<i32, PgError> {
        self.with(|mut client| async move {
            let result = migrate_on(&mut client).await;
            (client, result)
        })
        .await
    }
}

/// Runs a connection until it closes.
async fn drive<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if let Err(e) = connection.await {
        tracing::info!("store connection closed: {e}");
    }
}

async fn migrate_on(client: &mut Client) -> Result<i32, PgError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
        .await?;
    let current: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
        .await?
        .get(0);
    let known = MIGRATIONS.len() as i32;
    if current > known {
        return Err(PgError::Failed(format!(
            "the store's schema is version {current}, newer than this nanohermes knows ({known}); upgrade nanohermes"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&(version as i32 + 1)],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(known)
}
