//! A real HTTP server on 127.0.0.1 that answers each request with a scripted reply,
//! shared by `tests/http_models.rs` and `benches/http.rs` (one thread per
//! connection, keep-alive, loopback only). It serves until the process ends.

// Each user needs only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When the request arrived.
    pub at: Instant,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// What the server answers.
pub enum Reply {
    Json(u16, Vec<(&'static str, String)>, Value),
    /// Waits, then answers.
    Slow(Duration, Value),
    /// Promises more bytes than it sends, then closes.
    Cut,
    /// A complete body that is not JSON.
    NotJson,
}

type Script = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

pub struct Server {
    pub url: String,
    /// Every request, in arrival order (empty when started with [`serve_unrecorded`]).
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// The most requests in flight at once.
    pub peak: Arc<AtomicUsize>,
}

/// Starts a server that answers each request with `script(request, n)` (`n`: how many
/// requests came before) and keeps every request in `seen`.
pub fn serve(script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
    start(true, Arc::new(script))
}

/// The same, keeping no request: for load, where the server must not grow with the
/// number of requests (benches measure the memory of the process it runs in).
pub fn serve_unrecorded(script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
    start(false, Arc::new(script))
}

struct Shared {
    keep: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
    count: AtomicUsize,
    peak: Arc<AtomicUsize>,
    in_flight: AtomicUsize,
    script: Arc<Script>,
}

fn start(keep: bool, script: Arc<Script>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shared = Arc::new(Shared {
        keep,
        seen: Arc::new(Mutex::new(Vec::new())),
        count: AtomicUsize::new(0),
        peak: Arc::new(AtomicUsize::new(0)),
        in_flight: AtomicUsize::new(0),
        script,
    });
    let server = Server {
        url,
        seen: shared.seen.clone(),
        peak: shared.peak.clone(),
    };
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let shared = shared.clone();
            std::thread::spawn(move || handle(stream, &shared));
        }
    });
    server
}

/// Serves one connection: requests one after another until the client closes it.
fn handle(stream: TcpStream, s: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut headers = Vec::new();
        let mut len = 0;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end().to_string();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                if k == "content-length" {
                    len = v.parse().unwrap_or(0);
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let req = Seen {
            at: Instant::now(),
            path,
            headers,
            // `Value`'s own `FromStr`, not the generic `from_slice`: the parser is then
            // serde_json's code, built optimised (Cargo.toml), instead of an unoptimised
            // copy made in this test binary.
            body: (std::str::from_utf8(&body).ok())
                .and_then(|b| b.parse().ok())
                .unwrap_or(Value::Null),
        };
        let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        s.peak.fetch_max(now, Ordering::SeqCst);
        // The request takes its place in `seen` on arrival and is moved there once
        // the script has answered (before the reply is written): a body, the whole
        // tool catalog in some tests, is never copied.
        let n = if s.keep {
            let mut seen = s.seen.lock().unwrap();
            seen.push(Seen {
                at: req.at,
                path: req.path.clone(),
                headers: Vec::new(),
                body: Value::Null,
            });
            seen.len() - 1
        } else {
            s.count.fetch_add(1, Ordering::SeqCst)
        };
        let reply = (s.script)(&req, n);
        if s.keep {
            s.seen.lock().unwrap()[n] = req;
        }
        let write = |out: &mut TcpStream, status: u16, extra: &[(&str, String)], body: &[u8]| {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                body.len()
            );
            for (k, v) in extra {
                head += &format!("{k}: {v}\r\n");
            }
            head += "\r\n";
            out.write_all(head.as_bytes()).is_ok() && out.write_all(body).is_ok()
        };
        let written = match reply {
            Reply::Json(status, extra, v) => {
                write(&mut out, status, &extra, v.to_string().as_bytes())
            }
            Reply::Slow(d, v) => {
                std::thread::sleep(d);
                write(&mut out, 200, &[], v.to_string().as_bytes())
            }
            Reply::NotJson => write(&mut out, 200, &[], b"{\"choices\": [oops"),
            Reply::Cut => {
                let _ = out.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{\"choices\":",
                );
                false
            }
        };
        s.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !written {
            return;
        }
    }
}
