//! Adherence records: per search, each evaluated file's matched and presented guidelines, and
//! each `checkEdit` refusal, in the order the sidecar saw them; read back session by session.
//! Reads and writes: the `adherence_event` table.

use rusqlite::params;

use super::{Database, Epoch, StoreError};

/// One file of one search, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileRecord {
    pub path: String,
    /// Guideline ids matching the file in this search.
    pub matched: Vec<String>,
    /// Guideline ids this search presented for the first time in the session (or would have,
    /// in a hold-out session) that match this file.
    pub presented: Vec<String>,
    /// Guideline ids whose match a `guidebook:allow` comment let through.
    pub allowed: Vec<String>,
    /// The caller said the edit wrote the whole file (a new file).
    pub whole: bool,
}

/// One recorded event of a session, in the order the sidecar saw them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdherenceEvent {
    /// One search: every file it evaluated.
    Search {
        at: Epoch,
        holdout: bool,
        files: Vec<FileRecord>,
    },
    /// `checkEdit` refused an edit of `path` for `block` guideline `guideline`.
    Block {
        at: Epoch,
        path: String,
        guideline: String,
    },
}

/// Guideline ids by index: a search records indices into the snapshot it matched against, and
/// the ids are looked up off the hook's path, when the row is written.
pub trait GuidelineIds: Send + Sync {
    fn id(&self, index: usize) -> &str;
}

/// One searched file as the hook hands it over: snapshot indices, not ids.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexedFile {
    pub path: String,
    pub matched: Vec<u32>,
    pub presented: Vec<u32>,
    pub allowed: Vec<u32>,
    pub whole: bool,
}

/// A search as the hook hands it over: its files and the snapshot their indices point into.
#[derive(Clone)]
pub struct IndexedSearch {
    pub at: Epoch,
    pub holdout: bool,
    pub ids: std::sync::Arc<dyn GuidelineIds>,
    pub files: Vec<IndexedFile>,
}

impl IndexedSearch {
    fn ids_of<'a>(&'a self, indices: &[u32]) -> Vec<&'a str> {
        indices.iter().map(|&i| self.ids.id(i as usize)).collect()
    }

    /// The search with its ids looked up.
    pub fn resolve(&self) -> AdherenceEvent {
        let owned = |v: Vec<&str>| v.into_iter().map(str::to_owned).collect();
        AdherenceEvent::Search {
            at: self.at,
            holdout: self.holdout,
            files: self
                .files
                .iter()
                .map(|f| FileRecord {
                    path: f.path.clone(),
                    matched: owned(self.ids_of(&f.matched)),
                    presented: owned(self.ids_of(&f.presented)),
                    allowed: owned(self.ids_of(&f.allowed)),
                    whole: f.whole,
                })
                .collect(),
        }
    }
}

impl std::fmt::Debug for IndexedSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexedSearch")
            .field("at", &self.at)
            .field("holdout", &self.holdout)
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl PartialEq for IndexedSearch {
    fn eq(&self, other: &Self) -> bool {
        self.resolve() == other.resolve()
    }
}

/// Writes a search handed over by the hook: the ids looked up here, off the hook's path.
pub(super) fn write_indexed(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    search: &IndexedSearch,
) -> rusqlite::Result<()> {
    type Row<'a> = (&'a str, bool, Vec<&'a str>, Vec<&'a str>, Vec<&'a str>);
    let stored: Vec<Row<'_>> = search
        .files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.whole,
                search.ids_of(&f.matched),
                search.ids_of(&f.presented),
                search.ids_of(&f.allowed),
            )
        })
        .collect();
    insert(tx, session_id, (search.at, SEARCH, search.holdout), &stored)
}

const SEARCH: i64 = 0;
const BLOCK: i64 = 1;

/// A searched file as stored: (path, whole, matched, presented, allowed).
type StoredFile<'a> = (&'a str, bool, &'a [String], &'a [String], &'a [String]);
type ReadFile = (String, bool, Vec<String>, Vec<String>, Vec<String>);

/// Writes one session's event inside the caller's transaction: one row per event (a search's
/// files as one JSON array), so that a search costs the table and its index one entry each.
pub(super) fn write(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    event: &AdherenceEvent,
) -> rusqlite::Result<()> {
    match event {
        AdherenceEvent::Search { at, holdout, files } => {
            let stored: Vec<StoredFile<'_>> = files
                .iter()
                .map(|f| {
                    (
                        f.path.as_str(),
                        f.whole,
                        f.matched.as_slice(),
                        f.presented.as_slice(),
                        f.allowed.as_slice(),
                    )
                })
                .collect();
            insert(tx, session_id, (*at, SEARCH, *holdout), &stored)
        }
        AdherenceEvent::Block {
            at,
            path,
            guideline,
        } => insert(tx, session_id, (*at, BLOCK, false), &(path, guideline)),
    }
}

