//! A real MCP server over Streamable HTTP: an `rmcp` transport of discbench's own on
//! the HTTP client the model backends use (reqwest, rustls), so that the bytes of
//! every answer are kept as they arrive, as over stdio. Each message is a `POST` to
//! the endpoint (`Accept: application/json, text/event-stream`); the answer is a JSON
//! body or an SSE stream of `data:` events; the session id (`Mcp-Session-Id`) and the
//! negotiated version (`MCP-Protocol-Version`) go with every later request, and the
//! session is ended with `DELETE` when the listing is done.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{assemble, list, Captured, ImportError, Log};

const SESSION: &str = "mcp-session-id";
const VERSION: &str = "mcp-protocol-version";

/// What one HTTP exchange found that is not a message.
type Problems = Arc<Mutex<Vec<String>>>;

/// The transport: requests are posted; what comes back is queued for `receive`.
pub(crate) struct HttpTransport {
    client: reqwest::Client,
    url: Arc<str>,
    session: Arc<Mutex<Option<String>>>,
    version: Arc<Mutex<Option<String>>>,
    sent: Log,
    received: Log,
    problems: Problems,
    tx: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    rx: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    /// Whether every message is kept in `sent` and `received` (`import mcp` makes
    /// its catalog from them; a live session of a run keeps nothing).
    keep: bool,
}

impl HttpTransport {
    /// A transport for a live session: the run's shared client, nothing kept.
    pub(crate) fn live(client: reqwest::Client, url: &str) -> HttpTransport {
        let (tx, rx) = mpsc::unbounded_channel();
        HttpTransport {
            client,
            url: url.into(),
            session: Default::default(),
            version: Default::default(),
            sent: Default::default(),
            received: Default::default(),
            problems: Default::default(),
            tx,
            rx,
            keep: false,
        }
    }
}

/// A failed exchange.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HttpError(String);

fn push_line(log: &Log, v: &Value) {
    let mut l = log.lock().expect("log");
    l.extend_from_slice(v.to_string().as_bytes());
    l.push(b'\n');
}

impl HttpTransport {
    /// Queues the messages of one answer body (an object or a batch), keeping each.
    fn take(
        text: &str,
        received: &Log,
        tx: &mpsc::UnboundedSender<ServerJsonRpcMessage>,
        version: &Mutex<Option<String>>,
        problems: &Problems,
        keep: bool,
    ) {
        let v: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => {
                let shown: String = text.chars().take(120).collect();
                problems
                    .lock()
                    .expect("problems")
                    .push(format!("an answer that is not JSON: {shown:?}"));
                return;
            }
        };
        let items = match v {
            Value::Array(a) => a,
            v => vec![v],
        };
        for item in items {
            if keep {
                push_line(received, &item);
            }
            if let Some(pv) = item
                .pointer("/result/protocolVersion")
                .and_then(Value::as_str)
            {
                if item.pointer("/result/serverInfo").is_some() {
                    *version.lock().expect("version") = Some(pv.to_string());
                }
            }
            match serde_json::from_value::<ServerJsonRpcMessage>(item) {
                Ok(m) => {
                    let _ = tx.send(m);
                }
                Err(e) => problems
                    .lock()
                    .expect("problems")
                    .push(format!("a message that is not MCP: {e}")),
            }
        }
    }
}

