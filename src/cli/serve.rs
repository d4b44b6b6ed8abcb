//! `discbench serve`: one scenario under one mode as a real MCP server. Over stdio the
//! client starts this process and the session lasts until the client closes stdin
//! (or SIGINT / SIGTERM); standard output carries only MCP messages, and everything
//! this command says goes to stderr. Over Streamable HTTP it serves sessions until
//! SIGINT / SIGTERM, then closes (and records) every one still open.

use std::sync::Arc;
use std::time::Duration;

use super::args::{Common, ServeArgs};
use super::config;
use super::environment::Environment;
use super::failure::Failure;
use crate::exit;
use crate::serve::handler::Handler;
use crate::serve::record::Recorder;
use crate::serve::{ServeOptions, Served};

/// The mode spec `serve` runs: as given, or — a server never sees the query, so the
/// selection step is off whatever the spec says — with `selection=off` added when the
/// spec is refused only because a kind it names cannot run with the selection step
/// (`skills=inline,mcp=resource`).
fn served_mode(spec: &str) -> String {
    if crate::strategy::Mode::parse(spec).is_err() && !spec.contains("selection=") {
        let off = format!("{spec},selection=off");
        if crate::strategy::Mode::parse(&off).is_ok() {
            return off;
        }
    }
    spec.to_string()
}

pub fn serve(a: ServeArgs, _env: Environment) -> Result<i32, Failure> {
    let listen: Option<std::net::SocketAddr> = match a.transport.as_str() {
        "stdio" => None,
        "http" => Some(a.listen.parse().map_err(|e| {
            Failure::Usage(format!("--listen {}: {e} (e.g. 127.0.0.1:8765)", a.listen))
        })?),
        other => {
            return Err(Failure::Usage(format!(
                "--transport {other}: stdio or http"
            )))
        }
    };
    if !(a.idle_timeout.is_finite() && a.idle_timeout > 0.0 && a.idle_timeout <= 1e7) {
        return Err(Failure::Usage(format!(
            "--idle-timeout {}: a number of seconds above 0",
            a.idle_timeout
        )));
    }
    if a.max_body < 1024 {
        return Err(Failure::Usage(format!(
            "--max-body {}: at least 1024 bytes",
            a.max_body
        )));
    }
    let options = crate::serve::http::HttpOptions {
        max_body: a.max_body,
        idle: Duration::from_secs_f64(a.idle_timeout),
    };
    let p = config::prepare(&Common {
        scenarios: vec![a.scenario.clone()],
        modes: vec![served_mode(&a.mode)],
        tokenizer: a.tokenizer.clone(),
        templates: a.templates.clone(),
        selection_threshold: None,
        selection_max: None,
        unloaded_calls: None,
        row_limit: None,
        result_max_chars: None,
        result_max_items: None,
        result_budget: None,
        skill_stub_chars: None,
        cache_discount: None,
        sql: a.sql.clone(),
        queries: Vec::new(),
        tags: Vec::new(),
        recorded_protocol: None,
        sweep: None,
    })?;
    let [scenario] = <[_; 1]>::try_from(p.scenarios).map_err(|v: Vec<_>| {
        Failure::Usage(format!(
            "serve takes one scenario file; {} holds {}",
            a.scenario.display(),
            v.len()
        ))
    })?;
    let [mode] = <[_; 1]>::try_from(p.modes)
        .map_err(|_| Failure::Usage("serve takes one --mode".to_string()))?;
    let recorder = match &a.record {
        Some(dir) => Some(Arc::new(Recorder::open(dir).map_err(Failure::Infra)?)),
        None => None,
    };
    let served = Served::new(
        scenario,
        ServeOptions {
            mode,
            templates: p.templates,
            protocol: p.protocol,
            counter: Arc::new(p.counter),
            query: a.query.clone(),
            model: a.model.clone(),
            recorder,
        },
    )
    .map_err(|e| Failure::Usage(e.to_string()))?;
    let served = Arc::new(served);
    if served.recorder.is_some() && served.query.is_none() {
        eprintln!(
            "discbench serve: --record without --query: sessions that name a query (HTTP: /mcp?query=ID) are recorded as scored outcomes, the others as unscored sessions in sessions.jsonl"
        );
    }
    let what = format!(
        "discbench serve: {} under {} ({})",
        served.scenario.name,
        served.mode_label,
        served.composite.mode.canonical_spec()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Infra(e.into()))?;
    let result = match listen {
        None => {
            eprintln!("{what} over stdio");
            rt.block_on(stdio(served))
        }
        Some(addr) => rt.block_on(http(served, addr, what, options)),
    };
    // A read of stdin cannot be cancelled: do not wait for one at shutdown.
    rt.shutdown_timeout(Duration::from_millis(200));
    result.map(|_| exit::OK)
}

/// Serves Streamable HTTP on `addr` until SIGINT or SIGTERM.
async fn http(
    served: Arc<Served>,
    addr: std::net::SocketAddr,
    what: String,
    options: crate::serve::http::HttpOptions,
) -> Result<(), Failure> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Infra(anyhow::anyhow!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::Infra(e.into()))?;
    eprintln!("{what} at {}", crate::serve::http::url(bound));
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(crate::serve::http::serve(
        served,
        listener,
        stop.clone(),
        options,
    ));
    signal().await;
    eprintln!("discbench serve: stopping");
    stop.cancel();
    server
        .await
        .map_err(|e| Failure::Infra(anyhow::anyhow!("the HTTP server failed: {e}")))?
        .map_err(|e| Failure::Infra(e.into()))
}

/// SIGINT or SIGTERM.
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        let wait = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wait(term.take()) => {}
            _ = wait(int.take()) => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Serves one session over stdin/stdout until the client closes stdin or a signal.
async fn stdio(served: Arc<Served>) -> Result<(), Failure> {
    use rmcp::ServiceExt;
    let service = match Handler::new(served)
        .serve(rmcp::transport::io::stdio_pipes())
        .await
    {
        Ok(s) => s,
        // The client went away before it initialized: nothing to serve.
        Err(e) => {
            eprintln!("discbench serve: the session ended before it began: {e}");
            return Ok(());
        }
    };
    let cancel = service.cancellation_token();
    let signals = signal();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let r = tokio::select! {
        r = &mut waiting => r,
        _ = signals => {
            // The session ends as if the client had left: it is recorded.
            cancel.cancel();
            waiting.await
        }
    };
    r.map(|_| ())
        .map_err(|e| Failure::Infra(anyhow::anyhow!("the MCP service failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_refused_for_the_selection_step_alone_is_served() {
        assert!(crate::strategy::Mode::parse("skills=inline,mcp=resource").is_err());
        assert_eq!(
            served_mode("skills=inline,mcp=resource"),
            "skills=inline,mcp=resource,selection=off"
        );
        assert_eq!(served_mode("progressive"), "progressive");
        // Another mistake stays the user's to see.
        assert_eq!(served_mode("mcp=nonsense"), "mcp=nonsense");
    }
}
