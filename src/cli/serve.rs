//! `discbench serve`: one scenario under one mode as a real MCP server. Over stdio the
//! client starts this process and the session lasts until the client closes stdin
//! (or SIGINT / SIGTERM); standard output carries only MCP messages, and everything
//! this command says goes to stderr.

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

pub fn serve(a: ServeArgs, _env: Environment) -> Result<i32, Failure> {
    if a.transport != "stdio" {
        return Err(Failure::Usage(format!(
            "--transport {}: only stdio is served",
            a.transport
        )));
    }
    let p = config::prepare(&Common {
        scenarios: vec![a.scenario.clone()],
        modes: vec![a.mode.clone()],
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
        recorded_protocol: None,
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
            "discbench serve: --record without --query: sessions are served but not recorded (an outcome is scored against a query)"
        );
    }
    eprintln!(
        "discbench serve: {} under {} ({}) over stdio",
        served.scenario.name,
        served.mode_label,
        served.composite.mode.canonical_spec()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Infra(e.into()))?;
    let result = rt.block_on(stdio(served));
    // A read of stdin cannot be cancelled: do not wait for one at shutdown.
    rt.shutdown_timeout(Duration::from_millis(200));
    result.map(|_| exit::OK)
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
    let signals = async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate()).ok();
            let mut int = signal(SignalKind::interrupt()).ok();
            tokio::select! {
                _ = async { match term.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
                _ = async { match int.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    };
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
