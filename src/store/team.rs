//! The team push's state: which sessions have settled (and up to which adherence row), the
//! cumulative per-guideline counters they added up to, what was last pushed, and this
//! database's random `instance` id. Reads: `adherence_event`. Reads and writes: the `team_*`
//! tables.
//!
//! Counters only rise: a settled session's counts are added once, in the same transaction that
//! marks it settled, so a crash or a second process (`guidebook metrics push` beside the
//! sidecar) never counts a session twice.

use rusqlite::{params, OptionalExtension};

use super::adherence::session_events;
use super::Epoch;
use super::{AdherenceEvent, Database, StoreError};

/// One counter to add to: its metric, and the labels that tell its series apart (`""` where a
/// label does not apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Increment {
    pub metric: &'static str,
    pub guideline: String,
    pub group: &'static str,
    pub outcome: &'static str,
    pub n: u64,
}

/// One series as stored: its key, its value, and the value last accepted by the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesRow {
    pub metric: String,
    pub guideline: String,
    pub group: String,
    pub outcome: String,
    pub value: u64,
    /// `None` until a push that carried this series succeeded.
    pub pushed: Option<u64>,
}

/// A session whose last event is older than the settle time: the row it ends with now and the
/// row its last settling went up to (0 when it never settled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueSession {
    pub session_id: String,
    pub last_id: i64,
    pub settled_id: i64,
}

/// The guideline label every count over the series budget is summed under.
pub const OTHER: &str = "other";

/// The `team_*` tables.
#[derive(Debug, Clone)]
pub struct TeamStore {
    db: Database,
}

impl TeamStore {
    pub fn new(db: Database) -> Self {
        TeamStore { db }
    }

