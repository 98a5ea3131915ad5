//! Writes what the sidecar observes (prompt builds, edit hooks, breaker verdicts) to SQLite on
//! its own thread, in batches gathered for up to 100 ms, so that a hook never waits for a
//! metrics commit. Everything sent before the recorder is dropped or flushed is written before
//! the drop or the flush returns.
//!
//! A hook's observation is a push onto a queue under a mutex: the writer is woken only by the
//! first observation of a batch (or a full batch, a flush, the drop), never once per hook. A
//! wake-up per hook put a third thread on the two cores in every search's path.

use crate::sync::Locked;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::store::{MetricsStore, Observed};

/// A batch this long is written without waiting out the linger.
const BATCH: usize = 512;
/// How long the writer gathers a batch after its first observation: at most ten commits a
/// second however busy the hooks are, each written while no hook waits on it.
const LINGER: Duration = Duration::from_millis(100);

/// What the hooks hand the writer.
#[derive(Default)]
struct Queue {
    observed: Vec<Observed>,
    /// Each answered once everything queued before it is written.
    flushes: Vec<mpsc::Sender<()>>,
    /// Set by the drop: the writer writes what is left and ends.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// How many times the writer returned from a wait: what the hooks cost it in wake-ups.
    woken: std::sync::atomic::AtomicUsize,
}

impl Shared {
    fn woke(&self) {
        self.woken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves a queue that is still whole.
        self.queue.locked()
    }
}

/// The writer, or nothing when recording is off (`recordMetrics: false`).
#[derive(Debug)]
pub struct Recorder {
    shared: Option<Arc<Shared>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder that writes into `store` from a thread of its own.
    pub fn start(store: MetricsStore) -> Recorder {
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("metrics-recorder".into())
                .spawn(move || write_loop(store, &shared))
                .expect("spawning the metrics recorder thread")
        };
        Recorder {
            shared: Some(shared),
            thread: Some(thread),
        }
    }

    /// A recorder that records nothing.
    pub fn off() -> Recorder {
        Recorder {
            shared: None,
            thread: None,
        }
    }

    pub fn is_on(&self) -> bool {
        self.shared.is_some()
    }

    /// Queues an observation; never blocks on the database, and wakes the writer only for the
    /// first observation of a batch or a full one.
    pub fn record(&self, o: Observed) {
        if let Some(shared) = &self.shared {
            let queued = {
                let mut q = shared.lock();
                q.observed.push(o);
                q.observed.len()
            };
            if queued == 1 || queued == BATCH {
                shared.wake.notify_one();
            }
        }
    }

    /// Waits until everything queued so far is written.
    pub fn flush(&self) {
        if let Some(shared) = &self.shared {
            let (done, wait) = mpsc::channel();
            shared.lock().flushes.push(done);
            shared.wake.notify_one();
            // An error means the writer is gone (it panicked): nothing more will be written.
            let _ = wait.recv();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.lock().closed = true;
            shared.wake.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_loop(store: MetricsStore, shared: &Shared) {
    let mut q = shared.lock();
    loop {
        while q.observed.is_empty() && q.flushes.is_empty() && !q.closed {
            q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            shared.woke();
        }
        if q.observed.is_empty() && q.flushes.is_empty() {
            // Closed, and nothing left.
            return;
        }
        // Gather for the linger, unless someone waits or the batch is full already.
        let until = Instant::now() + LINGER;
        while q.observed.len() < BATCH && q.flushes.is_empty() && !q.closed {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            q = shared
                .wake
                .wait_timeout(q, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            shared.woke();
        }
        let batch = std::mem::take(&mut q.observed);
        let waiting = std::mem::take(&mut q.flushes);
        drop(q);
        if !batch.is_empty() {
            if let Err(e) = store.write_observed(&batch) {
                tracing::warn!("metrics: {} observations not recorded: {e}", batch.len());
            }
        }
        for done in waiting {
            let _ = done.send(());
        }
        q = shared.lock();
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
    fn observations_within_a_batch_do_not_wake_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::start(store(dir.path()));
        let shared = recorder.shared.clone().unwrap();
        let woken = || shared.woken.load(std::sync::atomic::Ordering::Relaxed);
        // Each batch wakes the writer once for its first observation and once when the
        // linger ends (or a full batch or a flush cuts it short), whatever its length. A writer
        // woken per observation would count in the hundreds.
        for i in 0..300 {
            recorder.record(edit(&format!("s{i}")));
        }
        recorder.flush();
        assert!(
            woken() <= 6,
            "the writer woke {} times for 300 observations",
            woken()
        );
        let edits = store(dir.path()).window(0, 1000).unwrap().session_edits;
        assert_eq!(edits.iter().sum::<u64>(), 300);
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
