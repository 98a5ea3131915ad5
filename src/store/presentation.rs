//! Which guidelines each session has been shown. Reads and writes: the `presentation` table.

use std::collections::HashSet;
use std::time::Instant;

use rusqlite::params_from_iter;

use super::{Database, StoreError};

/// The presentation state: one row per (session, guideline) ever shown.
#[derive(Debug, Clone)]
pub struct PresentationStore {
    db: Database,
}

impl PresentationStore {
    pub fn new(db: Database) -> Self {
        PresentationStore { db }
    }

    /// Records as presented the candidates this session has not seen yet, and returns them in
    /// the order given.
    ///
    /// `select` receives the unseen candidates and returns the ones to present now (all of
    /// them, or a prefix that fits a budget); only those are recorded. The read and the write
    /// happen in one `IMMEDIATE` transaction, which takes SQLite's write lock before reading, so
    /// two concurrent calls for one session can never both present the same guideline. If
    /// `deadline` passes before the commit, the transaction is rolled back and nothing is
    /// recorded.
    pub fn present_new<'a>(
        &self,
        session_id: &str,
        candidates: &[&'a str],
        deadline: Option<Instant>,
        select: impl FnOnce(Vec<&'a str>) -> Vec<&'a str>,
    ) -> Result<Vec<&'a str>, StoreError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let attempt = || -> Result<Vec<&'a str>, StoreError> {
            let mut conn = self.db.conn(deadline)?;
            // An agent edits on in a session that has seen what its files match: when every
            // candidate was presented already, there is nothing to write and the write lock is
            // not taken. Rows only ever go with the session (`reset_session`), so a set that
            // is whole now was whole when the search began.
            if presented_in(&conn, session_id, candidates)?.len() == candidates.len() {
                return Ok(Vec::new());
            }
            let tx = self.db.begin_write(
                &mut conn,
                deadline,
                "starting the presentation transaction",
            )?;
            let seen = presented_in(&tx, session_id, candidates)?;
            let unseen: Vec<&str> = candidates
                .iter()
                .copied()
                .filter(|c| !seen.contains(*c))
                .collect();
            let chosen = select(unseen);
            if !chosen.is_empty() {
                // One statement for all of them, the ids as one JSON array.
                let ids = serde_json::to_string(&chosen).expect("strings serialize");
                tx.prepare_cached(
                    "INSERT INTO presentation (session_id, guideline_id, presented_at)
                     SELECT ?1, value, strftime('%Y-%m-%dT%H:%M:%SZ', 'now') FROM json_each(?2)",
                )
                .and_then(|mut insert| insert.execute([session_id, &ids]))
                .map_err(StoreError::sql("recording presentations"))?;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                // Dropping the transaction rolls it back.
                return Err(StoreError::DeadlineExceeded);
            }
            tx.commit()
                .map_err(StoreError::sql("committing presentations"))?;
            Ok(chosen)
        };
        // A lock held by someone else that outlasts the caller's patience is the caller's
        // deadline passing, not a broken database.
        attempt().map_err(|e| match deadline {
            Some(d) if Instant::now() >= d => StoreError::DeadlineExceeded,
            _ => e,
        })
    }

    /// Which of `ids` this session has already been shown.
    pub fn presented(&self, session_id: &str, ids: &[&str]) -> Result<HashSet<String>, StoreError> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        let conn = self.db.conn(None)?;
        presented_in(&conn, session_id, ids)
    }

    /// Forgets everything this session was shown; returns how many rows went.
    pub fn reset_session(&self, session_id: &str) -> Result<usize, StoreError> {
        let conn = self.db.conn(None)?;
        let _turn = self.db.writer_turn(&conn, None)?;
        conn.execute(
            "DELETE FROM presentation WHERE session_id = ?1",
            [session_id],
        )
        .map_err(StoreError::sql("clearing a session's presentations"))
    }
}

