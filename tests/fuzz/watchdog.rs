//! The "no hang" guard of the fuzz targets: each case registers itself while it runs, and a
//! watchdog thread aborts the whole process, printing the input, if one runs past
//! [`CASE_LIMIT`]. Without it a hang would only show as a stuck CI job. Reads and writes nothing.

use std::collections::HashMap;
use std::sync::{Mutex, Once, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// The longest one case may take. Every parser here answers in milliseconds; the limit is
/// generous because a debug build on a busy 2-core machine can be slow.
pub const CASE_LIMIT: Duration = Duration::from_secs(10);

type Running = Mutex<HashMap<ThreadId, (Instant, &'static str, String)>>;

fn running() -> &'static Running {
    static RUNNING: OnceLock<Running> = OnceLock::new();
    RUNNING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Runs `f` as one case of `target` on `input` (described for the report), under the watchdog.
pub fn case<T>(target: &'static str, input: &dyn std::fmt::Debug, f: impl FnOnce() -> T) -> T {
    static START: Once = Once::new();
    START.call_once(|| {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(100));
            let running = running().lock().unwrap_or_else(|e| e.into_inner());
            for (started, target, input) in running.values() {
                if started.elapsed() > CASE_LIMIT {
                    eprintln!(
                        "fuzz target {target} hung: no answer within {CASE_LIMIT:?} for input {input}"
                    );
                    std::process::abort();
                }
            }
        });
    });
    let id = std::thread::current().id();
    let described = format!("{input:?}");
    running()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, (Instant::now(), target, described));
    // Removed on drop, so that a case that panics (proptest catches it and shrinks) is not
    // later taken for a hung one.
    struct Done(ThreadId);
    impl Drop for Done {
        fn drop(&mut self) {
            running()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.0);
        }
    }
    let _done = Done(id);
    f()
}
