//! The Unix socket's table of open connections: a cap on how many are open at once, the oldest
//! idle one closed to make room for a new one, and any connection idle past a timeout closed.
//!
//! A client of our own user can open connections as fast as it likes, and an idle keep-alive
//! connection costs a descriptor and a task for as long as it stays open. Without a cap, a few
//! hundred of them left the daemon unable to accept the hook's next call. With one, a new
//! connection (the hook's, which sends its request at once) pushes out the connection that has
//! waited longest without a request, so a legitimate call stays fast however many idle ones a
//! misbehaving client holds; only when every open connection is busy with a request is the new
//! one refused.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a connection that was told to close (pushed out, or idle too long) may take to do
/// so before it is dropped, unless it is answering a request: hyper closes an idle connection
/// at once, but one that is half-way through sending a request head would otherwise be waited on.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The open connections, shared by the accept loop and every connection's task.
#[derive(Debug)]
pub struct Connections {
    cap: usize,
    idle_timeout: Duration,
    /// Idle times are kept as milliseconds since this instant, so that they fit an atomic.
    epoch: Instant,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    open: HashMap<u64, Arc<State>>,
}

/// One connection's state, shared by the table and the connection's own task.
#[derive(Debug)]
struct State {
    /// Requests being answered on it now.
    in_flight: AtomicUsize,
    /// When it last became idle (accepted, or its last answer done), in ms since the epoch.
    idle_since: AtomicU64,
    /// Set once it has been told to close.
    closed: AtomicBool,
    /// Wakes whoever waits on the connection (its shutdown signal and its watchdog, see
    /// `Slot::closing`) when it is told to close or its last request is done.
    wake: Notify,
}

impl Connections {
    /// A table of at most `cap` connections (at least one), each closed after `idle_timeout`
    /// without a request.
    pub fn new(cap: usize, idle_timeout: Duration) -> Arc<Connections> {
        Arc::new(Connections {
            cap: cap.max(1),
            idle_timeout,
            epoch: Instant::now(),
            table: Mutex::new(Table::default()),
        })
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many connections are open now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().open.len()
    }

    /// Takes a place for a new connection. At the cap, the connection that has been idle the
    /// longest is told to close to make room; when every one is answering a request, `None`:
    /// the new connection is to be refused.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut table = self.table();
        if table.open.len() >= self.cap {
            let oldest_idle = table
                .open
                .iter()
                .filter(|(_, s)| s.in_flight.load(Ordering::Acquire) == 0)
                .min_by_key(|(id, s)| (s.idle_since.load(Ordering::Acquire), **id))
                .map(|(id, _)| *id)?;
            if let Some(state) = table.open.remove(&oldest_idle) {
                state.close();
            }
        }
        let id = table.next_id;
        table.next_id += 1;
        let state = Arc::new(State {
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.now_ms()),
            closed: AtomicBool::new(false),
            wake: Notify::new(),
        });
        table.open.insert(id, state.clone());
        Some(Slot {
            table: self.clone(),
            id,
            state,
        })
    }
}

impl State {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }
}

/// A connection's place in the table, given up when dropped.
#[derive(Debug)]
pub struct Slot {
    table: Arc<Connections>,
    id: u64,
    state: Arc<State>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.table().open.remove(&self.id);
    }
}

impl Slot {
    /// Marks a request as being answered on this connection until the guard is dropped: a
    /// connection with a request in flight is never idle, so never pushed out or timed out.
    fn busy(self: &Arc<Self>) -> Busy {
        self.state.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy { slot: self.clone() }
    }

