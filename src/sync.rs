//! One lock-poison policy: a lock whose holder panicked is taken over, not passed on as a panic.
//!
//! Every state behind a `Mutex` here is a cache, a table or a queue that each holder leaves whole
//! between statements; a panic in one request must not turn every later request into a panic
//! too, so a poisoned lock is recovered ([`Locked::locked`]) wherever one is taken.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// [`Mutex::lock`], recovering a poisoned lock.
pub(crate) trait Locked<T> {
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_over_with_its_state() {
        let m = std::sync::Arc::new(Mutex::new(vec![1]));
        let held = m.clone();
        let _ = std::thread::spawn(move || {
            let mut v = held.lock().unwrap();
            v.push(2);
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*m.locked(), [1, 2]);
    }
}
