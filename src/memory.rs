//! How promptly the allocator gives freed memory back to the system.
//!
//! mimalloc (the allocator of every program built on this crate, `src/lib.rs`) keeps
//! freed pages for a while before it returns them to the system: 1 s by default (10 s
//! for the pages of its arenas), which lets a busy run reuse them without asking the
//! system again. Aggregation is different: polars' threads allocate and free large
//! column buffers query after query, and with that delay the freed ones stayed
//! resident beside the new ones — `report` of 1,000,000 outcome lines peaked at
//! 600–670 MiB instead of about 400 (docs: benchmarks.md, "Aggregation memory").
//!
//! [`frugal`] returns a guard under which freed memory goes back at once; the delay
//! comes back, as it was, when the last guard is dropped. It is not set for the whole
//! program because a suite run was about a fifth slower with no delay at all.

use std::os::raw::c_long;
use std::sync::Mutex;

use libmimalloc_sys::{mi_collect, mi_option_get, mi_option_set, mi_option_t};

/// mimalloc's `mi_option_purge_delay` (its `mimalloc.h`; the Rust binding names no
/// constant for it): milliseconds before freed memory is returned, 0 for at once.
const PURGE_DELAY: mi_option_t = 15;

/// How many guards are alive, and the delay to put back when none is.
static HELD: Mutex<(usize, c_long)> = Mutex::new((0, 0));

/// While it lives, freed memory goes back to the system at once. Guards may overlap
/// (across threads too): the delay is restored when the last one is dropped.
#[must_use = "the delay is restored when the guard is dropped"]
pub struct Frugal {
    _private: (),
}

/// Starts returning freed memory at once, until the guard is dropped.
pub fn frugal() -> Frugal {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if held.0 == 0 {
        // SAFETY: mimalloc's option calls take a plain number and may be made from
        // any thread at any time; the option is read again at each purge.
        held.1 = unsafe { mi_option_get(PURGE_DELAY) };
        // Purges already scheduled would wait for the delay to come back (mimalloc
        // runs no scheduled purge while it is 0): run them now.
        unsafe { mi_collect(true) };
        unsafe { mi_option_set(PURGE_DELAY, 0) };
    }
    held.0 += 1;
    Frugal { _private: () }
}

impl Drop for Frugal {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.0 -= 1;
        if held.0 == 0 {
            // SAFETY: as in `frugal`.
            unsafe { mi_option_set(PURGE_DELAY, held.1) };
        }
    }
}

/// The purge delay now, in milliseconds.
pub fn purge_delay() -> c_long {
    // SAFETY: as in `frugal`.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option number is mimalloc's purge delay: it is the documented default (or
    /// what `MIMALLOC_PURGE_DELAY` says) when no guard is alive, 0 while one is, and
    /// back when the last one goes. Other tests may hold guards meanwhile, so the
    /// restored value is read under the lock that guards take.
    #[test]
    fn guards_set_the_purge_delay_to_zero_and_the_last_restores_it() {
        let expected: c_long = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        let outer = frugal();
        assert_eq!(purge_delay(), 0);
        let inner = frugal();
        drop(outer);
        assert_eq!(purge_delay(), 0, "a guard is still alive");
        drop(inner);
        let held = HELD.lock().unwrap();
        if held.0 == 0 {
            assert_eq!(
                purge_delay(),
                expected,
                "not restored, or not the purge delay"
            );
        } else {
            assert_eq!(held.1, expected, "not mimalloc's purge delay");
        }
    }
}
