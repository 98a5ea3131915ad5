//! The only module that runs SQL: the SQLite file, its pool and schema, the presentation
//! table, the circuit breaker's tables and the rollout's metrics. Reads and writes: the
//! database file.

mod breaker;
mod metrics;
mod presentation;

pub use breaker::{BreakerRow, BreakerStore, StreakRow};
pub use metrics::{
    Assignment, Epoch, MetricsStore, Observed, QcResult, QcRow, ReviewedPass, WindowData,
};
pub use presentation::PresentationStore;

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use r2d2_sqlite::SqliteConnectionManager;

/// What went wrong with the database, and while doing what.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("opening database {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("no database connection available: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("{doing}: {source}")]
    Sql {
        doing: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    /// The caller's deadline passed before the change could be committed; nothing was written.
    #[error("deadline exceeded")]
    DeadlineExceeded,
}

impl StoreError {
    fn sql(doing: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
        move |source| StoreError::Sql { doing, source }
    }
}

pub(crate) type Pool = r2d2::Pool<SqliteConnectionManager>;
pub(crate) type Conn = r2d2::PooledConnection<SqliteConnectionManager>;

/// The versioned schema. `user_version` records which statements have run, so a later version
/// can add tables without touching what is there.
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS presentation (
        session_id TEXT NOT NULL,
        guideline_id TEXT NOT NULL,
        presented_at TEXT NOT NULL,
        PRIMARY KEY (session_id, guideline_id)
    );",
    // The circuit breaker: one row per session that recorded a check run, and the streak of
    // each (tool, code, file) key of the session's latest run. `halt_reason` is NULL unless the
    // session is halted; the `tripped_*` columns name the key that halted it, if one did.
    "CREATE TABLE IF NOT EXISTS breaker_session (
        session_id TEXT NOT NULL PRIMARY KEY,
        total_errors INTEGER NOT NULL,
        runs INTEGER NOT NULL,
        halt_reason TEXT,
        tripped_tool TEXT,
        tripped_code TEXT,
        tripped_file TEXT,
        tripped_streak INTEGER,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS breaker_streak (
        session_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        code TEXT NOT NULL,
        file TEXT NOT NULL,
        streak INTEGER NOT NULL,
        PRIMARY KEY (session_id, tool, code, file)
    ) WITHOUT ROWID;",
    // The rollout's measurements (`metrics` in ARCHITECTURE.md).
    metrics::MIGRATION,
    // Presentations keyed by their primary key alone: a search's insert writes one B-tree
    // instead of a rowid table and its index (fewer pages touched and committed).
    "CREATE TABLE presentation_by_key (
        session_id TEXT NOT NULL,
        guideline_id TEXT NOT NULL,
        presented_at TEXT NOT NULL,
        PRIMARY KEY (session_id, guideline_id)
    ) WITHOUT ROWID;
    INSERT INTO presentation_by_key (session_id, guideline_id, presented_at)
        SELECT session_id, guideline_id, presented_at FROM presentation;
    DROP TABLE presentation;
    ALTER TABLE presentation_by_key RENAME TO presentation;",
];

/// The database: a connection pool over one SQLite file in WAL mode.
#[derive(Debug, Clone)]
pub struct Database {
    pool: Pool,
    busy_timeout: Duration,
}

impl Database {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<Database, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| open_err(format!("creating {}: {e}", dir.display())))?;
        }
        let timeout_ms = busy_timeout.as_millis() as u64;
        let manager = SqliteConnectionManager::file(path).with_init(move |c| {
            // The busy timeout comes first so that the pragmas below wait for a lock too.
            c.busy_timeout(Duration::from_millis(timeout_ms))?;
            c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        });
        let pool = r2d2::Pool::builder()
            // r2d2 would run an empty statement on every checkout to see that the connection
            // still works; a SQLite connection is a file handle, not a network link, and that
            // check was a tenth of a search's time in SQLite after an idle pause.
            .test_on_check_out(false)
            .max_size(8)
            .min_idle(Some(1))
            .connection_timeout(busy_timeout.max(Duration::from_millis(100)))
            .build(manager)
            .map_err(|e| open_err(e.to_string()))?;
        let db = Database { pool, busy_timeout };
        db.migrate().map_err(|e| open_err(e.to_string()))?;
        Ok(db)
    }

    /// Checks that the existing database at `path` can be written, without writing: opens it
    /// (creating nothing), takes the write lock with `BEGIN IMMEDIATE` (waiting up to
    /// `busy_timeout` for a running sidecar's writes) and rolls back.
    pub fn probe_writable(path: &Path, busy_timeout: Duration) -> Result<(), StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| open_err(e.to_string()))?;
        // SQLite falls back to read-only when the OS refuses write access, silently.
        if conn.is_readonly("main").unwrap_or(true) {
            return Err(open_err("opened read-only: no write permission".into()));
        }
        conn.busy_timeout(busy_timeout)
            .map_err(StoreError::sql("setting the busy timeout"))?;
        conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
            .map_err(StoreError::sql("taking the write lock"))
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.pool.get()?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("starting the schema migration"))?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(StoreError::sql("reading the schema version"))?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            tx.execute_batch(sql)
                .map_err(StoreError::sql("migrating the schema"))?;
            tx.pragma_update(None, "user_version", i as i64 + 1)
                .map_err(StoreError::sql("recording the schema version"))?;
        }
        tx.commit()
            .map_err(StoreError::sql("committing the schema migration"))
    }

    /// A connection whose busy timeout is cut to what is left of `deadline`, so that waiting
    /// for a lock never outlasts the caller's patience.
    pub(crate) fn conn(&self, deadline: Option<Instant>) -> Result<Conn, StoreError> {
        let wait = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(StoreError::DeadlineExceeded);
                }
                left.min(self.busy_timeout)
            }
            None => self.busy_timeout,
        };
        let conn = self.pool.get_timeout(wait.max(Duration::from_millis(1)))?;
        // SQLite counts its busy timeout in whole milliseconds, and rusqlite truncates: 149.7 ms
        // would give up 0.7 ms before the caller's deadline and report a storage error instead
        // of the deadline. Rounded up, the wait always reaches the deadline.
        let wait = Duration::from_millis(wait.as_micros().div_ceil(1000) as u64);
        conn.busy_timeout(wait)
            .map_err(StoreError::sql("setting the busy timeout"))?;
        Ok(conn)
    }
}