    /// This database's `instance` label: random, made on first use, kept.
    pub fn instance(&self) -> Result<String, StoreError> {
        if let Some(id) = self.meta("instance")? {
            return Ok(id);
        }
        let id = random_id().map_err(|e| StoreError::Open {
            path: "/dev/urandom".into(),
            message: e.to_string(),
        })?;
        let conn = self.db.conn(None)?;
        let _turn = self.db.writer_turn(&conn, None)?;
        // Another process may have made one first: the first one kept wins.
        conn.execute(
            "INSERT INTO team_meta (key, value) VALUES ('instance', ?1) ON CONFLICT DO NOTHING",
            [&id],
        )
        .map_err(StoreError::sql("recording the instance id"))?;
        drop(_turn);
        Ok(self.meta("instance")?.unwrap_or(id))
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let conn = self.db.conn(None)?;
        conn.query_row("SELECT value FROM team_meta WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()
        .map_err(StoreError::sql("reading the team push's state"))
    }

    /// Takes the adherence rows recorded since the last scan into the sessions waiting to
    /// settle (each session's newest row and time).
    pub fn scan(&self) -> Result<(), StoreError> {
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "scanning adherence for the team push")?;
        let scanned: i64 = tx
            .query_row(
                "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM team_meta
                                  WHERE key = 'scanned_id'), 0)",
                [],
                |r| r.get(0),
            )
            .map_err(StoreError::sql("reading the team push's state"))?;
        let newest: Option<i64> = tx
            .query_row(
                "SELECT MAX(id) FROM adherence_event WHERE id > ?1",
                [scanned],
                |r| r.get(0),
            )
            .map_err(StoreError::sql("scanning adherence for the team push"))?;
        let Some(newest) = newest else {
            return Ok(());
        };
        tx.execute(
            "INSERT INTO team_pending (session_id, last_id, last_at)
                 SELECT session_id, MAX(id), MAX(at) FROM adherence_event
                 WHERE id > ?1 AND id <= ?2 GROUP BY session_id
             ON CONFLICT (session_id) DO UPDATE SET
                 last_id = MAX(last_id, excluded.last_id),
                 last_at = MAX(last_at, excluded.last_at)",
            params![scanned, newest],
        )
        .map_err(StoreError::sql("scanning adherence for the team push"))?;
        tx.execute(
            "INSERT INTO team_meta (key, value) VALUES ('scanned_id', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [newest.to_string()],
        )
        .map_err(StoreError::sql("recording the team push's state"))?;
        tx.commit()
            .map_err(StoreError::sql("committing the team push's scan"))
    }

    /// At most `limit` sessions whose last event was before `before`, oldest first.
    pub fn due(&self, before: Epoch, limit: usize) -> Result<Vec<DueSession>, StoreError> {
        let conn = self.db.conn(None)?;
        let doing = "reading the sessions due to settle";
        let mut s = conn
            .prepare_cached(
                "SELECT p.session_id, p.last_id, COALESCE(s.settled_id, 0)
                 FROM team_pending p LEFT JOIN team_settled s USING (session_id)
                 WHERE p.last_at < ?1 ORDER BY p.last_at, p.session_id LIMIT ?2",
            )
            .map_err(StoreError::sql(doing))?;
        let rows = s
            .query_map(params![before, limit as i64], |r| {
                Ok(DueSession {
                    session_id: r.get(0)?,
                    last_id: r.get(1)?,
                    settled_id: r.get(2)?,
                })
            })
            .map_err(StoreError::sql(doing))?;
        rows.collect::<Result<_, _>>()
            .map_err(StoreError::sql(doing))
    }

    /// The session's events up to and including row `through`, with their row ids.
    pub fn session_events(
        &self,
        session_id: &str,
        through: i64,
    ) -> Result<Vec<(i64, AdherenceEvent)>, StoreError> {
        let conn = self.db.conn(None)?;
        let mut events = session_events(&conn, session_id)?;
        events.retain(|(id, _)| *id <= through);
        Ok(events)
    }

    /// Settles `due` through its `last_id` and adds `increments` to the counters, in one
    /// transaction. A series not yet stored is made only while fewer than `max_series - reserve`
    /// exist; past that its count goes to the `other` series of the same metric and labels.
    /// Returns false (and changes nothing) when the session was settled meanwhile (by another
    /// process) or has newer rows than `due` saw being settled already.
    pub fn settle(
        &self,
        due: &DueSession,
        at: Epoch,
        increments: &[Increment],
        max_series: usize,
        reserve: usize,
    ) -> Result<bool, StoreError> {
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "settling a session for the team push")?;
        let doing = "settling a session for the team push";
        let settled: i64 = tx
            .query_row(
                "SELECT COALESCE((SELECT settled_id FROM team_settled WHERE session_id = ?1), 0)",
                [&due.session_id],
                |r| r.get(0),
            )
            .map_err(StoreError::sql(doing))?;
        if settled != due.settled_id {
            return Ok(false);
        }
        let mut series: i64 = tx
            .query_row("SELECT COUNT(*) FROM team_counter", [], |r| r.get(0))
            .map_err(StoreError::sql(doing))?;
        let room = max_series.saturating_sub(reserve) as i64;
        for inc in increments.iter().filter(|i| i.n > 0) {
            let key = (inc.metric, inc.group, inc.outcome);
            let added = tx
                .prepare_cached(
                    "UPDATE team_counter SET value = value + ?5
                     WHERE metric = ?1 AND guideline = ?2 AND grp = ?3 AND outcome = ?4",
                )
                .and_then(|mut s| {
                    s.execute(params![key.0, inc.guideline, key.1, key.2, inc.n as i64])
                })
                .map_err(StoreError::sql(doing))?;
            if added > 0 {
                continue;
            }
            let guideline = if series < room || inc.guideline.is_empty() {
                inc.guideline.as_str()
            } else {
                OTHER
            };
            tx.prepare_cached(
                "INSERT INTO team_counter (metric, guideline, grp, outcome, value)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT DO UPDATE SET value = value + excluded.value",
            )
            .and_then(|mut s| s.execute(params![key.0, guideline, key.1, key.2, inc.n as i64]))
            .map_err(StoreError::sql(doing))?;
            series = tx
                .query_row("SELECT COUNT(*) FROM team_counter", [], |r| r.get(0))
                .map_err(StoreError::sql(doing))?;
        }
        tx.execute(
            "INSERT INTO team_settled (session_id, settled_id, settled_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id) DO UPDATE SET settled_id = excluded.settled_id,
                 settled_at = excluded.settled_at",
            params![due.session_id, due.last_id, at],
        )
        .map_err(StoreError::sql(doing))?;
        // A row recorded after `due` was read keeps the session waiting.
        tx.execute(
            "DELETE FROM team_pending WHERE session_id = ?1 AND last_id <= ?2",
            params![due.session_id, due.last_id],
        )
        .map_err(StoreError::sql(doing))?;
        tx.commit().map_err(StoreError::sql(doing))?;
        Ok(true)
    }

    /// Every stored series, by metric and labels.
    pub fn series(&self) -> Result<Vec<SeriesRow>, StoreError> {
        let conn = self.db.conn(None)?;
        let doing = "reading the team counters";
        let mut s = conn
            .prepare_cached(
                "SELECT metric, guideline, grp, outcome, value, pushed FROM team_counter
                 ORDER BY metric, guideline, grp, outcome",
            )
            .map_err(StoreError::sql(doing))?;
        let rows = s
            .query_map([], |r| {
                Ok(SeriesRow {
                    metric: r.get(0)?,
                    guideline: r.get(1)?,
                    group: r.get(2)?,
                    outcome: r.get(3)?,
                    value: r.get::<_, i64>(4)? as u64,
                    pushed: r.get::<_, Option<i64>>(5)?.map(|v| v as u64),
                })
            })
            .map_err(StoreError::sql(doing))?;
        rows.collect::<Result<_, _>>()
            .map_err(StoreError::sql(doing))
    }

    /// Records that the server accepted `rows` at `at_ms` (milliseconds since the epoch).
    pub fn pushed(&self, rows: &[SeriesRow], at_ms: i64) -> Result<(), StoreError> {
        let mut conn = self.db.conn(None)?;
        let tx = self
            .db
            .begin_write(&mut conn, None, "recording a team push")?;
        let doing = "recording a team push";
        for r in rows {
            tx.prepare_cached(
                "UPDATE team_counter SET pushed = ?5
                 WHERE metric = ?1 AND guideline = ?2 AND grp = ?3 AND outcome = ?4",
            )
            .and_then(|mut s| {
                s.execute(params![
                    r.metric,
                    r.guideline,
                    r.group,
                    r.outcome,
                    r.value as i64
                ])
            })
            .map_err(StoreError::sql(doing))?;
        }
        tx.execute(
            "INSERT INTO team_meta (key, value) VALUES ('pushed_at_ms', ?1)
             ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), excluded.value)",
            [at_ms],
        )
        .map_err(StoreError::sql(doing))?;
        tx.commit().map_err(StoreError::sql(doing))
    }

    /// When a push was last accepted (milliseconds since the epoch), by any process.
    pub fn last_pushed_ms(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .meta("pushed_at_ms")?
            .and_then(|v| v.parse::<i64>().ok()))
    }

    /// Sessions settled so far, and sessions waiting to.
    pub fn sessions(&self) -> Result<(u64, u64), StoreError> {
        let conn = self.db.conn(None)?;
        conn.query_row(
            "SELECT (SELECT COUNT(*) FROM team_settled), (SELECT COUNT(*) FROM team_pending)",
            [],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
        )
        .map_err(StoreError::sql("counting the team push's sessions"))
    }
}

