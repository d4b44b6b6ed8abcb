//! Streamable HTTP: rmcp's session-keeping service, one [`Handler`] per MCP session,
//! hosted with hyper on a TCP listener at the endpoint `/mcp`. A session ends when its
//! client sends `DELETE`, when it has been idle for [`HttpOptions::idle`], or when the
//! server stops: its handler is dropped and, tied to a query, recorded. Only loopback
//! `Host`s are accepted, against DNS rebinding.
//!
//! In front of rmcp's service, [`route`] answers what it would not answer as the
//! transport says: any path but the endpoint is `404`; a body past
//! [`HttpOptions::max_body`] is `413` before it is read whole; a `POST` body that is
//! not JSON is `400` with a JSON-RPC parse error (-32700, no id), and JSON that is not
//! a JSON-RPC message `400` with an invalid-request error (-32600). A body it refuses
//! is still read (and dropped, up to four times the limit) before the answer, so that
//! a client still sending reads the answer rather than a reset connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use super::Served;

/// The endpoint's path.
pub const PATH: &str = "/mcp";

/// How long a client may take to send a request's headers, or its body.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause after a failed `accept` (file descriptors exhausted, mostly).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Limits of the HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpOptions {
    /// Bytes of one request body at most.
    pub max_body: usize,
    /// A session with no request for this long is ended (and recorded).
    pub idle: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_body: 1 << 20,
            idle: Duration::from_secs(300),
        }
    }
}

type Service = StreamableHttpService<Handler, LocalSessionManager>;
type Answer = hyper::Response<BoxBody<Bytes, Infallible>>;

/// Serves on `listener` until `stop` is cancelled; every session is closed (and
/// recorded) before it returns.
pub async fn serve(
    served: Arc<Served>,
    listener: TcpListener,
    stop: CancellationToken,
    options: HttpOptions,
) -> std::io::Result<()> {
    let sessions = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(sessions.clone())
        .with_max_request_body_bytes(options.max_body);
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.idle);
    let service: Arc<Service> = Arc::new(StreamableHttpService::new(
        {
            let served = served.clone();
            move || Ok(Handler::new(served.clone()))
        },
        Arc::new(manager),
        config,
    ));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // A connection that failed before it began is the client's loss; but
                // out of file descriptors, accept fails at once every time: wait a
                // little rather than spin.
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let service = service.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let hyper = hyper::service::service_fn(move |req| {
                let service = service.clone();
                async move { Ok::<_, Infallible>(route(req, &service, options).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), hyper);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
                }
            }
        });
        // Finished connections are not kept.
        while connections.try_join_next().is_some() {}
    }
    // Every session ends: their handlers drop and record.
    sessions.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(3), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    // Give the session workers a moment to drop their handlers.
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(service);
    Ok(())
}

/// A plain-text answer.
fn text(status: http::StatusCode, body: String) -> Answer {
    hyper::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("a valid response")
}

/// A JSON-RPC error answer, as the Streamable HTTP transport gives one for input it
/// cannot accept: `400` with the error, `id` as the request's (null when unknown).
fn jsonrpc_error(id: Value, code: i64, message: String) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    hyper::Response::builder()
        .status(http::StatusCode::BAD_REQUEST)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("a valid response")
}

/// A request body read whole up to a limit, the rest drained.
enum Body {
    Whole(Bytes),
    /// Past the limit (the rest was read and dropped, up to a cap).
    TooLarge,
    /// It did not arrive in time, or could not be read.
    Failed(String),
}

/// Reads `body`, keeping at most `keep` bytes; past them it goes on reading (and
/// dropping) up to `drain` bytes in all, so that the client, still sending, reads the
/// answer instead of a reset connection. Within [`READ_TIMEOUT`].
async fn read_body(body: Incoming, keep: usize, drain: usize) -> Body {
    let read = async {
        let mut body = std::pin::pin!(body);
        let mut kept = bytes::BytesMut::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if seen <= keep {
                kept.extend_from_slice(&data);
            } else if seen > drain {
                break;
            }
        }
        Ok::<_, String>((kept.freeze(), seen > keep))
    };
    match tokio::time::timeout(READ_TIMEOUT, read).await {
        Err(_) => Body::Failed("the body did not arrive in time".into()),
        Ok(Err(e)) => Body::Failed(e),
        Ok(Ok((_, true))) => Body::TooLarge,
        Ok(Ok((b, false))) => Body::Whole(b),
    }
}

/// One HTTP request: checked here, then handed to rmcp's service.
async fn route(req: hyper::Request<Incoming>, service: &Service, o: HttpOptions) -> Answer {
    // Bodies past this are not drained: the connection is closed on them.
    let drain = o.max_body.saturating_mul(4);
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // A body past `--max-body` may be left partly unread: the answer says the
    // connection ends with it, so the client opens a new one for its next request
    // instead of sending it down a connection the server is closing.
    let too_large = || {
        closing(text(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Payload Too Large: a request body may hold {} bytes\n",
                o.max_body
            ),
        ))
    };
    if req.uri().path() != PATH {
        if declared.is_none_or(|n| n <= drain as u64) {
            let _ = read_body(req.into_body(), 0, drain).await;
        }
        // Whether a chunked body was read to its end is not known here; a client
        // that asks off the endpoint can open a new connection.
        return closing(text(
            http::StatusCode::NOT_FOUND,
            format!("Not Found: the MCP endpoint is {PATH}\n"),
        ));
    }
    if req.method() != http::Method::POST {
        // rmcp answers the rest (GET streams, DELETE, 405); none of them has a body
        // to read, but one that comes is read first, as above.
        if declared.is_some_and(|n| n > drain as u64) {
            return closing(service.handle(req).await);
        }
        let (parts, body) = req.into_parts();
        let read = read_body(body, 0, drain).await;
        let answer = service
            .handle(hyper::Request::from_parts(parts, Full::new(Bytes::new())))
            .await;
        // A body where none belongs (perhaps not read to its end): a new connection
        // for the next request.
        return match read {
            Body::Whole(_) => answer,
            _ => closing(answer),
        };
    }
    if declared.is_some_and(|n| n > o.max_body as u64) {
        if declared.is_some_and(|n| n <= drain as u64) {
            let _ = read_body(req.into_body(), 0, drain).await;
        }
        return too_large();
    }
    let json = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    let (parts, body) = req.into_parts();
    let bytes = match read_body(body, o.max_body, drain).await {
        Body::Whole(b) => b,
        Body::TooLarge => return too_large(),
        Body::Failed(why) => {
            return text(
                http::StatusCode::BAD_REQUEST,
                format!("Bad Request: cannot read the body: {why}\n"),
            )
        }
    };
    if json {
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => return jsonrpc_error(Value::Null, -32700, format!("Parse error: {e}")),
        };
        if let Err(e) = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
            let id = match value.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                _ => Value::Null,
            };
            return jsonrpc_error(
                id,
                -32600,
                format!("Invalid Request: not a JSON-RPC message MCP defines: {e}"),
            );
        }
    }
    // rmcp answers a body that is not `application/json` (415) and the rest.
    service
        .handle(hyper::Request::from_parts(parts, Full::new(bytes)))
        .await
}

/// `answer`, ending its connection (`Connection: close`).
fn closing(mut answer: Answer) -> Answer {
    answer.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    answer
}

/// The URL clients connect to.
pub fn url(addr: SocketAddr) -> String {
    format!("http://{addr}{PATH}")
}
