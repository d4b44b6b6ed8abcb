//! A real MCP server over stdio: started as a child process in a process group of its
//! own, driven by an `rmcp` client whose both byte streams are copied as they pass
//! (the raw JSON-RPC lines, from which [`Captured`] is made), its stderr kept for
//! the error message, and stopped as the MCP specification says: stdin closed,
//! then SIGTERM, then SIGKILL, to the whole group (an `npx` wrapper and the server
//! it started go together).

use std::ffi::OsString;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::process::{Child, Command};

use super::{assemble, garbage_note, list, Captured, ImportError, Log};

/// How much of the server's stderr is kept (its end).
const STDERR_KEPT: usize = 4096;
/// Lines of stderr shown in an error.
const STDERR_LINES: usize = 20;
/// How long a server gets to exit after its stdin closed, and after SIGTERM.
const GRACE: Duration = Duration::from_secs(2);
/// How long a server whose stdout closed is given for its exit to be seen.
const EXIT_SETTLE: Duration = Duration::from_millis(500);

/// A reader or writer that copies what passes through it into a [`Log`].
struct Tee<T> {
    inner: T,
    log: Log,
}

impl<T: AsyncRead + Unpin> AsyncRead for Tee<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &r {
            let new = &buf.filled()[before..];
            self.log.lock().expect("log").extend_from_slice(new);
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tee<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            self.log.lock().expect("log").extend_from_slice(&buf[..*n]);
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The end of what a child wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut b = self.0.lock().expect("stderr");
        b.extend_from_slice(bytes);
        if b.len() > 2 * STDERR_KEPT {
            let cut = b.len() - STDERR_KEPT;
            b.drain(..cut);
        }
    }

    pub(crate) fn text(&self) -> String {
        let b = self.0.lock().expect("stderr");
        let text = String::from_utf8_lossy(&b);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(STDERR_LINES)..].join("\n")
    }
}

/// Reads what a child writes to stderr into `tail` until it closes, so that the pipe
/// never fills (the child's stderr must be piped).
pub(crate) fn drain_stderr(child: &mut Child, tail: &StderrTail) -> tokio::task::JoinHandle<()> {
    let mut err = child.stderr.take().expect("stderr is piped");
    let tail = tail.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.push(&buf[..n]);
        }
    })
}

/// Starts `command` with `args`, lists what it offers, and stops it; the whole of it
/// within `timeout`.
pub async fn capture(
    command: &OsString,
    args: &[OsString],
    version: &str,
    timeout: Duration,
) -> Result<Captured, ImportError> {
    let shown = std::iter::once(command)
        .chain(args)
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new(command);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|source| ImportError::Start {
        command: shown.clone(),
        source,
    })?;
    let tail = StderrTail::default();
    let stderr_task = drain_stderr(&mut child, &tail);
    let sent: Log = Default::default();
    let received: Log = Default::default();
    let reader = Tee {
        inner: child.stdout.take().expect("stdout is piped"),
        log: received.clone(),
    };
    let writer = Tee {
        inner: child.stdin.take().expect("stdin is piped"),
        log: sent.clone(),
    };

    let listed = tokio::time::timeout(timeout, list((reader, writer), version)).await;
    // A server that is gone already exited by itself, before it was asked to stop. Its
    // stdout closing (what ended the exchange) can come a moment before its exit is
    // seen: wait for that moment, so the message does not depend on the race.
    let early = match &listed {
        Ok(Err(_)) => match child.try_wait().ok().flatten() {
            Some(s) => Some(s),
            None => tokio::time::timeout(EXIT_SETTLE, child.wait())
                .await
                .ok()
                .and_then(Result::ok),
        },
        _ => None,
    };
    let status = stop(&mut child).await;
    // What the server wrote to stderr before it stopped.
    let _ = tokio::time::timeout(Duration::from_millis(500), stderr_task).await;
    let fail = |message: String| ImportError::Server {
        message,
        stderr_tail: Some(tail.text()),
    };
    match listed {
        Err(_) => Err(fail(format!(
            "`{shown}` did not finish answering within {} s (it was stopped){}",
            timeout.as_secs_f64(),
            garbage_note(&received),
        ))),
        Ok(Err(_)) if early.is_some() => Err(fail(format!(
            "`{shown}` exited ({}) before it finished answering{}",
            early.expect("checked"),
            garbage_note(&received),
        ))),
        Ok(Err(e)) => Err(fail(format!(
            "`{shown}` failed as an MCP server: {e}{}{}",
            garbage_note(&received),
            match status {
                Some(s) => format!("; stopped, it exited with {s}"),
                None => String::new(),
            }
        ))),
        Ok(Ok(offered)) => assemble(&sent, &received, offered)
            .map_err(|e| fail(format!("`{shown}` answered what is not MCP: {e}"))),
    }
}

/// Stops the child as the specification says: its stdin is closed already (the
/// client is gone); wait, then SIGTERM the group, wait, then SIGKILL it. The group is
/// killed at the end whatever happened: what the server started and left behind goes
/// with it. (The pid is read first: once the child is reaped, it has none.)
pub(crate) async fn stop(child: &mut Child) -> Option<ExitStatus> {
    let pid = child.id();
    if let Ok(Ok(s)) = tokio::time::timeout(GRACE, child.wait()).await {
        kill_group(pid, Signal::Kill);
        return Some(s);
    }
    kill_group(pid, Signal::Term);
    if let Ok(Ok(s)) = tokio::time::timeout(GRACE, child.wait()).await {
        kill_group(pid, Signal::Kill);
        return Some(s);
    }
    kill_group(pid, Signal::Kill);
    let _ = child.kill().await;
    child.wait().await.ok()
}

enum Signal {
    Term,
    Kill,
}

/// Signals the process group of the child `pid` (what is left of it), on Unix.
fn kill_group(pid: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(pid) = pid {
        let sig = match signal {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: kill(2) with a negative pid signals that process group; the group
        // was made for this child (`process_group(0)`), so its id is the child's pid.
        unsafe {
            libc::kill(-(pid as libc::pid_t), sig);
        }
    }
    #[cfg(not(unix))]
    let _ = (pid, signal);
}
