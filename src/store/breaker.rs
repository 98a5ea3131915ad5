//! The circuit breaker's persistent state per session. Reads and writes: the `breaker_session`
//! and `breaker_streak` tables.
//!
//! The store knows rows, not rules: [`BreakerStore::update`] hands the session's row to a
//! closure (the state machine in `crate::breaker`) and writes back what it returns, all inside
//! one `BEGIN IMMEDIATE` transaction.

use rusqlite::OptionalExtension;

use super::{Database, StoreError};

/// One `(tool, code, file)` key and its streak: how many consecutive check runs held it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreakRow {
    pub tool: String,
    pub code: String,
    pub file: String,
    pub streak: u32,
}

/// A session's breaker state as stored. A session that never recorded a run reads as
/// `BreakerRow::default()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BreakerRow {
    /// Errors recorded in the session, counted once per key per run.
    pub total_errors: u64,
    /// Check runs recorded in the session, clean ones included.
    pub runs: u64,
    /// Why the session is halted; `None` while it is not.
    pub halt_reason: Option<String>,
    /// The key that halted the session, with its streak at that moment, if a key did.
    pub tripped: Option<StreakRow>,
    /// The keys of the latest run, each with its streak.
    pub streaks: Vec<StreakRow>,
}

/// The breaker tables.
#[derive(Debug, Clone)]
pub struct BreakerStore {
    db: Database,
}

impl BreakerStore {
    pub fn new(db: Database) -> Self {
        BreakerStore { db }
    }

    /// Reads the session's row, lets `change` compute the new one, and writes it back, in one
    /// `IMMEDIATE` transaction: SQLite's write lock is taken before the read, so concurrent
    /// updates of one session run one after the other and none is lost.
    pub fn update<T>(
        &self,
        session_id: &str,
        change: impl FnOnce(BreakerRow) -> (BreakerRow, T),
    ) -> Result<T, StoreError> {
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "starting the breaker transaction")?;
        let before = read_row(&tx, session_id)?.unwrap_or_default();
        let (after, answer) = change(before);
        write_row(&tx, session_id, &after)?;
        tx.commit()
            .map_err(StoreError::sql("committing the breaker state"))?;
        Ok(answer)
    }

    /// The session's row, or `None` if it never recorded a run (or was reset since).
    pub fn load(&self, session_id: &str) -> Result<Option<BreakerRow>, StoreError> {
        let mut conn = self.db.conn(None)?;
        // A deferred transaction gives one consistent snapshot of both tables.
        let tx = conn
            .transaction()
            .map_err(StoreError::sql("starting the breaker read"))?;
        read_row(&tx, session_id)
    }

    /// Forgets the session's breaker state; returns whether there was any.
    pub fn reset(&self, session_id: &str) -> Result<bool, StoreError> {
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "starting the breaker reset")?;
        let streaks = tx
            .execute(
                "DELETE FROM breaker_streak WHERE session_id = ?1",
                [session_id],
            )
            .map_err(StoreError::sql("clearing a session's breaker streaks"))?;
        let sessions = tx
            .execute(
                "DELETE FROM breaker_session WHERE session_id = ?1",
                [session_id],
            )
            .map_err(StoreError::sql("clearing a session's breaker state"))?;
        tx.commit()
            .map_err(StoreError::sql("committing the breaker reset"))?;
        Ok(streaks + sessions > 0)
    }
}

fn read_row(
    conn: &rusqlite::Connection,
    session_id: &str,
) -> Result<Option<BreakerRow>, StoreError> {
    let head = conn
        .prepare_cached(
            "SELECT total_errors, runs, halt_reason, tripped_tool, tripped_code, tripped_file,
                    tripped_streak
             FROM breaker_session WHERE session_id = ?1",
        )
        .map_err(StoreError::sql("preparing the breaker query"))?
        .query_row([session_id], |r| {
            let tripped = match (
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<i64>>(6)?,
            ) {
                (Some(tool), Some(code), Some(file), Some(streak)) => Some(StreakRow {
                    tool,
                    code,
                    file,
                    streak: to_u32(streak),
                }),
                _ => None,
            };
            Ok(BreakerRow {
                total_errors: to_u64(r.get(0)?),
                runs: to_u64(r.get(1)?),
                halt_reason: r.get(2)?,
                tripped,
                streaks: Vec::new(),
            })
        })
        .optional()
        .map_err(StoreError::sql("reading the breaker state"))?;
    let Some(mut row) = head else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT tool, code, file, streak FROM breaker_streak WHERE session_id = ?1
             ORDER BY tool, code, file",
        )
        .map_err(StoreError::sql("preparing the breaker streak query"))?;
    let streaks = stmt
        .query_map([session_id], |r| {
            Ok(StreakRow {
                tool: r.get(0)?,
                code: r.get(1)?,
                file: r.get(2)?,
                streak: to_u32(r.get(3)?),
            })
        })
        .map_err(StoreError::sql("reading breaker streaks"))?;
    for streak in streaks {
        row.streaks
            .push(streak.map_err(StoreError::sql("reading breaker streaks"))?);
    }
    Ok(Some(row))
}

