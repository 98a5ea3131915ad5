//! Work split over the machine's cores: [`map`] with scoped threads, results in the order of
//! the input, for one-off work (a guidebook walk); [`Helpers`], long-lived threads, for work
//! that recurs on every request (a search's files); [`InFlight`], the count of calls being
//! served, which says whether a core is likely to be wanted by another call; [`wait_while`], a
//! caller's bounded wait for such work (or a permit, or a first load).

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
pub struct InFlight(AtomicUsize);

/// One call counted in [`InFlight`] until dropped.
#[derive(Debug)]
pub struct Call<'a>(&'a InFlight);

impl InFlight {
    pub fn enter(&self) -> Call<'_> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Call(self)
    }

    /// Calls in flight now, the asker's own included if it is one.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
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
}

impl Helpers {
    /// `threads` helpers (fewer if the system refuses to start one: jobs then wait for the
    /// others, or, with none, are never run, which their submitters do not wait for).
    pub fn new(threads: usize) -> Helpers {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let started = (0..threads)
            .filter(|i| {
                let jobs = jobs.clone();
                std::thread::Builder::new()
                    .name(format!("guidebook-helper-{i}"))
                    .spawn(move || loop {
                        let job = match jobs.lock().unwrap_or_else(|p| p.into_inner()).recv() {
                            Ok(job) => job,
                            Err(mpsc::RecvError) => return,
                        };
                        // A panicking job is a bug its submitter learns of (see `Batch`); the
                        // helper stays for the next one.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    })
                    .is_ok()
            })
            .count();
        Helpers {
            queue,
            threads: started,
        }
    }

    /// Queues `job` for the next idle helper.
    pub fn submit(&self, job: Job) {
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

#[cfg(test)]
mod tests {
    use super::Helpers;
    use std::sync::mpsc;

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
    #[test]
    fn a_call_counts_until_it_is_dropped() {
        let calls = super::InFlight::default();
        assert_eq!(calls.count(), 0);
        let a = calls.enter();
        let b = calls.enter();
        assert_eq!(calls.count(), 2);
        drop(a);
        assert_eq!(calls.count(), 1);
        drop(b);
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
