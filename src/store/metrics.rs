//! What the rollout is measured by: prompt builds, edit hooks, breaker verdicts (recorded by the
//! sidecar), QC results, re-reviews, session tokens and A/B assignments (reported by an
//! orchestrator), and the window queries the metrics files are computed from. Reads and writes:
//! the `metrics_*` tables.

use std::time::Instant;

use rusqlite::{params, OptionalExtension};

use super::{AdherenceEvent, Database, Epoch, IndexedSearch, StoreError};

/// One thing the sidecar saw, to be written in a batch off the request path.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    PromptBuild {
        at: Epoch,
        session_id: Option<String>,
        role: String,
        phase: &'static str,
        tokens: u64,
        team: Option<String>,
        level: Option<String>,
    },
    /// One edit hook (one `search` call) and the number of files it named.
    Edit {
        at: Epoch,
        session_id: String,
        files: u64,
    },
    /// A `recordError` verdict: `continue`, `warning` or `halt`.
    BreakerVerdict {
        at: Epoch,
        session_id: String,
        state: &'static str,
    },
    /// A search's files or a `checkEdit` refusal, for per-guideline adherence.
    Adherence {
        session_id: String,
        event: AdherenceEvent,
    },
    /// A search's files as the hook hands them over (snapshot indices; ids looked up here).
    AdherenceSearch {
        session_id: String,
        search: IndexedSearch,
    },
}

/// A QC result as an orchestrator reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct QcResult {
    pub task_id: String,
    pub session_id: Option<String>,
    pub passed: bool,
    pub issue_type: Option<String>,
    pub duration_sec: f64,
    pub model: String,
}

/// A task's place in the A/B test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub task_id: String,
    pub group: String,
    pub model: String,
    pub assigned_at: Epoch,
}

/// One re-reviewed QC pass, with the A/B group of its task (if it was assigned one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewedPass {
    pub group: Option<String>,
    pub model: String,
    pub defect_found: bool,
}

/// One QC result as the metrics read it.
#[derive(Debug, Clone, PartialEq)]
pub struct QcRow {
    pub passed: bool,
    pub issue_type: Option<String>,
    pub duration_sec: f64,
    pub model: String,
}

/// Everything the metrics files are computed from, for one window of time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowData {
    /// (team, level, phase, tokens) per prompt build.
    pub prompt_builds: Vec<(Option<String>, Option<String>, String, u64)>,
    pub qc_results: Vec<QcRow>,
    /// Files edited per session that had at least one edit hook.
    pub session_edits: Vec<u64>,
    /// Reported token consumption per session.
    pub session_tokens: Vec<u64>,
    /// Re-reviewed QC passes.
    pub reviewed_passes: Vec<ReviewedPass>,
}

/// The metrics tables.
#[derive(Debug, Clone)]
pub struct MetricsStore {
    db: Database,
}

impl MetricsStore {
    pub fn new(db: Database) -> Self {
        MetricsStore { db }
    }

