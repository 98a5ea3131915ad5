//! The only module that runs SQL: the SQLite file, its pool and schema, the presentation
//! table, the circuit breaker's tables and the rollout's metrics. Reads and writes: the
//! database file.

mod adherence;
mod breaker;
mod metrics;
mod presentation;
mod team;

pub use adherence::{AdherenceEvent, FileRecord, GuidelineIds, IndexedFile, IndexedSearch};
pub use breaker::{BreakerRow, BreakerStore, StreakRow};
pub use metrics::{MetricsStore, Observed, QcResult, QcRow, ReviewedPass, WindowData};
pub use presentation::PresentationStore;
pub use team::{Increment, SeriesRow, TeamStore};

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use r2d2_sqlite::SqliteConnectionManager;

use crate::parallel::{Gate, Permit};

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
    /// The writes of this process queued ahead of this one held the write turn for the whole
    /// busy timeout (one of them waiting, most likely, for a lock another process holds).
    #[error(
        "database is locked: this sidecar's writes queued ahead of this one held it for {0:?} \
         (another process may hold SQLite's write lock)"
    )]
    Busy(Duration),
}

impl StoreError {
    fn sql(doing: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
        move |source| StoreError::Sql { doing, source }
    }
}

/// Seconds since the Unix epoch, as every `at` column holds them.
pub type Epoch = i64;

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
    // Per-guideline adherence: each search's files with what matched and was presented, and
    // checkEdit's refusals, in order (`metrics::adherence`).
    adherence::MIGRATION,
    // The team push: settled sessions and the cumulative counters they added up to.
    team::MIGRATION,
];

/// The database: a connection pool over one SQLite file in WAL mode.
#[derive(Debug, Clone)]
pub struct Database {
    pool: Pool,
    busy_timeout: Duration,
    /// One writer at a time among this process's connections, queued here rather than in
    /// SQLite. SQLite's busy handler, when a write finds the lock taken, sleeps (1 ms, then 2,
    /// 5, 10, …) and tries again: eight clients' searches recording their presentations at
    /// once slept through a millisecond each while the lock they waited for was held for a
    /// tenth of that. Here the next writer is woken the moment the lock is given back. Writers
    /// in other processes (the CLI) still meet SQLite's lock and its busy handler.
    writer: Arc<Gate>,
}

/// This process's turn to write; the next writer's comes when it is dropped.
pub(crate) type WriterTurn = Permit<Arc<Gate>>;

/// An `IMMEDIATE` transaction taken in this process's writer turn: dropped uncommitted, it
/// rolls back and then gives the turn back.
pub(crate) struct WriteTx<'c> {
    // Fields drop in order: the transaction ends before the turn goes. Held, never read.
    tx: rusqlite::Transaction<'c>,
    _turn: WriterTurn,
}

impl<'c> std::ops::Deref for WriteTx<'c> {
    type Target = rusqlite::Transaction<'c>;
    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl WriteTx<'_> {
    /// Commits; the turn goes with the rest of `self`, after the commit.
    pub(crate) fn commit(self) -> rusqlite::Result<()> {
        self.tx.commit()
    }
}

/// Makes the database file at `path` its user's alone: created 0600 when missing, and an
/// existing one readable by others (made by an older version, under a looser umask)
/// tightened to 0600. SQLite gives its WAL and shared-memory files the database's mode, so they
/// follow. The database holds what each session was shown and the orchestrators' reports.
fn private_file(path: &Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let mine = meta.uid() == unsafe { libc::geteuid() };
    if mine && meta.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
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
        private_file(path).map_err(|e| open_err(format!("creating {}: {e}", path.display())))?;
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
        let db = Database {
            pool,
            busy_timeout,
            writer: Arc::new(Gate::new(1)),
        };
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
        set_busy_timeout(&conn, wait)?;
        Ok(conn)
    }

    /// Waits for this process's turn to write, up to `deadline` and at most the busy timeout.
    /// For a single autocommit statement on `conn`; a transaction takes it with
    /// [`Database::begin_write`]. If the turn was not free at once, `conn`'s SQLite busy
    /// timeout is cut to what is left, so the two waits together stay within both bounds.
    pub(crate) fn writer_turn(
        &self,
        conn: &rusqlite::Connection,
        deadline: Option<Instant>,
    ) -> Result<WriterTurn, StoreError> {
        let started = Instant::now();
        let patience = started + self.busy_timeout;
        let until = deadline.map_or(patience, |d| d.min(patience));
        match self.writer.enter_owned(Some(until)) {
            Some((turn, waited)) => {
                if waited {
                    set_busy_timeout(conn, until.saturating_duration_since(Instant::now()))?;
                }
                Ok(turn)
            }
            None if deadline.is_some_and(|d| Instant::now() >= d) => {
                Err(StoreError::DeadlineExceeded)
            }
            None => Err(StoreError::Busy(started.elapsed())),
        }
    }

    /// Starts an `IMMEDIATE` transaction on `conn` (SQLite's write lock taken before any read)
    /// in this process's writer turn.
    pub(crate) fn begin_write<'c>(
        &self,
        conn: &'c mut Conn,
        deadline: Option<Instant>,
        doing: &'static str,
    ) -> Result<WriteTx<'c>, StoreError> {
        let turn = self.writer_turn(conn, deadline)?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql(doing))?;
        Ok(WriteTx { tx, _turn: turn })
    }
}

