//! Writes what the sidecar observes (prompt builds, edit hooks, breaker verdicts) to SQLite on
//! its own thread, in batches gathered for up to 100 ms, so that a hook never waits for a
//! metrics commit. Everything sent before the recorder is dropped or flushed is written before
//! the drop or the flush returns.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::store::{MetricsStore, Observed};

/// The most observations written in one transaction.
const BATCH: usize = 512;
/// How long the writer gathers a batch after its first observation: at most ten commits a
/// second however busy the hooks are, each written while no hook waits on it.
const LINGER: Duration = Duration::from_millis(100);

enum Message {
    Observed(Observed),
    /// Answered once everything sent before it is written.
    Flush(mpsc::Sender<()>),
}

/// The writer, or nothing when recording is off (`recordMetrics: false`).
#[derive(Debug)]
pub struct Recorder {
    tx: Option<mpsc::Sender<Message>>,
    thread: Option<JoinHandle<()>>,
}

impl Recorder {
    /// A recorder that writes into `store` from a thread of its own.
    pub fn start(store: MetricsStore) -> Recorder {
        let (tx, rx) = mpsc::channel::<Message>();
        let thread = std::thread::Builder::new()
            .name("metrics-recorder".into())
            .spawn(move || write_loop(store, rx))
            .expect("spawning the metrics recorder thread");
        Recorder {
            tx: Some(tx),
            thread: Some(thread),
        }
    }

    /// A recorder that records nothing.
    pub fn off() -> Recorder {
        Recorder {
            tx: None,
            thread: None,
        }
    }

    pub fn is_on(&self) -> bool {
        self.tx.is_some()
    }

    /// Queues an observation; never blocks on the database.
    pub fn record(&self, o: Observed) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Message::Observed(o));
        }
    }

    /// Waits until everything queued so far is written.
    pub fn flush(&self) {
        if let Some(tx) = &self.tx {
            let (done, wait) = mpsc::channel();
            if tx.send(Message::Flush(done)).is_ok() {
                let _ = wait.recv();
            }
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Closing the channel ends the loop once the queue is written.
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_loop(store: MetricsStore, rx: mpsc::Receiver<Message>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut waiting = Vec::new();
    while let Ok(first) = rx.recv() {
        let until = Instant::now() + LINGER;
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Message::Observed(o) => batch.push(o),
                // Someone waits: write what there is now.
                Message::Flush(done) => waiting.push(done),
            }
            if batch.len() < BATCH && waiting.is_empty() {
                let left = until.saturating_duration_since(Instant::now());
                // A closed channel (the recorder dropped) ends the gathering at once.
                next = rx.recv_timeout(left).ok();
            }
        }
        if let Err(e) = store.write_observed(&batch) {
            tracing::warn!("metrics: {} observations not recorded: {e}", batch.len());
        }
        batch.clear();
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Database;

    fn store(dir: &std::path::Path) -> MetricsStore {
        MetricsStore::new(Database::open(&dir.join("db"), Duration::from_secs(5)).unwrap())
    }

    fn edit(session: &str) -> Observed {
        Observed::Edit {
            at: 100,
            session_id: session.into(),
            files: 1,
        }
    }

    #[test]
    fn a_flush_writes_what_was_queued_and_a_drop_writes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::start(store(dir.path()));
        for i in 0..1500 {
            recorder.record(edit(&format!("s{}", i % 3)));
        }
        recorder.flush();
        let edits = store(dir.path()).window(0, 1000).unwrap().session_edits;
        assert_eq!(edits.iter().sum::<u64>(), 1500, "{edits:?}");
        recorder.record(edit("late"));
        drop(recorder);
        let edits = store(dir.path()).window(0, 1000).unwrap().session_edits;
        assert_eq!(edits.iter().sum::<u64>(), 1501);
    }

    #[test]
    fn an_off_recorder_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::off();
        assert!(!recorder.is_on());
        recorder.record(edit("s"));
        recorder.flush();
        assert!(store(dir.path())
            .window(0, 1000)
            .unwrap()
            .session_edits
            .is_empty());
    }
}