    /// Writes a batch of observations in one transaction: all of them or none.
    pub fn write_observed(&self, batch: &[Observed]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "starting the metrics transaction")?;
        for o in batch {
            match o {
                Observed::PromptBuild {
                    at,
                    session_id,
                    role,
                    phase,
                    tokens,
                    team,
                    level,
                } => tx
                    .prepare_cached(
                        "INSERT INTO metrics_prompt_build
                         (at, session_id, role, phase, tokens, team, level)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            at,
                            session_id,
                            role,
                            phase,
                            *tokens as i64,
                            team,
                            level
                        ])
                    }),
                Observed::Edit {
                    at,
                    session_id,
                    files,
                } => tx
                    .prepare_cached(
                        "INSERT INTO metrics_edit (at, session_id, files) VALUES (?1, ?2, ?3)",
                    )
                    .and_then(|mut s| s.execute(params![at, session_id, *files as i64])),
                Observed::BreakerVerdict {
                    at,
                    session_id,
                    state,
                } => tx
                    .prepare_cached(
                        "INSERT INTO metrics_breaker_verdict (at, session_id, state)
                         VALUES (?1, ?2, ?3)",
                    )
                    .and_then(|mut s| s.execute(params![at, session_id, state])),
                Observed::Adherence { session_id, event } => {
                    super::adherence::write(&tx, session_id, event).map(|()| 1)
                }
                Observed::AdherenceSearch { session_id, search } => {
                    super::adherence::write_indexed(&tx, session_id, search).map(|()| 1)
                }
            }
            .map_err(StoreError::sql("recording an observation"))?;
        }
        tx.commit()
            .map_err(StoreError::sql("committing observations"))
    }

    /// Records a QC result; returns the A/B group of its task, if it was assigned one.
    pub fn record_qc_result(
        &self,
        r: &QcResult,
        at: Epoch,
        deadline: Option<Instant>,
    ) -> Result<Option<String>, StoreError> {
        let mut conn = self.db.conn(deadline)?;
        let tx = self
            .db
            .begin_write(&mut conn, deadline, "starting the QC transaction")?;
        tx.execute(
            "INSERT INTO metrics_qc_result
             (at, task_id, session_id, passed, issue_type, duration_sec, model)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                at,
                r.task_id,
                r.session_id,
                r.passed,
                r.issue_type,
                r.duration_sec,
                r.model
            ],
        )
        .map_err(StoreError::sql("recording a QC result"))?;
        let group = assignment_in(&tx, &r.task_id)?.map(|a| a.group);
        tx.commit()
            .map_err(StoreError::sql("committing a QC result"))?;
        Ok(group)
    }

    /// The latest QC result of a task: (passed, model), if any.
    pub fn latest_qc(&self, task_id: &str) -> Result<Option<(bool, String)>, StoreError> {
        let conn = self.db.conn(None)?;
        conn.query_row(
            "SELECT passed, model FROM metrics_qc_result WHERE task_id = ?1
             ORDER BY at DESC, id DESC LIMIT 1",
            [task_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(StoreError::sql("reading a task's QC result"))
    }

    /// Records (or replaces) the re-review of a task's QC pass; returns whether one was replaced.
    pub fn record_review(
        &self,
        task_id: &str,
        defect_found: bool,
        reviewer: Option<&str>,
        at: Epoch,
    ) -> Result<bool, StoreError> {
        let conn = self.db.conn(None)?;
        let replaced: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM metrics_qc_review WHERE task_id = ?1)",
                [task_id],
                |r| r.get(0),
            )
            .map_err(StoreError::sql("reading a review"))?;
        let _turn = self.db.writer_turn(&conn, None)?;
        conn.execute(
            "INSERT INTO metrics_qc_review (task_id, at, defect_found, reviewer)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (task_id) DO UPDATE SET at = excluded.at,
                 defect_found = excluded.defect_found, reviewer = excluded.reviewer",
            params![task_id, at, defect_found, reviewer],
        )
        .map_err(StoreError::sql("recording a review"))?;
        Ok(replaced)
    }

    /// Records a session's token consumption so far (the latest report counts).
    pub fn record_session_tokens(
        &self,
        session_id: &str,
        tokens: u64,
        at: Epoch,
    ) -> Result<(), StoreError> {
        let conn = self.db.conn(None)?;
        let _turn = self.db.writer_turn(&conn, None)?;
        conn.execute(
            "INSERT INTO metrics_session_tokens (session_id, at, tokens) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id) DO UPDATE SET at = excluded.at, tokens = excluded.tokens",
            params![session_id, at, tokens as i64],
        )
        .map_err(StoreError::sql("recording session tokens"))?;
        Ok(())
    }

    /// The task's assignment: the one recorded before, else `assign`'s, recorded now. A task
    /// keeps its group even if the rollout changes later.
    pub fn assign(
        &self,
        task_id: &str,
        at: Epoch,
        assign: impl FnOnce() -> (String, String),
    ) -> Result<(Assignment, bool), StoreError> {
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "starting the assignment transaction")?;
        if let Some(a) = assignment_in(&tx, task_id)? {
            return Ok((a, false));
        }
        let (group, model) = assign();
        tx.execute(
            "INSERT INTO metrics_ab_assignment (task_id, at, grp, model) VALUES (?1, ?2, ?3, ?4)",
            params![task_id, at, group, model],
        )
        .map_err(StoreError::sql("recording an assignment"))?;
        tx.commit()
            .map_err(StoreError::sql("committing an assignment"))?;
        Ok((
            Assignment {
                task_id: task_id.to_owned(),
                group,
                model,
                assigned_at: at,
            },
            true,
        ))
    }

    /// When the first task was assigned, if any was.
    pub fn first_assignment(&self) -> Result<Option<Epoch>, StoreError> {
        let conn = self.db.conn(None)?;
        conn.query_row("SELECT MIN(at) FROM metrics_ab_assignment", [], |r| {
            r.get(0)
        })
        .map_err(StoreError::sql("reading assignments"))
    }

    /// Everything recorded in `[from, to)`.
    pub fn window(&self, from: Epoch, to: Epoch) -> Result<WindowData, StoreError> {
        let conn = self.db.conn(None)?;
        let sql = StoreError::sql("reading metrics");
        let mut data = WindowData::default();
        let mut s = conn
            .prepare(
                "SELECT team, level, phase, tokens FROM metrics_prompt_build
                 WHERE at >= ?1 AND at < ?2",
            )
            .map_err(StoreError::sql("reading metrics"))?;
        data.prompt_builds = s
            .query_map([from, to], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)? as u64))
            })
            .and_then(|rows| rows.collect())
            .map_err(StoreError::sql("reading prompt builds"))?;
        let mut s = conn
            .prepare(
                "SELECT passed, issue_type, duration_sec, model FROM metrics_qc_result
                 WHERE at >= ?1 AND at < ?2",
            )
            .map_err(StoreError::sql("reading metrics"))?;
        data.qc_results = s
            .query_map([from, to], |r| {
                Ok(QcRow {
                    passed: r.get(0)?,
                    issue_type: r.get(1)?,
                    duration_sec: r.get(2)?,
                    model: r.get(3)?,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(StoreError::sql("reading QC results"))?;
        let mut s = conn
            .prepare(
                "SELECT SUM(files) FROM metrics_edit WHERE at >= ?1 AND at < ?2
                 GROUP BY session_id",
            )
            .map_err(StoreError::sql("reading metrics"))?;
        data.session_edits = s
            .query_map([from, to], |r| Ok(r.get::<_, i64>(0)? as u64))
            .and_then(|rows| rows.collect())
            .map_err(StoreError::sql("reading edits"))?;
        let mut s = conn
            .prepare("SELECT tokens FROM metrics_session_tokens WHERE at >= ?1 AND at < ?2")
            .map_err(StoreError::sql("reading metrics"))?;
        data.session_tokens = s
            .query_map([from, to], |r| Ok(r.get::<_, i64>(0)? as u64))
            .and_then(|rows| rows.collect())
            .map_err(StoreError::sql("reading session tokens"))?;
        drop(s);
        data.reviewed_passes = reviewed_passes(&conn, from, to).map_err(sql)?;
        Ok(data)
    }

    /// The adherence records at or after `since`, session by session, each session's events in
    /// the order recorded.
    pub fn adherence_sessions(
        &self,
        since: Epoch,
        each: impl FnMut(&str, &[AdherenceEvent]),
    ) -> Result<(), StoreError> {
        super::adherence::each_session(&self.db, since, each)
    }

    /// The re-reviewed QC passes of tasks whose latest QC result (a pass) came in `[from, to)`.
    pub fn reviewed_passes(&self, from: Epoch, to: Epoch) -> Result<Vec<ReviewedPass>, StoreError> {
        let conn = self.db.conn(None)?;
        reviewed_passes(&conn, from, to).map_err(StoreError::sql("reading reviews"))
    }
}

fn reviewed_passes(
    conn: &rusqlite::Connection,
    from: Epoch,
    to: Epoch,
) -> rusqlite::Result<Vec<ReviewedPass>> {
    // The latest QC result per task decides: a task that failed QC and then passed was passed.
    let mut s = conn.prepare(
        "WITH latest AS (
             SELECT task_id, passed, model, at,
                    ROW_NUMBER() OVER (PARTITION BY task_id ORDER BY at DESC, id DESC) AS n
             FROM metrics_qc_result)
         SELECT a.grp, l.model, v.defect_found
         FROM latest l
         JOIN metrics_qc_review v ON v.task_id = l.task_id
         LEFT JOIN metrics_ab_assignment a ON a.task_id = l.task_id
         WHERE l.n = 1 AND l.passed = 1 AND l.at >= ?1 AND l.at < ?2",
    )?;
    let rows = s.query_map([from, to], |r| {
        Ok(ReviewedPass {
            group: r.get(0)?,
            model: r.get(1)?,
            defect_found: r.get(2)?,
        })
    })?;
    rows.collect()
}

fn assignment_in(
    conn: &rusqlite::Connection,
    task_id: &str,
) -> Result<Option<Assignment>, StoreError> {
    conn.query_row(
        "SELECT task_id, grp, model, at FROM metrics_ab_assignment WHERE task_id = ?1",
        [task_id],
        |r| {
            Ok(Assignment {
                task_id: r.get(0)?,
                group: r.get(1)?,
                model: r.get(2)?,
                assigned_at: r.get(3)?,
            })
        },
    )
    .optional()
    .map_err(StoreError::sql("reading an assignment"))
}

/// The schema of the tables above (one migration).
pub(super) const MIGRATION: &str = "
    CREATE TABLE IF NOT EXISTS metrics_prompt_build (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        session_id TEXT,
        role TEXT NOT NULL,
        phase TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        team TEXT,
        level TEXT
    );
    CREATE INDEX IF NOT EXISTS metrics_prompt_build_at ON metrics_prompt_build (at);
    CREATE TABLE IF NOT EXISTS metrics_edit (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        files INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS metrics_edit_at ON metrics_edit (at);
    CREATE TABLE IF NOT EXISTS metrics_breaker_verdict (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        state TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS metrics_qc_result (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        task_id TEXT NOT NULL,
        session_id TEXT,
        passed INTEGER NOT NULL,
        issue_type TEXT,
        duration_sec REAL NOT NULL,
        model TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS metrics_qc_result_task ON metrics_qc_result (task_id, at);
    CREATE INDEX IF NOT EXISTS metrics_qc_result_at ON metrics_qc_result (at);
    CREATE TABLE IF NOT EXISTS metrics_qc_review (
        task_id TEXT NOT NULL PRIMARY KEY,
        at INTEGER NOT NULL,
        defect_found INTEGER NOT NULL,
        reviewer TEXT
    );
    CREATE TABLE IF NOT EXISTS metrics_session_tokens (
        session_id TEXT NOT NULL PRIMARY KEY,
        at INTEGER NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS metrics_ab_assignment (
        task_id TEXT NOT NULL PRIMARY KEY,
        at INTEGER NOT NULL,
        grp TEXT NOT NULL,
        model TEXT NOT NULL
    );";