/// Sets how long SQLite waits for a lock on `conn`. SQLite counts it in whole milliseconds, and
/// rusqlite truncates: 149.7 ms would give up 0.7 ms before the caller's deadline and report a
/// storage error instead of the deadline. Rounded up, the wait always reaches the deadline.
fn set_busy_timeout(conn: &rusqlite::Connection, wait: Duration) -> Result<(), StoreError> {
    conn.busy_timeout(Duration::from_millis(wait.as_micros().div_ceil(1000) as u64))
        .map_err(StoreError::sql("setting the busy timeout"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn open(busy_timeout: Duration) -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("g.db"), busy_timeout).unwrap();
        (dir, db)
    }

    fn record(tx: &rusqlite::Transaction, session: &str, guideline: &str) {
        tx.execute(
            "INSERT INTO presentation (session_id, guideline_id, presented_at)
             VALUES (?1, ?2, 'now')",
            [session, guideline],
        )
        .unwrap();
    }

    /// Writers of one process queue for their turn and never meet SQLite's write lock: with
    /// SQLite's own busy timeout at zero on every connection, any two transactions that met
    /// there would fail with SQLITE_BUSY. Without the turn they do, within a few rounds.
    #[test]
    fn in_process_writers_never_wait_in_sqlite() {
        let (_dir, db) = open(Duration::from_secs(30));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for i in 0..40 {
                        let mut conn = db.conn(None).unwrap();
                        conn.busy_timeout(Duration::ZERO).unwrap();
                        let tx = db.begin_write(&mut conn, None, "writing").unwrap();
                        record(&tx, &format!("s{t}"), &format!("g{i}"));
                        tx.commit().unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let conn = db.conn(None).unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM presentation", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 8 * 40);
    }

    /// The next writer gets its turn when the one before commits, or drops its transaction
    /// uncommitted (which rolls it back).
    #[test]
    fn the_turn_passes_on_commit_and_on_drop() {
        let (_dir, db) = open(Duration::from_secs(30));
        let mut conn = db.conn(None).unwrap();
        let tx = db.begin_write(&mut conn, None, "writing").unwrap();
        record(&tx, "s", "dropped");
        let (sent, got) = mpsc::channel();
        let waiter = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut conn = db.conn(None).unwrap();
                let tx = db.begin_write(&mut conn, None, "writing").unwrap();
                sent.send(()).unwrap();
                record(&tx, "s", "kept");
                tx.commit().unwrap();
            })
        };
        // The waiter cannot have its turn while ours is held.
        assert!(got.recv_timeout(Duration::from_millis(100)).is_err());
        drop(tx);
        got.recv_timeout(Duration::from_secs(30)).unwrap();
        waiter.join().unwrap();
        let ids: Vec<String> = conn
            .prepare("SELECT guideline_id FROM presentation")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ids, ["kept"]);
        // Committed, the turn is free again at once: a zero-patience writer takes it.
        let (_dir2, quick) = open(Duration::ZERO);
        let mut c = quick.conn(None).unwrap();
        quick
            .begin_write(&mut c, None, "w")
            .unwrap()
            .commit()
            .unwrap();
        drop(quick.writer_turn(&c, None).unwrap());
        let tx = quick.begin_write(&mut c, None, "w").unwrap();
        drop(tx);
        quick.writer_turn(&c, None).unwrap();
    }

    /// A turn held past the busy timeout is a busy database; held past the caller's earlier
    /// deadline, it is the deadline.
    #[test]
    fn a_turn_held_too_long_is_busy_or_the_deadline() {
        let (_dir, db) = open(Duration::from_millis(50));
        let conn = db.conn(None).unwrap();
        let held = db.writer_turn(&conn, None).unwrap();
        let err = db.writer_turn(&conn, None).unwrap_err();
        assert!(matches!(err, StoreError::Busy(_)), "{err:?}");
        assert!(err.to_string().starts_with("database is locked"), "{err}");
        let soon = Instant::now() + Duration::from_millis(10);
        let err = db.writer_turn(&conn, Some(soon)).unwrap_err();
        assert!(matches!(err, StoreError::DeadlineExceeded), "{err:?}");
        // A deadline later than the busy timeout: the busy timeout decides.
        let late = Instant::now() + Duration::from_secs(30);
        let err = db.writer_turn(&conn, Some(late)).unwrap_err();
        assert!(matches!(err, StoreError::Busy(_)), "{err:?}");
        drop(held);
        db.writer_turn(&conn, Some(late)).unwrap();
    }

    /// When another process holds SQLite's lock, the writer at the head of the queue waits for
    /// it in SQLite and the next one waits for the turn: the next one's SQLite wait gets only
    /// what is left of its patience, so it fails within one busy timeout, not one and a half.
    #[test]
    fn waiting_for_the_turn_counts_against_the_busy_timeout() {
        let patience = Duration::from_secs(1);
        let (dir, db) = open(patience);
        let other = rusqlite::Connection::open(dir.path().join("g.db")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let head = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut conn = db.conn(None).unwrap();
                db.begin_write(&mut conn, None, "writing").map(drop)
            })
        };
        // The head of the queue has the turn (and waits in SQLite) before the next one comes.
        let conn = db.conn(None).unwrap();
        while db.writer.free() != 0 {
            std::thread::yield_now();
        }
        // Half way through the head's wait: the turn comes to this one with half its patience
        // gone (a whole one more if SQLite's wait were not cut).
        std::thread::sleep(patience / 2);
        let started = Instant::now();
        let err = db
            .writer_turn(&conn, None)
            .and_then(|_turn| {
                conn.execute_batch("BEGIN IMMEDIATE")
                    .map_err(StoreError::sql("taking the write lock"))
            })
            .unwrap_err();
        let waited = started.elapsed();
        assert!(err.to_string().contains("locked"), "{err}");
        assert!(waited < patience + patience / 4, "{waited:?}: {err}");
        assert!(head.join().unwrap().is_err());
        other.execute_batch("ROLLBACK").unwrap();
    }
}