fn presented_in(
    conn: &rusqlite::Connection,
    session_id: &str,
    ids: &[&str],
) -> Result<HashSet<String>, StoreError> {
    let mut seen = HashSet::new();
    // SQLite limits bound parameters (32766 by default); chunking keeps a huge candidate list
    // from failing.
    for chunk in ids.chunks(500) {
        let placeholders = vec!["?"; chunk.len()].join(",");
        let sql = format!(
            "SELECT guideline_id FROM presentation WHERE session_id = ? AND guideline_id IN ({placeholders})"
        );
        let mut stmt = conn
            .prepare_cached(&sql)
            .map_err(StoreError::sql("preparing the presentation query"))?;
        let params = std::iter::once(session_id).chain(chunk.iter().copied());
        let rows = stmt
            .query_map(params_from_iter(params), |r| r.get::<_, String>(0))
            .map_err(StoreError::sql("reading presentations"))?;
        for row in rows {
            seen.insert(row.map_err(StoreError::sql("reading presentations"))?);
        }
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn store() -> (tempfile::TempDir, PresentationStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("sub/g.db"), Duration::from_secs(5)).unwrap();
        (dir, PresentationStore::new(db))
    }

    #[test]
    fn presents_each_guideline_once_per_session() {
        let (_d, s) = store();
        let all = |v: Vec<&'static str>| v;
        assert_eq!(
            s.present_new("s1", &["a", "b"], None, all).unwrap(),
            vec!["a", "b"]
        );
        assert_eq!(
            s.present_new("s1", &["a", "b", "c"], None, all).unwrap(),
            vec!["c"]
        );
        assert_eq!(s.present_new("s2", &["a"], None, all).unwrap(), vec!["a"]);
        assert_eq!(s.reset_session("s1").unwrap(), 3);
        assert_eq!(s.present_new("s1", &["a"], None, all).unwrap(), vec!["a"]);
    }

    #[test]
    fn only_selected_ones_are_recorded() {
        let (_d, s) = store();
        let first = |v: Vec<&'static str>| v.into_iter().take(1).collect();
        assert_eq!(
            s.present_new("s", &["a", "b"], None, first).unwrap(),
            vec!["a"]
        );
        assert_eq!(
            s.present_new("s", &["a", "b"], None, first).unwrap(),
            vec!["b"]
        );
    }

    #[test]
    fn an_expired_deadline_records_nothing() {
        let (_d, s) = store();
        let past = Instant::now() - Duration::from_millis(1);
        let err = s.present_new("s", &["a"], Some(past), |v| v).unwrap_err();
        assert!(matches!(err, StoreError::DeadlineExceeded));
        assert!(s.presented("s", &["a"]).unwrap().is_empty());
    }

    /// A search whose guidelines the session has all seen answers while another connection
    /// holds the write lock; one with something new waits for it (within its deadline).
    ///
    /// The lock is held throughout and the first call has no deadline: had it taken the lock,
    /// it could only fail (after the busy timeout), so its answer proves it did not, however
    /// long a busy machine takes to give it.
    #[test]
    fn nothing_new_to_record_takes_no_write_lock() {
        let (dir, s) = store();
        s.present_new("s", &["a", "b"], None, |v| v).unwrap();
        let other = rusqlite::Connection::open(dir.path().join("sub/g.db")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let soon = || Some(Instant::now() + Duration::from_millis(150));
        assert_eq!(
            s.present_new("s", &["b", "a"], None, |v| v).unwrap(),
            Vec::<&str>::new()
        );
        let err = s.present_new("s", &["a", "c"], soon(), |v| v).unwrap_err();
        assert!(matches!(err, StoreError::DeadlineExceeded), "{err:?}");
        other.execute_batch("ROLLBACK").unwrap();
        assert_eq!(s.present_new("s", &["a", "c"], None, |v| v).unwrap(), ["c"]);
    }

    #[test]
    fn presented_at_is_rfc3339_utc_seconds() {
        let (dir, s) = store();
        s.present_new("s", &["a"], None, |v| v).unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("sub/g.db")).unwrap();
        let at: String = conn
            .query_row("SELECT presented_at FROM presentation", [], |r| r.get(0))
            .unwrap();
        let shape = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").unwrap();
        assert!(shape.is_match(&at), "{at}");
    }

    #[test]
    fn ids_with_quotes_backslashes_and_non_ascii_are_recorded_as_they_are() {
        let (_d, s) = store();
        let odd = ["a\"b", "c\\d", "é€", "line\nbreak", "[1]", ""];
        assert_eq!(s.present_new("s", &odd, None, |v| v).unwrap(), odd);
        let seen = s.presented("s", &odd).unwrap();
        assert_eq!(seen.len(), odd.len(), "{seen:?}");
        assert!(odd.iter().all(|id| seen.contains(*id)), "{seen:?}");
        assert!(s.present_new("s", &odd, None, |v| v).unwrap().is_empty());
    }

    #[test]
    fn a_database_from_before_the_keyed_table_keeps_its_presentations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // The schema as the sidecar left it before the presentation table lost its rowid.
            let conn = rusqlite::Connection::open(&path).unwrap();
            for sql in &super::super::MIGRATIONS[..4] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", 4).unwrap();
            conn.execute_batch(
                "INSERT INTO presentation VALUES ('s1', 'g1', '2026-01-01T00:00:00Z');
                 INSERT INTO presentation VALUES ('s1', 'g2', '2026-01-01T00:00:01Z');
                 INSERT INTO presentation VALUES ('s2', 'g1', '2026-01-02T00:00:00Z');",
            )
            .unwrap();
        }
        let db = Database::open(&path, Duration::from_secs(5)).unwrap();
        let s = PresentationStore::new(db);
        assert_eq!(s.presented("s1", &["g1", "g2", "g3"]).unwrap().len(), 2);
        assert_eq!(
            s.present_new("s2", &["g1", "g2"], None, |v| v).unwrap(),
            ["g2"]
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let (sql, rows, version): (String, i64, i64) = conn
            .query_row(
                "SELECT (SELECT sql FROM sqlite_master WHERE name = 'presentation'),
                        (SELECT count(*) FROM presentation),
                        (SELECT user_version FROM pragma_user_version)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert!(sql.contains("WITHOUT ROWID"), "{sql}");
        assert_eq!(rows, 4);
        assert_eq!(version, super::super::MIGRATIONS.len() as i64);
        let first: String = conn
            .query_row(
                "SELECT presented_at FROM presentation WHERE session_id = 's1' AND guideline_id = 'g1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(first, "2026-01-01T00:00:00Z", "kept as it was");
    }
}
