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
//!
//! Busy means *handled*: the request's body has all arrived and its method runs. A request whose
//! head has arrived but whose body has not is only waiting on its client, which could hold it
//! there by declaring a length and never sending it; such a connection is closed to make room
//! like an idle one (before any idle one), so that holding every connection in that state does
//! not keep a new call out. Our clients send a request's body in the same write as its head.

use crate::sync::Locked;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
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
    /// Requests on it from the moment their head arrived until they are answered.
    in_flight: AtomicUsize,
    /// Those of them being handled: their body has all arrived (see [`BodyArrived`]).
    handling: AtomicUsize,
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
        self.table.locked()
    }

    /// How many connections are open now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().open.len()
    }

    /// Takes a place for a new connection. At the cap, one connection that is handling no
    /// request is told to close to make room: one still waiting for a request's body if there
    /// is any, else the one idle the longest (the oldest first among the waiting ones too).
    /// When every one is handling a request, `None`: the new connection is to be refused.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut table = self.table();
        if table.open.len() >= self.cap {
            let oldest_idle = table
                .open
                .iter()
                .filter(|(_, s)| s.handling.load(Ordering::Acquire) == 0)
                .min_by_key(|(id, s)| {
                    let idle = s.in_flight.load(Ordering::Acquire) == 0;
                    (idle, s.idle_since.load(Ordering::Acquire), **id)
                })
                .map(|(id, _)| *id)?;
            if let Some(state) = table.open.remove(&oldest_idle) {
                state.close();
            }
        }
        let id = table.next_id;
        table.next_id += 1;
        let state = Arc::new(State {
            in_flight: AtomicUsize::new(0),
            handling: AtomicUsize::new(0),
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
    /// Marks a request as in flight on this connection until the guard is dropped: a
    /// connection with a request in flight is never idle, so never timed out (its body has a
    /// deadline of its own). It is pushed out to make room until [`BodyArrived::now`] is called.
    fn busy(self: &Arc<Self>) -> Busy {
        self.state.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy {
            slot: self.clone(),
            arrival: BodyArrived(Arc::new(Arrival {
                state: self.state.clone(),
                phase: AtomicU8::new(READING),
            })),
        }
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

    /// Resolves once this connection was told to close more than [`CLOSE_GRACE`] ago and is
    /// handling no request: what is left of it is a client that never finished its request
    /// (its head, or its body).
    pub async fn abandoned(&self) {
        self.closing().await;
        loop {
            tokio::time::sleep(CLOSE_GRACE).await;
            if self.state.handling.load(Ordering::Acquire) == 0 {
                return;
            }
        }
    }
}

/// A request whose body has not all arrived yet.
const READING: u8 = 0;
/// A request being handled.
const HANDLING: u8 = 1;
/// A request answered (or given up on).
const DONE: u8 = 2;

#[derive(Debug)]
struct Arrival {
    state: Arc<State>,
    phase: AtomicU8,
}

/// Put in a request's extensions by [`Tracked`], for the service inside to say when the
/// request's body has all arrived: from then on the request is being handled, and its
/// connection is no longer pushed out to make room.
#[derive(Debug, Clone)]
pub struct BodyArrived(Arc<Arrival>);

impl BodyArrived {
    /// The body has all arrived (or is not going to be read): the request is being handled.
    /// Calls after the first, or once the request was answered, do nothing.
    pub fn now(&self) {
        let handling = &self.0.state.handling;
        // Counted before the phase changes, so that the count never goes below zero even were
        // the request answered at the same moment on another thread.
        handling.fetch_add(1, Ordering::AcqRel);
        let moved =
            self.0
                .phase
                .compare_exchange(READING, HANDLING, Ordering::AcqRel, Ordering::Acquire);
        if moved.is_err() {
            handling.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A request in flight on a connection; dropping it makes the connection idle from now, once
/// it was the last.
struct Busy {
    slot: Arc<Slot>,
    arrival: BodyArrived,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let state = &self.slot.state;
        if self.arrival.0.phase.swap(DONE, Ordering::AcqRel) == HANDLING {
            state.handling.fetch_sub(1, Ordering::AcqRel);
        }
        state
            .idle_since
            .store(self.slot.table.now_ms(), Ordering::Release);
        if state.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            state.wake.notify_waiters();
        }
    }
}

/// The tower service that marks a request in flight on its connection until it is answered.
/// The service inside says when its body has arrived, through the [`BodyArrived`] in its
/// extensions; until then the request does not keep its connection from being pushed out.
#[derive(Clone)]
pub struct Tracked<S> {
    pub inner: S,
    pub slot: Arc<Slot>,
}

impl<S, B> tower::Service<http::Request<B>> for Tracked<S>
where
    S: tower::Service<http::Request<B>>,
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

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let busy = self.slot.busy();
        request.extensions_mut().insert(busy.arrival.clone());
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

    /// A request on `slot` whose body has arrived: being handled.
    fn handled(slot: &Arc<Slot>) -> Busy {
        let busy = slot.busy();
        busy.arrival.now();
        busy
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
        let a_busy = handled(&a);
        let d = Arc::new(table.admit().unwrap());
        assert!(closed(&b) && !closed(&a) && !closed(&c));
        assert_eq!(table.len(), 3);
        // Once its answer is done, `a` is idle from then on: `c` has waited longer.
        tick().await;
        drop(a_busy);
        let e = Arc::new(table.admit().unwrap());
        assert!(closed(&c) && !closed(&a) && !closed(&d));
        // Every open connection busy: a new one is refused, and nobody is pushed out.
        let _busy = [handled(&a), handled(&d), handled(&e)];
        assert!(table.admit().is_none());
        assert!(!closed(&a) && !closed(&d) && !closed(&e));
        assert_eq!(table.len(), 3);
        // A connection that ends gives its place back.
        drop(_busy);
        drop(e);
        assert_eq!(table.len(), 2);
    }

    #[tokio::test]
    async fn a_connection_waiting_for_a_body_makes_room_and_one_handling_a_request_does_not() {
        let table = Connections::new(3, Duration::from_secs(3600));
        let a = Arc::new(table.admit().unwrap());
        tick().await;
        let b = Arc::new(table.admit().unwrap());
        tick().await;
        let c = Arc::new(table.admit().unwrap());
        // `c` and `b` got a request head and wait for its body; `a`, idle the longest, is kept
        // while a connection waiting for a body is there to push out, the oldest first.
        let b_waiting = b.busy();
        let c_waiting = c.busy();
        let d = Arc::new(table.admit().unwrap());
        assert!(closed(&b) && !closed(&a) && !closed(&c));
        // Its body arrives: `c` is handling its request and stays; `a` makes room.
        c_waiting.arrival.now();
        let e = Arc::new(table.admit().unwrap());
        assert!(closed(&a) && !closed(&c) && !closed(&d));
        // Every one waiting for a body, none handling: none keeps a new connection out.
        drop(c_waiting);
        let _waiting = [c.busy(), d.busy(), e.busy()];
        let f = Arc::new(table.admit().unwrap());
        assert!(!closed(&f) && [&c, &d, &e].iter().filter(|s| closed(s)).count() == 1);
        assert_eq!(table.len(), 3);

        // A connection pushed out while waiting for a body is dropped after the grace; one
        // pushed out as its body arrived is not while it handles the request.
        let pushed_out = |slot: Arc<Slot>| tokio::spawn(async move { slot.abandoned().await });
        let b_abandoned = pushed_out(b.clone());
        tokio::time::timeout(Duration::from_secs(10), b_abandoned)
            .await
            .expect("dropped once the grace is over")
            .unwrap();
        drop(b_waiting);
        let table = Connections::new(1, Duration::from_secs(3600));
        let g = Arc::new(table.admit().unwrap());
        let g_waiting = g.busy();
        let _h = table.admit().unwrap();
        assert!(closed(&g));
        g_waiting.arrival.now();
        let g_abandoned = pushed_out(g.clone());
        tokio::time::sleep(CLOSE_GRACE * 2).await;
        assert!(!g_abandoned.is_finished(), "its request is answered first");
        drop(g_waiting);
        tokio::time::timeout(Duration::from_secs(10), g_abandoned)
            .await
            .expect("dropped once answered")
            .unwrap();
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
