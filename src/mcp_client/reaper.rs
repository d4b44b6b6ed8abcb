//! The watcher that takes a run's servers with it when the run dies, SIGKILL included.
//!
//! A process discbench starts for a live MCP server runs in a process group of its own
//! (so that an `npx` or `sh` wrapper and the server it starts stop together, and so
//! that a terminal's Ctrl-C reaches discbench alone, which stops them in order). A
//! process killed with SIGKILL runs no code, so nothing it does can stop them: a
//! small process forked from discbench before the first server starts does. It holds
//! the read end of a pipe whose write end only discbench holds; discbench writes each
//! group it starts (`+pgid`) and each it has stopped (`-pgid`); when the pipe reports
//! end of file — discbench exited, however it exited — the watcher sends SIGKILL to
//! every group still listed, and exits.
//!
//! The watcher is a `fork` of a multi-threaded process, so it calls only what is safe
//! there (async-signal-safe functions: `read`, `close`, `setpgid`, `kill`, `_exit`),
//! allocates nothing and keeps its list on its stack.

use std::sync::OnceLock;

/// How many groups the watcher can hold at once: live instances in flight at once
/// (two per conversation at most, times the run's concurrency) stay far below it.
#[cfg(unix)]
const SLOTS: usize = 4096;

/// The run's watcher: started once, on first use.
pub(crate) struct Reaper {
    #[cfg(unix)]
    fd: libc::c_int,
}

static REAPER: OnceLock<Option<Reaper>> = OnceLock::new();

/// The watcher of this process, started on first use; `None` where it cannot start
/// (not Unix, or `fork` failed): then a SIGKILLed run leaves its servers behind, and
/// only a run that ends normally stops them.
pub(crate) fn reaper() -> Option<&'static Reaper> {
    REAPER.get_or_init(start).as_ref()
}

impl Reaper {
    /// Lists a process group for the watcher to kill should discbench die.
    pub(crate) fn watch(&self, pgid: u32) {
        self.send(b'+', pgid);
    }

    /// Takes a stopped group off the list (its id may be reused by then).
    pub(crate) fn forget(&self, pgid: u32) {
        self.send(b'-', pgid);
    }

    #[cfg(unix)]
    fn send(&self, op: u8, pgid: u32) {
        let mut rec = [0u8; 5];
        rec[0] = op;
        rec[1..].copy_from_slice(&pgid.to_le_bytes());
        // SAFETY: a 5-byte write to a pipe this struct owns; writes under PIPE_BUF are
        // atomic, so records from several threads never interleave.
        unsafe {
            libc::write(self.fd, rec.as_ptr().cast(), rec.len());
        }
    }

    #[cfg(not(unix))]
    fn send(&self, _op: u8, _pgid: u32) {}
}

#[cfg(not(unix))]
fn start() -> Option<Reaper> {
    None
}

#[cfg(unix)]
fn start() -> Option<Reaper> {
    let mut fds = [0 as libc::c_int; 2];
    // The write end must not leak into the servers discbench starts, or the watcher
    // would never see the end of file while one of them lives: close-on-exec from the
    // start where the system can (another thread may spawn a process meanwhile).
    // SAFETY: pipe2(2)/pipe(2) into a two-int array; fcntl on descriptors just made.
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return None;
        }
        libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // SAFETY: fork(2); the child runs `watch` alone, which calls only
    // async-signal-safe functions and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // SAFETY: closing descriptors just made.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return None;
    }
    if pid == 0 {
        // SAFETY: in the forked child; see `watch`.
        unsafe { watch(read_end) }
    }
    // SAFETY: the parent's copy of the read end is not needed.
    unsafe {
        libc::close(read_end);
    }
    Some(Reaper { fd: write_end })
}

/// The watcher's whole life.
///
/// # Safety
/// Only in the child of `fork`: it calls async-signal-safe functions only, and exits.
#[cfg(unix)]
unsafe fn watch(fd: libc::c_int) -> ! {
    // Out of discbench's group: a Ctrl-C or a signal to that group leaves it be.
    libc::setpgid(0, 0);
    // Everything else discbench had open stays discbench's: a server's stdin the
    // watcher held open would never see its end of file.
    for other in 0..4096 {
        if other != fd {
            libc::close(other);
        }
    }
    let mut groups = [0u32; SLOTS];
    let mut rec = [0u8; 5];
    let mut have = 0usize;
    loop {
        let n = libc::read(fd, rec.as_mut_ptr().add(have).cast(), rec.len() - have);
        if n == 0 {
            break;
        }
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        have += n as usize;
        if have < rec.len() {
            continue;
        }
        have = 0;
        let pgid = u32::from_le_bytes([rec[1], rec[2], rec[3], rec[4]]);
        if pgid == 0 {
            continue;
        }
        if rec[0] == b'+' {
            if let Some(slot) = groups.iter_mut().find(|g| **g == 0) {
                *slot = pgid;
            }
        } else if let Some(slot) = groups.iter_mut().find(|g| **g == pgid) {
            *slot = 0;
        }
    }
    for g in groups.iter().filter(|g| **g != 0) {
        libc::kill(-(*g as libc::pid_t), libc::SIGKILL);
    }
    libc::_exit(0)
}
