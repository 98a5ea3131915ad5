//! Writes what the sidecar observes (prompt builds, edit hooks, breaker verdicts) to SQLite on
//! its own thread, in batches, so that a hook never waits for a metrics commit. Everything sent
//! before the recorder is dropped is written before the drop returns.

use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::store::{MetricsStore, Observed};

/// The most observations written in one transaction.
const BATCH: usize = 512;

enum Message {
    Observed(Observed),
    /// Answered once everything sent before it is written.
    Flush(mpsc::Sender<()>),
}

/// The writer, or nothing when recording is off (`recordMetrics: false`).
#[derive(Debug)]
pub struct Recorder {
    tx: Option<Mutex<mpsc::Sender<Message>>>,
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
            tx: Some(Mutex::new(tx)),
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
            let tx = tx.lock().unwrap_or_else(|e| e.into_inner());
            let _ = tx.send(Message::Observed(o));
        }
    }

    /// Waits until everything queued so far is written.
    pub fn flush(&self) {
        if let Some(tx) = &self.tx {
            let (done, wait) = mpsc::channel();
            let sent = tx
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .send(Message::Flush(done));
            if sent.is_ok() {
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
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Message::Observed(o) => batch.push(o),
                Message::Flush(done) => waiting.push(done),
            }
            if batch.len() < BATCH {
                next = rx.try_recv().ok();
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
