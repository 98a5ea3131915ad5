//! Work split over the machine's cores: [`map`] with scoped threads, results in the order of
//! the input, for one-off work (a guidebook walk); [`Helpers`], long-lived threads kept off
//! their submitter's core, for work that recurs on every request (a search's files);
//! [`InFlight`], the count of calls being served, which says whether a core is likely to be
//! wanted by another call and whether a call has the daemon to itself; [`Gate`], a counting
//! gate waited on within a deadline (evaluations at once, this process's writer);
//! [`wait_while`], a caller's bounded wait for such work (or a permit, or a first load).

use crate::sync::Locked;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Waits on `cvar` while `pending` holds for the value `guard` guards, until `deadline`: the
/// guard once `pending` no longer holds, or `None` if the deadline passes first. A poisoned lock
/// is taken as it is: its value is what its last holder left.
pub fn wait_while<'a, T>(
    cvar: &Condvar,
    mut guard: MutexGuard<'a, T>,
    deadline: Option<Instant>,
    mut pending: impl FnMut(&T) -> bool,
) -> Option<MutexGuard<'a, T>> {
    while pending(&guard) {
        guard = match deadline {
            None => cvar.wait(guard).unwrap_or_else(|p| p.into_inner()),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                cvar.wait_timeout(guard, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
    }
    Some(guard)
}

/// How many calls the daemon is serving now (from dispatch to answer, waits included). A call
/// that has the daemon to itself may spread its work over every core; with others in flight,
/// each keeps to one: they will want the other cores soon, and handing work to another thread
/// and back costs wake-ups that eight clients measured at a tenth of the throughput.
#[derive(Debug, Default)]
pub struct InFlight(Arc<AtomicUsize>);

/// One call counted in [`InFlight`] until dropped.
#[derive(Debug)]
pub struct Call {
    count: Arc<AtomicUsize>,
}

impl InFlight {
    pub fn enter(&self) -> Call {
        self.0.fetch_add(1, Ordering::Relaxed);
        Call {
            count: self.0.clone(),
        }
    }

    /// Calls in flight now, the asker's own included if it is one.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A counting gate: at most `n` holders at once; the others wait, each within its deadline.
/// A holder holds a [`Permit`], over a reference to the gate or an `Arc` of it, and gives it
/// back when the permit drops.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<GateState>,
    freed: Condvar,
}

#[derive(Debug)]
struct GateState {
    free: usize,
    /// Callers of [`Gate::enter`] waiting for a permit.
    waiting: usize,
}

/// One of a [`Gate`]'s permits, given back when dropped.
#[derive(Debug)]
pub struct Permit<G: Deref<Target = Gate>>(G);

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate {
            state: Mutex::new(GateState {
                free: n.max(1),
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, GateState> {
        self.state.locked()
    }

    /// Takes a permit, waiting for one until `deadline`: whether it had to wait, or `None` if
    /// the deadline passed first.
    fn take(&self, deadline: Option<Instant>) -> Option<bool> {
        let mut state = self.state();
        if state.free > 0 {
            state.free -= 1;
            return Some(false);
        }
        state.waiting += 1;
        let waited = wait_while(&self.freed, state, deadline, |s| s.free == 0);
        // A waiter that gave up is no longer waiting either; its guard is taken anew.
        let mut state = waited.unwrap_or_else(|| self.state());
        state.waiting -= 1;
        (state.free > 0).then(|| {
            state.free -= 1;
            true
        })
    }

    /// A permit, or `None` if `deadline` passes while waiting for one.
    pub fn enter(&self, deadline: Option<Instant>) -> Option<Permit<&Gate>> {
        self.take(deadline).map(|_| Permit(self))
    }

    /// Like [`Gate::enter`], the permit holding the gate itself, and whether it had to wait.
    pub fn enter_owned(
        self: &Arc<Self>,
        deadline: Option<Instant>,
    ) -> Option<(Permit<Arc<Gate>>, bool)> {
        self.take(deadline)
            .map(|waited| (Permit(self.clone()), waited))
    }

    /// A permit if one is free now and nobody waits for it: a permit just freed for a waiter
    /// that has not woken yet is the waiter's.
    pub fn try_enter(&self) -> Option<Permit<&Gate>> {
        let mut state = self.state();
        (state.free > 0 && state.waiting == 0).then(|| {
            state.free -= 1;
            Permit(self)
        })
    }

    /// Permits free now.
    #[cfg(test)]
    pub fn free(&self) -> usize {
        self.state().free
    }
}

impl<G: Deref<Target = Gate>> Drop for Permit<G> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.free += 1;
        if state.waiting > 0 {
            self.0.freed.notify_one();
        }
    }
}

/// A job for a helper thread.
pub type Job = Box<dyn FnOnce() + Send>;

/// Long-lived threads that run jobs off one queue. A search that hands part of its files to
/// a new thread pays for the thread's start, and that thread finds every regex's search cache
/// cold (the `regex` crate keeps its caches per thread): measured, ten files went slower on two
/// fresh threads than on one. A helper that has run searches before has its caches warm.
///
/// A job is taken by the first idle helper; with none idle it waits in the queue, so a job
/// must not be needed for its submitter to finish (see `engine::Batch`: the submitter does
/// every share no helper has taken). Dropping `Helpers` lets its threads end.
#[derive(Debug)]
pub struct Helpers {
    queue: mpsc::Sender<Job>,
    pub threads: usize,
    /// Where the helpers may run, kept off the submitter's core (see [`Helpers::submit`]).
    placement: placement::Placement,
}

impl Helpers {
    /// `threads` helpers (fewer if the system refuses to start one: jobs then wait for the
    /// others, or, with none, are never run, which their submitters do not wait for).
    pub fn new(threads: usize) -> Helpers {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let placement = placement::Placement::new();
        let (registered, registrations) = mpsc::channel();
        let started = (0..threads)
            .filter(|i| {
                let jobs = jobs.clone();
                let placement = placement.clone();
                let registered = registered.clone();
                std::thread::Builder::new()
                    .name(format!("guidebook-helper-{i}"))
                    .spawn(move || {
                        placement.register_this_thread();
                        let _ = registered.send(());
                        drop(registered);
                        loop {
                            let job = match jobs.locked().recv() {
                                Ok(job) => job,
                                Err(mpsc::RecvError) => return,
                            };
                            // A panicking job is a bug its submitter learns of (see `Batch`); the
                            // helper stays for the next one.
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                        }
                    })
                    .is_ok()
            })
            .count();
        // Every started helper is placed from the first submission on.
        drop(registered);
        for _ in 0..started {
            let _ = registrations.recv();
        }
        Helpers {
            queue,
            threads: started,
            placement,
        }
    }

    /// Queues `job` for the next idle helper, which will run on another core than this
    /// thread's. Left to itself, Linux wakes an idle helper on the waker's own core about half
    /// the time under KVM (an idle vCPU counts as preempted, so the scheduler does not pick it):
    /// the helper then only runs once its submitter sleeps, the search gets no second core, and
    /// a trace of the hook bench measured such searches at 545–573 µs against 438 µs for those
    /// that had it.
    pub fn submit(&self, job: Job) {
        self.placement.keep_off_this_core();
        // Sending fails only once every helper has ended, which they do not while `self` lives.
        let _ = self.queue.send(job);
    }
}

/// `f` over `items` on up to one thread per core, in order. Small inputs stay on this thread:
/// a thread costs tens of microseconds to start.
pub fn map<T: Send, R: Send>(
    items: Vec<T>,
    min_per_thread: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = cores.min(items.len() / min_per_thread.max(1)).max(1);
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut items = items.into_iter();
    loop {
        let chunk: Vec<T> = items.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    let f = &f;
    std::thread::scope(|scope| {
        let mut chunks = chunks.into_iter();
        let first = chunks.next().unwrap_or_default();
        let handles: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || chunk.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out: Vec<R> = first.into_iter().map(f).collect();
        for h in handles {
            // A panic in `f` is a bug; it goes on as the panic it is.
            out.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        out
    })
}

/// Keeps the helpers off the core of the thread that submits work to them. Linux only;
/// elsewhere the scheduler places them.
mod placement {
    #[cfg(target_os = "linux")]
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::Arc;
    #[cfg(target_os = "linux")]
    use std::sync::Mutex;

    #[cfg(target_os = "linux")]
    use crate::sync::Locked;

    #[derive(Debug, Clone)]
    pub struct Placement(Arc<Inner>);

    #[cfg(target_os = "linux")]
    struct Inner {
        /// The cores this process may run on, when they were read.
        allowed: libc::cpu_set_t,
        /// The helpers' thread ids.
        helpers: Mutex<Vec<libc::pid_t>>,
        /// The core the helpers were last kept off (-1: none yet).
        off: AtomicI32,
    }

    #[cfg(not(target_os = "linux"))]
    struct Inner;

    impl std::fmt::Debug for Inner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Placement")
        }
    }

    #[cfg(target_os = "linux")]
    impl Placement {
        pub fn new() -> Placement {
            // SAFETY: an all-zero `cpu_set_t` is an empty set, which the call fills in.
            let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: `allowed` is a valid, writable set of `size` bytes.
            if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
                // Unknown: no core is ever taken away (see `keep_off_this_core`).
                allowed = unsafe { std::mem::zeroed() };
            }
            Placement(Arc::new(Inner {
                allowed,
                helpers: Mutex::new(Vec::new()),
                off: AtomicI32::new(-1),
            }))
        }

        /// Counts the calling thread among the helpers.
        pub fn register_this_thread(&self) {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            self.0.helpers.locked().push(tid);
        }

        /// Lets the helpers run on every allowed core but the calling thread's, unless that
        /// would leave them none. Costs one `sched_setaffinity` per helper when the caller's
        /// core changed since the last call, nothing otherwise.
        pub fn keep_off_this_core(&self) {
            // SAFETY: sched_getcpu has no preconditions; it answers -1 on failure.
            let cpu = unsafe { libc::sched_getcpu() };
            // A core beyond what a `cpu_set_t` holds cannot be taken out of one.
            let beyond = usize::try_from(cpu).map_or(true, |c| c >= libc::CPU_SETSIZE as usize);
            if beyond || self.0.off.swap(cpu, Ordering::Relaxed) == cpu {
                return;
            }
            let mut set = self.0.allowed;
            // SAFETY: `cpu` is a core number the kernel just gave, within the set's size.
            unsafe { libc::CPU_CLR(cpu as usize, &mut set) };
            // SAFETY: `set` is a valid set.
            if unsafe { libc::CPU_COUNT(&set) } == 0 {
                return;
            }
            let size = std::mem::size_of::<libc::cpu_set_t>();
            for &tid in self.0.helpers.locked().iter() {
                // SAFETY: `set` is a valid set of `size` bytes. A failure (a core taken away
                // from the process meanwhile) leaves the helper where the scheduler puts it.
                unsafe { libc::sched_setaffinity(tid, size, &set) };
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    impl Placement {
        pub fn new() -> Placement {
            Placement(Arc::new(Inner))
        }

        pub fn register_this_thread(&self) {}

        pub fn keep_off_this_core(&self) {}
    }
}

#[cfg(test)]
mod tests {
    use super::{Gate, Helpers};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    #[test]
    fn the_gate_lets_n_in_and_the_next_waits_within_its_deadline() {
        let gate = Gate::new(2);
        let a = gate.enter(None).unwrap();
        let _b = gate.enter(None).unwrap();
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(
            gate.enter(Some(soon)).is_none(),
            "a third waits, then gives up"
        );
        assert_eq!(gate.state().waiting, 0, "and waits no more");
        assert!(gate.try_enter().is_none(), "none free now");
        std::thread::scope(|s| {
            let waiter = s.spawn(|| gate.enter(None).is_some());
            std::thread::sleep(Duration::from_millis(10));
            drop(a);
            assert!(waiter.join().unwrap(), "a freed permit lets the waiter in");
        });
    }

    /// A permit freed while someone waits is the waiter's, even before the waiter has woken: a
    /// search looking for idle cores to share its files with does not take it.
    #[test]
    fn a_permit_freed_for_a_waiter_is_not_taken_by_try_enter() {
        let gate = Gate::new(1);
        let held = gate.enter(None).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| gate.enter(None).is_some());
            while gate.state().waiting == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Freed, the waiter not yet told: the moment between a release and the wake-up.
            std::mem::forget(held);
            gate.state().free += 1;
            assert!(gate.try_enter().is_none(), "taken from the waiter");
            gate.freed.notify_one();
            assert!(waiter.join().unwrap(), "the waiter has it");
        });
        let state = gate.state();
        assert_eq!(
            (state.free, state.waiting),
            (1, 0),
            "the waiter's permit back"
        );
    }

    #[test]
    fn helpers_run_jobs_on_the_same_threads_and_survive_a_panic() {
        let helpers = Helpers::new(2);
        assert_eq!(helpers.threads, 2);
        let (tx, rx) = mpsc::channel();
        for i in 0..20 {
            let tx = tx.clone();
            helpers.submit(Box::new(move || {
                if i == 3 {
                    panic!("a job's bug");
                }
                tx.send(std::thread::current().name().map(str::to_owned))
                    .unwrap();
            }));
        }
        drop(tx);
        let mut names: Vec<_> = rx.iter().map(Option::unwrap).collect();
        assert_eq!(names.len(), 19, "every job but the panicking one ran");
        names.sort();
        names.dedup();
        assert!(
            names.len() <= 2 && names.iter().all(|n| n.starts_with("guidebook-helper-")),
            "{names:?}"
        );
    }
    /// A helper runs on another core than the thread that submitted its job, whichever core
    /// that is (left to itself, Linux under KVM woke it on the submitter's own core about half
    /// the time, where it waited for the submitter to finish).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_helper_runs_off_the_core_of_its_submitter() {
        fn pin_this_thread_to(cpu: usize) -> bool {
            // SAFETY: an all-zero set is empty; `cpu` is below the set's size.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(cpu, &mut set) };
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: `set` is a valid set of `size` bytes.
            unsafe { libc::sched_setaffinity(0, size, &set) == 0 }
        }
        let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut allowed) }, 0);
        let cores: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
            .collect();
        assert!(cores.len() >= 2, "needs 2 cores or more: {cores:?}");
        std::thread::spawn(move || {
            let helpers = Helpers::new(1);
            // Back and forth, so that each placement follows the submitter's move.
            for &core in cores.iter().take(2).chain(cores.iter().take(2)) {
                assert!(pin_this_thread_to(core));
                let (tx, rx) = mpsc::channel();
                helpers.submit(Box::new(move || {
                    let mut mine: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                    let size = std::mem::size_of::<libc::cpu_set_t>();
                    unsafe { libc::sched_getaffinity(0, size, &mut mine) };
                    let ran_on = unsafe { libc::sched_getcpu() };
                    tx.send((unsafe { libc::CPU_ISSET(core, &mine) }, ran_on))
                        .unwrap();
                }));
                let (may_share, ran_on) = rx.recv().unwrap();
                assert!(
                    !may_share,
                    "the helper may run on its submitter's core {core}"
                );
                assert_ne!(ran_on, core as i32);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_call_counts_until_it_is_dropped() {
        let calls = super::InFlight::default();
        assert_eq!(calls.count(), 0);
        let a = calls.enter();
        let b = calls.enter();
        assert_eq!(calls.count(), 2);
        drop(a);
        assert_eq!(calls.count(), 1);
        let c = calls.enter();
        assert_eq!(calls.count(), 2, "b is still in flight");
        drop((b, c));
        assert_eq!(calls.count(), 0);
    }

    #[test]
    fn keeps_the_order_of_its_input_whatever_the_split() {
        for n in [0, 1, 5, 100, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let out = super::map(items, 3, |i| i * 2);
            assert_eq!(out, (0..n).map(|i| i * 2).collect::<Vec<_>>());
        }
    }
}