/// 16 hex digits from the kernel's random source.
fn random_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The schema (one migration).
pub(super) const MIGRATION: &str = "
    CREATE TABLE IF NOT EXISTS team_meta (
        key TEXT NOT NULL PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS team_pending (
        session_id TEXT NOT NULL PRIMARY KEY,
        last_id INTEGER NOT NULL,
        last_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS team_pending_at ON team_pending (last_at);
    CREATE TABLE IF NOT EXISTS team_settled (
        session_id TEXT NOT NULL PRIMARY KEY,
        settled_id INTEGER NOT NULL,
        settled_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS team_counter (
        metric TEXT NOT NULL,
        guideline TEXT NOT NULL,
        grp TEXT NOT NULL,
        outcome TEXT NOT NULL,
        value INTEGER NOT NULL,
        pushed INTEGER,
        PRIMARY KEY (metric, guideline, grp, outcome)
    ) WITHOUT ROWID;";

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn store() -> (tempfile::TempDir, TeamStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db"), Duration::from_secs(5)).unwrap();
        (dir, TeamStore::new(db))
    }

    fn inc(metric: &'static str, guideline: &str, n: u64) -> Increment {
        Increment {
            metric,
            guideline: guideline.into(),
            group: "",
            outcome: "",
            n,
        }
    }

    fn due(session: &str, last_id: i64, settled_id: i64) -> DueSession {
        DueSession {
            session_id: session.into(),
            last_id,
            settled_id,
        }
    }

    #[test]
    fn the_instance_id_is_random_and_kept() {
        let (dir, a) = store();
        let id = a.instance().unwrap();
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a.instance().unwrap(), id);
        let again =
            TeamStore::new(Database::open(&dir.path().join("db"), Duration::from_secs(5)).unwrap());
        assert_eq!(again.instance().unwrap(), id);
        let (_other_dir, b) = store();
        assert_ne!(b.instance().unwrap(), id);
    }

    #[test]
    fn a_session_settles_once_and_counters_only_rise() {
        let (_dir, s) = store();
        assert!(s
            .settle(&due("s1", 5, 0), 10, &[inc("fires", "g", 2)], 100, 17)
            .unwrap());
        // The same session read as never settled (a second process's stale view) adds nothing.
        assert!(!s
            .settle(&due("s1", 5, 0), 11, &[inc("fires", "g", 2)], 100, 17)
            .unwrap());
        // Its continuation does.
        assert!(s
            .settle(&due("s1", 9, 5), 12, &[inc("fires", "g", 1)], 100, 17)
            .unwrap());
        let rows = s.series().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].value, rows[0].pushed), (3, None));
        s.pushed(&rows, 1000).unwrap();
        assert_eq!(s.series().unwrap()[0].pushed, Some(3));
        assert_eq!(s.last_pushed_ms().unwrap(), Some(1000));
        assert_eq!(s.sessions().unwrap(), (1, 0));
    }

    #[test]
    fn series_past_the_budget_are_summed_as_other_and_known_ones_keep_counting() {
        let (_dir, s) = store();
        // Room for 2 series beside the reserve of 1.
        let incs = [
            inc("fires", "a", 1),
            inc("fires", "b", 1),
            inc("fires", "c", 4),
            inc("fires", "d", 5),
        ];
        s.settle(&due("s1", 1, 0), 1, &incs, 3, 1).unwrap();
        s.settle(&due("s2", 2, 0), 2, &[inc("fires", "a", 10)], 3, 1)
            .unwrap();
        let got: Vec<(String, u64)> = s
            .series()
            .unwrap()
            .into_iter()
            .map(|r| (r.guideline, r.value))
            .collect();
        assert_eq!(
            got,
            [("a".into(), 11), ("b".into(), 1), (OTHER.into(), 9)],
            "c and d summed as other, a's later counts its own"
        );
    }
}