    /// Resolves once this connection should close: it was pushed out to make room for a new
    /// one, or it has had no request for the idle timeout.
    pub async fn closing(&self) {
        loop {
            // Registered before the state is looked at, so that a wake-up in between is not
            // lost: `notify_waiters` wakes every registered waiter (two wait on each
            // connection) but keeps nothing for one that registers later.
            let woken = self.state.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.state.closed.load(Ordering::Acquire) {
                return;
            }
            if self.state.in_flight.load(Ordering::Acquire) > 0 {
                woken.await;
                continue;
            }
            let idle_since = self.state.idle_since.load(Ordering::Acquire);
            let at = self.table.epoch + Duration::from_millis(idle_since) + self.table.idle_timeout;
            if Instant::now() >= at {
                // Out of the table first: the place is free for the next connection.
                self.table.table().open.remove(&self.id);
                self.state.close();
                return;
            }
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(at) => {}
            }
        }
    }

    /// Resolves once this connection was told to close more than [`CLOSE_GRACE`] ago and has
    /// no request in flight: what is left of it is a client that never finished its request.
    pub async fn abandoned(&self) {
        self.closing().await;
        loop {
            tokio::time::sleep(CLOSE_GRACE).await;
            if self.state.in_flight.load(Ordering::Acquire) == 0 {
                return;
            }
        }
    }
}

/// A request in flight on a connection; dropping it makes the connection idle from now, once
/// it was the last.
struct Busy {
    slot: Arc<Slot>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let state = &self.slot.state;
        state
            .idle_since
            .store(self.slot.table.now_ms(), Ordering::Release);
        if state.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            state.wake.notify_waiters();
        }
    }
}

/// The tower service that marks its connection busy while a request is answered.
#[derive(Clone)]
pub struct Tracked<S> {
    pub inner: S,
    pub slot: Arc<Slot>,
}

impl<S, R> tower::Service<R> for Tracked<S>
where
    S: tower::Service<R>,
    S::Future: Send + 'static,
    S::Response: 'static,
    S::Error: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let busy = self.slot.busy();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let answer = answer.await;
            drop(busy);
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(slot: &Slot) -> bool {
        slot.state.closed.load(Ordering::Acquire)
    }

    /// Long enough for the idle clock (milliseconds) to tell two moments apart.
    async fn tick() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let table = Connections::new(3, Duration::from_secs(3600));
        let a = Arc::new(table.admit().unwrap());
        tick().await;
        let b = Arc::new(table.admit().unwrap());
        tick().await;
        let c = Arc::new(table.admit().unwrap());
        tick().await;
        // The oldest is answering a request: `b`, idle the longest, is pushed out.
        let a_busy = a.busy();
        let d = Arc::new(table.admit().unwrap());
        assert!(closed(&b) && !closed(&a) && !closed(&c));
        assert_eq!(table.len(), 3);
        // Once its answer is done, `a` is idle from then on: `c` has waited longer.
        tick().await;
        drop(a_busy);
        let e = Arc::new(table.admit().unwrap());
        assert!(closed(&c) && !closed(&a) && !closed(&d));
        // Every open connection busy: a new one is refused, and nobody is pushed out.
        let _busy = [a.busy(), d.busy(), e.busy()];
        assert!(table.admit().is_none());
        assert!(!closed(&a) && !closed(&d) && !closed(&e));
        assert_eq!(table.len(), 3);
        // A connection that ends gives its place back.
        drop(_busy);
        drop(e);
        assert_eq!(table.len(), 2);
    }

    #[tokio::test]
    async fn an_idle_connection_times_out_and_a_busy_one_does_not() {
        let table = Connections::new(8, Duration::from_millis(20));
        let slot = Arc::new(table.admit().unwrap());
        let busy = slot.busy();
        let closing = tokio::spawn({
            let slot = slot.clone();
            async move { slot.closing().await }
        });
        // Many idle timeouts, but a request is in flight.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!closing.is_finished(), "a request in flight keeps it open");
        drop(busy);
        tokio::time::timeout(Duration::from_secs(10), closing)
            .await
            .expect("closed once idle for the timeout")
            .unwrap();
        assert!(closed(&slot));
        assert_eq!(table.len(), 0, "its place is free");

        // Idle for less than the timeout: still open.
        let table = Connections::new(8, Duration::from_secs(3600));
        let slot = Arc::new(table.admit().unwrap());
        drop(slot.busy());
        let waiting = tokio::time::timeout(Duration::from_millis(50), slot.closing()).await;
        assert!(waiting.is_err() && !closed(&slot));
    }
}