impl Transport<RoleClient> for HttpTransport {
    type Error = HttpError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), HttpError>> + Send + 'static {
        let client = self.client.clone();
        let url = self.url.clone();
        let session = self.session.clone();
        let version = self.version.clone();
        let sent = self.sent.clone();
        let received = self.received.clone();
        let problems = self.problems.clone();
        let tx = self.tx.clone();
        let keep = self.keep;
        async move {
            let body = serde_json::to_value(&item).map_err(|e| HttpError(e.to_string()))?;
            if keep {
                push_line(&sent, &body);
            }
            let mut req = client
                .post(&*url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(
                    reqwest::header::ACCEPT,
                    "application/json, text/event-stream",
                )
                .body(body.to_string());
            if let Some(s) = session.lock().expect("session").clone() {
                req = req.header(SESSION, s);
            }
            if let Some(v) = version.lock().expect("version").clone() {
                req = req.header(VERSION, v);
            }
            let mut resp = req
                .send()
                .await
                .map_err(|e| HttpError(format!("POST {url}: {e}")))?;
            if let Some(s) = resp.headers().get(SESSION).and_then(|v| v.to_str().ok()) {
                *session.lock().expect("session") = Some(s.to_string());
            }
            let status = resp.status();
            if !status.is_success() {
                let text = resp.text().await.unwrap_or_default();
                let shown: String = text.chars().take(200).collect();
                return Err(HttpError(format!("POST {url}: HTTP {status}: {shown}")));
            }
            let sse = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|c| c.starts_with("text/event-stream"));
            if !sse {
                let text = resp
                    .text()
                    .await
                    .map_err(|e| HttpError(format!("POST {url}: {e}")))?;
                if !text.trim().is_empty() {
                    HttpTransport::take(&text, &received, &tx, &version, &problems, keep);
                }
                return Ok(());
            }
            // An SSE stream: events are separated by blank lines; their `data:` lines
            // joined make one message. The server ends the stream after its answer.
            let mut buf = String::new();
            let mut data: Vec<String> = Vec::new();
            loop {
                let chunk = resp
                    .chunk()
                    .await
                    .map_err(|e| HttpError(format!("POST {url}: {e}")))?;
                let Some(chunk) = chunk else { break };
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(i) = buf.find('\n') {
                    let line = buf[..i].trim_end_matches('\r').to_string();
                    buf.drain(..=i);
                    if line.is_empty() {
                        if !data.is_empty() {
                            let text = data.join("\n");
                            data.clear();
                            if !text.trim().is_empty() {
                                HttpTransport::take(
                                    &text, &received, &tx, &version, &problems, keep,
                                );
                            }
                        }
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
                    }
                }
            }
            if !data.is_empty() {
                let text = data.join("\n");
                HttpTransport::take(&text, &received, &tx, &version, &problems, keep);
            }
            Ok(())
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), HttpError> {
        let session = self.session.lock().expect("session").clone();
        if let Some(s) = session {
            let _ = self
                .client
                .delete(&*self.url)
                .header(SESSION, s)
                .timeout(Duration::from_secs(5))
                .send()
                .await;
        }
        self.rx.close();
        Ok(())
    }
}

/// Lists what the server at `url` offers, within `timeout`.
pub async fn capture(url: &str, version: &str, timeout: Duration) -> Result<Captured, ImportError> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| ImportError::Start {
            command: url.to_string(),
            source: std::io::Error::other(e),
        })?;
    let (tx, rx) = mpsc::unbounded_channel();
    let sent: Log = Default::default();
    let received: Log = Default::default();
    let problems: Problems = Default::default();
    let transport = HttpTransport {
        client,
        url: url.into(),
        session: Default::default(),
        version: Default::default(),
        sent: sent.clone(),
        received: received.clone(),
        problems: problems.clone(),
        tx,
        rx,
        keep: true,
    };
    let listed = tokio::time::timeout(timeout, list(transport, version)).await;
    let note = || {
        let p = problems.lock().expect("problems");
        match p.first() {
            None => String::new(),
            Some(first) => format!("; {} answer(s) were not MCP, the first: {first}", p.len()),
        }
    };
    let fail = |message: String| ImportError::Server {
        message,
        stderr_tail: None,
    };
    match listed {
        Err(_) => Err(fail(format!(
            "{url} did not finish answering within {} s{}",
            timeout.as_secs_f64(),
            note()
        ))),
        Ok(Err(e)) => Err(fail(format!(
            "{url} failed as an MCP server: {e}{}",
            note()
        ))),
        Ok(Ok(offered)) => assemble(&sent, &received, offered)
            .map_err(|e| fail(format!("{url} answered what is not MCP: {e}"))),
    }
}