/// One event's row: `(at, kind, holdout)` and its data as JSON.
fn insert(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    (at, kind, holdout): (Epoch, i64, bool),
    data: &impl serde::Serialize,
) -> rusqlite::Result<()> {
    let data = serde_json::to_string(data)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.prepare_cached(
        "INSERT INTO adherence_event (at, session_id, kind, holdout, data)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![at, session_id, kind, holdout, data])?;
    Ok(())
}

/// Reads the events recorded at or after `since`, session by session (each session's events
/// in the order recorded), handing each session to `each`. A row that does not parse is
/// skipped.
pub fn each_session(
    db: &Database,
    since: Epoch,
    mut each: impl FnMut(&str, &[AdherenceEvent]),
) -> Result<(), StoreError> {
    let conn = db.conn(None)?;
    let doing = "reading adherence records";
    let mut s = conn
        .prepare(
            "SELECT session_id, kind, at, holdout, data FROM adherence_event
             WHERE at >= ?1 ORDER BY session_id, id",
        )
        .map_err(StoreError::sql(doing))?;
    let mut rows = s.query([since]).map_err(StoreError::sql(doing))?;
    let mut session = String::new();
    let mut events: Vec<AdherenceEvent> = Vec::new();
    while let Some(r) = rows.next().map_err(StoreError::sql(doing))? {
        let read = || -> rusqlite::Result<_> {
            Ok((
                r.get_ref(0)?.as_str()?.to_owned(),
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, bool>(3)?,
                r.get_ref(4)?.as_bytes()?.to_vec(),
            ))
        };
        let (sid, kind, at, holdout, data) = read().map_err(StoreError::sql(doing))?;
        if sid != session {
            if !events.is_empty() {
                each(&session, &events);
                events.clear();
            }
            session = sid;
        }
        events.extend(event_of(kind, at, holdout, &data));
    }
    if !events.is_empty() {
        each(&session, &events);
    }
    Ok(())
}

/// One row's event; `None` for a row whose data does not parse (skipped by every reader).
fn event_of(kind: i64, at: Epoch, holdout: bool, data: &[u8]) -> Option<AdherenceEvent> {
    if kind == BLOCK {
        serde_json::from_slice::<(String, String)>(data)
            .ok()
            .map(|(path, guideline)| AdherenceEvent::Block {
                at,
                path,
                guideline,
            })
    } else {
        serde_json::from_slice::<Vec<ReadFile>>(data)
            .ok()
            .map(|files| AdherenceEvent::Search {
                at,
                holdout,
                files: files
                    .into_iter()
                    .map(|(path, whole, matched, presented, allowed)| FileRecord {
                        path,
                        matched,
                        presented,
                        allowed,
                        whole,
                    })
                    .collect(),
            })
    }
}

/// One session's events with their row ids, in the order recorded (the team push's settling
/// reads a session whole, and counts only what came after the row it settled last).
pub(super) fn session_events(
    conn: &rusqlite::Connection,
    session_id: &str,
) -> Result<Vec<(i64, AdherenceEvent)>, StoreError> {
    let doing = "reading a session's adherence records";
    let mut s = conn
        .prepare_cached(
            "SELECT id, kind, at, holdout, data FROM adherence_event
             WHERE session_id = ?1 ORDER BY id",
        )
        .map_err(StoreError::sql(doing))?;
    let rows = s
        .query_map([session_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, bool>(3)?,
                r.get_ref(4)?.as_bytes()?.to_vec(),
            ))
        })
        .map_err(StoreError::sql(doing))?;
    let mut out = Vec::new();
    for row in rows {
        let (id, kind, at, holdout, data) = row.map_err(StoreError::sql(doing))?;
        out.extend(event_of(kind, at, holdout, &data).map(|e| (id, e)));
    }
    Ok(out)
}

/// The schema (one migration): one row per search or refusal; `data` is the search's files,
/// `[[path, whole, [matched], [presented], [allowed]], …]`, or the refusal's `[path, id]`.
pub(super) const MIGRATION: &str = "
    CREATE TABLE IF NOT EXISTS adherence_event (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        kind INTEGER NOT NULL,
        holdout INTEGER NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS adherence_event_session ON adherence_event (session_id, id);";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MetricsStore, Observed};
    use std::time::Duration;

    fn file(path: &str, matched: &[&str]) -> FileRecord {
        FileRecord {
            path: path.into(),
            matched: matched.iter().map(|s| s.to_string()).collect(),
            presented: vec![],
            allowed: vec![],
            whole: true,
        }
    }

    #[test]
    fn events_come_back_per_session_in_order_with_each_search_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db"), Duration::from_secs(5)).unwrap();
        let store = MetricsStore::new(db);
        let s1a = AdherenceEvent::Search {
            at: 100,
            holdout: false,
            files: vec![file("/a", &["g", "h"]), file("/b", &[])],
        };
        let s1b = AdherenceEvent::Block {
            at: 101,
            path: "/a".into(),
            guideline: "g".into(),
        };
        // Two searches of one file in a row stay two searches.
        let s1c = AdherenceEvent::Search {
            at: 102,
            holdout: false,
            files: vec![file("/a", &[])],
        };
        let s1d = AdherenceEvent::Search {
            at: 102,
            holdout: false,
            files: vec![file("/a", &["g"])],
        };
        let s2 = AdherenceEvent::Search {
            at: 50,
            holdout: true,
            files: vec![file("/c", &["x"])],
        };
        let batch: Vec<Observed> = [
            ("s1", &s1a),
            ("s2", &s2),
            ("s1", &s1b),
            ("s1", &s1c),
            ("s1", &s1d),
        ]
        .into_iter()
        .map(|(s, e)| Observed::Adherence {
            session_id: s.into(),
            event: e.clone(),
        })
        .collect();
        store.write_observed(&batch).unwrap();
        let mut got = Vec::new();
        store
            .adherence_sessions(0, |s, events| got.push((s.to_string(), events.to_vec())))
            .unwrap();
        assert_eq!(
            got,
            [
                ("s1".to_string(), vec![s1a, s1b, s1c.clone(), s1d.clone()]),
                ("s2".to_string(), vec![s2])
            ]
        );
        let mut since = Vec::new();
        store
            .adherence_sessions(102, |s, events| {
                since.push((s.to_string(), events.to_vec()))
            })
            .unwrap();
        assert_eq!(since, [("s1".to_string(), vec![s1c, s1d])]);
    }
}
