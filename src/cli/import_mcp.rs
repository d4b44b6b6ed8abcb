//! `discbench import mcp`: a live MCP server's catalog, written as a catalog file
//! scenarios include (`fixtures/catalogs/*.tools.json` are made this way), then read
//! back through the scenario loader so that a file it writes is one a scenario can
//! include.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::failure::{io, Failure};
use crate::exit;
use crate::mcp_client::{file, http, stdio, Captured, ImportError};
use crate::report;
use crate::scenario;

#[derive(Args, Debug)]
pub struct ImportMcpArgs {
    /// The server's name in scenarios (written as `serverInfo.name`) [default: the
    /// name the server gives itself]
    #[arg(long)]
    pub name: Option<String>,
    /// Where to write the catalog; `-` for standard output [default: NAME.tools.json]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The protocol version asked for in `initialize` (the server answers with the
    /// one it chose, which the catalog records).
    #[arg(long, value_name = "VERSION", default_value = crate::mcp_client::DEFAULT_PROTOCOL_VERSION)]
    pub protocol_version: String,
    /// Seconds the server has, from its start to the last page listed.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::mcp_client::DEFAULT_TIMEOUT.as_secs_f64())]
    pub timeout: f64,
    /// A Streamable HTTP server's endpoint, instead of a command
    /// (e.g. http://127.0.0.1:8765/mcp).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// The server's command and arguments, after `--` (it speaks MCP on stdio).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

pub fn import_mcp(a: ImportMcpArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    // A Duration holds at most u64::MAX seconds: 1e300 is not "positive" enough.
    let Some(timeout) = Some(a.timeout)
        .filter(|t| *t > 0.0)
        .and_then(|t| Duration::try_from_secs_f64(t).ok())
    else {
        return Err(Failure::Usage(
            "--timeout must be a positive number of seconds".into(),
        ));
    };
    let target = match (&a.url, a.command.split_first()) {
        (Some(url), _) => {
            if !(url.starts_with("http://") || url.starts_with("https://"))
                || reqwest::Url::parse(url).is_err()
            {
                return Err(Failure::Usage(format!(
                    "--url {url}: not an http:// or https:// URL"
                )));
            }
            Target::Url(url.clone())
        }
        (None, Some((command, args))) => Target::Command(command.clone(), args.to_vec()),
        (None, None) => return Err(Failure::Usage(
            "import mcp needs the server's command after `--` (e.g. `discbench import mcp -- uvx mcp-server-time`) or --url".into(),
        )),
    };
    if a.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(Failure::Usage("--name must not be empty".into()));
    }
    let versions = crate::mcp_client::protocol_versions();
    if !versions.contains(&a.protocol_version) {
        return Err(Failure::Usage(format!(
            "--protocol-version {}: not one with an initialize handshake; known: {}",
            a.protocol_version,
            versions.join(", ")
        )));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Infra(e.into()))?;
    let captured = rt
        .block_on(async {
            match &target {
                Target::Command(command, args) => {
                    stdio::capture(command, args, &a.protocol_version, timeout).await
                }
                Target::Url(url) => http::capture(url, &a.protocol_version, timeout).await,
            }
        })
        .map_err(|e| match e {
            ImportError::Start { .. } => Failure::Usage(e.to_string()),
            ImportError::Server { .. } => Failure::Infra(anyhow::anyhow!("{e}")),
        })?;
    let name = a.name.clone();
    let text = file::to_text(&captured.catalog(name.as_deref()));
    let summary = summary(&captured);
    match &a.out {
        Some(p) if p == Path::new("-") => {
            out.write_all(text.as_bytes()).map_err(io)?;
            writeln!(out).map_err(io)?;
            eprintln!("{summary}");
        }
        _ => {
            let path = a.out.clone().unwrap_or_else(|| {
                let n = name
                    .as_deref()
                    .or(captured.server_name())
                    .unwrap_or("server");
                PathBuf::from(format!("{}.tools.json", file_stem(n)))
            });
            report::write_atomic(&path, text.as_bytes()).map_err(Failure::Infra)?;
            // What was written must be includable: a server may send what the
            // scenario loader refuses (a tool without a name, two tools of one name).
            if let Err(e) = scenario::validate_file(&path) {
                eprintln!(
                    "{} was written, but a scenario cannot include it as it is:\n{e}",
                    path.display()
                );
                return Ok(exit::INFRA);
            }
            writeln!(out, "wrote {}: {summary}", path.display()).map_err(io)?;
        }
    }
    Ok(exit::OK)
}

/// Where the server is.
enum Target {
    Command(std::ffi::OsString, Vec<std::ffi::OsString>),
    Url(String),
}

/// `name version: N tools, …` for the message after an import.
fn summary(c: &Captured) -> String {
    let version = c
        .initialize
        .pointer("/serverInfo/version")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let mut parts = vec![format!("{} tools", c.tools.len())];
    let lists = [
        ("resources", &c.resources),
        ("resource templates", &c.resource_templates),
        ("prompts", &c.prompts),
    ];
    for (what, list) in lists {
        if let Some(items) = list.as_ref().filter(|l| !l.is_empty()) {
            parts.push(format!("{} {what}", items.len()));
        }
    }
    format!(
        "{} {version} ({}): {}",
        c.server_name().unwrap_or("(unnamed server)"),
        c.initialize
            .get("protocolVersion")
            .and_then(|v| v.as_str())
            .unwrap_or("no protocol version"),
        parts.join(", ")
    )
}

/// A server name as a file name: letters, digits, `-`, `_` and `.` kept, the rest `-`.
fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(['-', '.']).to_string();
    if s.is_empty() {
        "server".into()
    } else {
        s
    }
}