fn write_row(
    conn: &rusqlite::Connection,
    session_id: &str,
    row: &BreakerRow,
) -> Result<(), StoreError> {
    let tripped = row.tripped.as_ref();
    conn.prepare_cached(
        "INSERT INTO breaker_session (session_id, total_errors, runs, halt_reason, tripped_tool,
             tripped_code, tripped_file, tripped_streak, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
         ON CONFLICT (session_id) DO UPDATE SET total_errors = excluded.total_errors,
             runs = excluded.runs, halt_reason = excluded.halt_reason,
             tripped_tool = excluded.tripped_tool, tripped_code = excluded.tripped_code,
             tripped_file = excluded.tripped_file, tripped_streak = excluded.tripped_streak,
             updated_at = excluded.updated_at",
    )
    .map_err(StoreError::sql("preparing the breaker write"))?
    .execute(rusqlite::params![
        session_id,
        to_i64(row.total_errors),
        to_i64(row.runs),
        row.halt_reason,
        tripped.map(|t| &t.tool),
        tripped.map(|t| &t.code),
        tripped.map(|t| &t.file),
        tripped.map(|t| t.streak),
    ])
    .map_err(StoreError::sql("writing the breaker state"))?;
    // The streak table holds only the latest run's keys: a key missing from a run has lost
    // its streak.
    conn.execute(
        "DELETE FROM breaker_streak WHERE session_id = ?1",
        [session_id],
    )
    .map_err(StoreError::sql("clearing breaker streaks"))?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO breaker_streak (session_id, tool, code, file, streak)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(StoreError::sql("preparing the breaker streak write"))?;
    for s in &row.streaks {
        insert
            .execute(rusqlite::params![
                session_id, s.tool, s.code, s.file, s.streak
            ])
            .map_err(StoreError::sql("writing a breaker streak"))?;
    }
    Ok(())
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn to_u32(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(if v < 0 { 0 } else { u32::MAX })
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn store() -> (tempfile::TempDir, BreakerStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("g.db"), Duration::from_secs(5)).unwrap();
        (dir, BreakerStore::new(db))
    }

    fn streak(code: &str, n: u32) -> StreakRow {
        StreakRow {
            tool: "ruff".into(),
            code: code.into(),
            file: "/p/a.py".into(),
            streak: n,
        }
    }

    #[test]
    fn rows_round_trip_and_streaks_are_replaced() {
        let (_d, s) = store();
        assert_eq!(s.load("s").unwrap(), None);
        let first = BreakerRow {
            total_errors: 2,
            runs: 1,
            halt_reason: None,
            tripped: None,
            streaks: vec![streak("E501", 1), streak("F401", 1)],
        };
        s.update("s", |before| {
            assert_eq!(before, BreakerRow::default());
            (first.clone(), ())
        })
        .unwrap();
        assert_eq!(s.load("s").unwrap().as_ref(), Some(&first));
        let second = BreakerRow {
            total_errors: 3,
            runs: 2,
            halt_reason: Some("why".into()),
            tripped: Some(streak("F401", 2)),
            streaks: vec![streak("F401", 2)],
        };
        s.update("s", |before| {
            assert_eq!(before, first);
            (second.clone(), ())
        })
        .unwrap();
        assert_eq!(s.load("s").unwrap(), Some(second));
        assert_eq!(s.load("other").unwrap(), None);
        assert!(s.reset("s").unwrap());
        assert!(!s.reset("s").unwrap());
        assert_eq!(s.load("s").unwrap(), None);
    }
}
