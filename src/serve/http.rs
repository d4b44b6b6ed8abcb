//! Streamable HTTP: rmcp's session-keeping service, one [`Handler`] per MCP session,
//! hosted with hyper on a TCP listener at the endpoint `/mcp`. A session ends when its
//! client sends `DELETE` (or the server stops): its handler is dropped and, tied to a
//! query, recorded. Only loopback `Host`s are accepted, against DNS rebinding.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use super::Served;

/// The endpoint's path.
pub const PATH: &str = "/mcp";

/// Serves on `listener` until `stop` is cancelled; every session is closed (and
/// recorded) before it returns.
pub async fn serve(
    served: Arc<Served>,
    listener: TcpListener,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let sessions = CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(sessions.clone());
    let service = StreamableHttpService::new(
        {
            let served = served.clone();
            move || Ok(Handler::new(served.clone()))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // A connection that failed before it began is the client's loss.
                Err(_) => continue,
            },
            _ = stop.cancelled() => break,
        };
        let service = service.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let hyper = TowerToHyperService::new(service);
            let conn = hyper::server::conn::http1::Builder::new()
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

/// The URL clients connect to.
pub fn url(addr: SocketAddr) -> String {
    format!("http://{addr}{PATH}")
}
