//! Taking a `std::sync` lock whose last holder panicked.
//!
//! A lock is poisoned when a thread panics while holding it. Every lock in
//! the engine guards state a panic cannot leave half-changed: a value
//! replaced in one assignment (the settings, the token, a storage fault), a
//! map or set changed one insert or remove at a time (waiting calls, queues,
//! stop requests, clients seen, the claims queued for the store's writer).
//! So the engine takes such a lock as it is: one request that panicked must
//! not make every later one panic too. (The SQLite connection's lock is
//! `parking_lot`'s, which has no poisoning: rusqlite rolls an open
//! transaction back as its guard unwinds.)

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`], taking a poisoned lock as it is (see the module).
pub trait MutexExt<T: ?Sized> {
    fn lock_anyway(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> MutexExt<T> for Mutex<T> {
    fn lock_anyway(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// [`RwLock::read`] and [`RwLock::write`], taking a poisoned lock as it is (see the module).
pub trait RwLockExt<T: ?Sized> {
    fn read_anyway(&self) -> RwLockReadGuard<'_, T>;
    fn write_anyway(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLockExt<T> for RwLock<T> {
    fn read_anyway(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_anyway(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_whose_holder_panicked_is_taken_as_it_is() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let r = std::sync::Arc::new(RwLock::new(1));
        let (m2, r2) = (m.clone(), r.clone());
        let _ = std::thread::spawn(move || {
            let _held = m2.lock().unwrap();
            let _written = r2.write().unwrap();
            panic!("while holding both");
        })
        .join();
        assert!(m.is_poisoned() && r.is_poisoned());
        *m.lock_anyway() += 1;
        *r.write_anyway() += 1;
        assert_eq!((*m.lock_anyway(), *r.read_anyway()), (2, 2));
    }
}
