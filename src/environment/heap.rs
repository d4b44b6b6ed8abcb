//! The memory guard: SQLite's allocator, wrapped so that the allocations one query
//! makes on its thread are counted against that query's budget and refused past it
//! (SQLite then fails the query with `SQLITE_NOMEM` and frees what it held). Outside
//! a query nothing is counted. Installed once, before SQLite initializes, by the
//! first database opened.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use rusqlite::ffi;

/// SQLite's own allocator, which the guard hands every allocation to.
struct Inner {
    malloc: unsafe extern "C" fn(c_int) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    realloc: unsafe extern "C" fn(*mut c_void, c_int) -> *mut c_void,
    size: unsafe extern "C" fn(*mut c_void) -> c_int,
}

static INNER: OnceLock<Inner> = OnceLock::new();
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// The running query's budget on this thread: bytes held, the limit, whether an
/// allocation was refused.
#[derive(Clone, Copy)]
struct Budget {
    held: i64,
    limit: i64,
    refused: bool,
}

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// Installs the guard (once per process); an error if SQLite was initialized
/// before it could be.
pub fn install() -> Result<(), String> {
    INSTALLED
        .get_or_init(|| {
            // SAFETY: sqlite3_config is called before any connection is opened
            // (every one is opened after this), as SQLite requires; it copies the
            // structures passed to it.
            unsafe {
                let mut m: ffi::sqlite3_mem_methods = std::mem::zeroed();
                let rc = ffi::sqlite3_config(
                    ffi::SQLITE_CONFIG_GETMALLOC,
                    &mut m as *mut ffi::sqlite3_mem_methods,
                );
                if rc != ffi::SQLITE_OK {
                    return Err(format!(
                        "SQLite was initialized before its memory guard (code {rc})"
                    ));
                }
                let (Some(malloc), Some(free), Some(realloc), Some(size)) =
                    (m.xMalloc, m.xFree, m.xRealloc, m.xSize)
                else {
                    return Err("SQLite has no allocator to guard".into());
                };
                let _ = INNER.set(Inner {
                    malloc,
                    free,
                    realloc,
                    size,
                });
                let guarded = ffi::sqlite3_mem_methods {
                    xMalloc: Some(x_malloc),
                    xFree: Some(x_free),
                    xRealloc: Some(x_realloc),
                    ..m
                };
                let rc = ffi::sqlite3_config(
                    ffi::SQLITE_CONFIG_MALLOC,
                    &guarded as *const ffi::sqlite3_mem_methods,
                );
                if rc != ffi::SQLITE_OK {
                    return Err(format!("SQLite refused its memory guard (code {rc})"));
                }
                Ok(())
            }
        })
        .clone()
}

fn budget() -> Option<Budget> {
    BUDGET.try_with(Cell::get).ok().flatten()
}

fn set(b: Budget) {
    let _ = BUDGET.try_with(|c| c.set(Some(b)));
}

/// Whether `more` bytes fit the running query's budget (always, outside a query);
/// a refusal is remembered.
fn admit(more: i64) -> bool {
    match budget() {
        Some(mut b) if more > 0 && b.held.saturating_add(more) > b.limit => {
            b.refused = true;
            set(b);
            false
        }
        _ => true,
    }
}

fn charge(delta: i64) {
    if let Some(mut b) = budget() {
        b.held += delta;
        set(b);
    }
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    let Some(inner) = INNER.get() else {
        return std::ptr::null_mut();
    };
    if !admit(i64::from(n)) {
        return std::ptr::null_mut();
    }
    let p = (inner.malloc)(n);
    if !p.is_null() {
        charge(i64::from((inner.size)(p)));
    }
    p
}

unsafe extern "C" fn x_free(p: *mut c_void) {
    let Some(inner) = INNER.get() else {
        return;
    };
    if !p.is_null() {
        charge(-i64::from((inner.size)(p)));
    }
    (inner.free)(p)
}

unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    let Some(inner) = INNER.get() else {
        return std::ptr::null_mut();
    };
    let old = if p.is_null() {
        0
    } else {
        i64::from((inner.size)(p))
    };
    if !admit(i64::from(n) - old) {
        return std::ptr::null_mut();
    }
    let q = (inner.realloc)(p, n);
    if !q.is_null() {
        charge(i64::from((inner.size)(q)) - old);
    }
    q
}

/// The budget of one query on this thread, from `begin` to `end` (or drop).
pub struct Guard(());

impl Guard {
    pub fn begin(limit: i64) -> Guard {
        set(Budget {
            held: 0,
            limit,
            refused: false,
        });
        Guard(())
    }

    /// Ends the budget; whether an allocation was refused.
    pub fn end(self) -> bool {
        budget().is_some_and(|b| b.refused)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = BUDGET.try_with(|c| c.set(None));
    }
}
