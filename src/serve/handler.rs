//! [`Handler`]: one MCP session of a served scenario, as `rmcp` sees it. It advertises
//! tools (and, under `mcp-resource`, resources), gives the composite's system prompt
//! as the server's `instructions`, and hands every request to its
//! [`Session`]. Unknown tools and resources are JSON-RPC errors (invalid params,
//! resource not found); a call the protocol refuses (`TOOL_DESCRIPTION_REQUIRED`, a
//! schema violation) is a tool result with `isError`, so the client's model reads the
//! recovery hint; so is a call that fails (SQL that fails or hits a limit, arguments
//! the schema rejects). When the session ends — the client closed stdin, or the HTTP
//! session was deleted or went idle — the handler is dropped and the session is
//! recorded: scored when it is tied to a query, else as an unscored session.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, InitializeRequestParams, InitializeResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::record::SESSIONS;
use super::session::{Ended, Refusal, Session};
use super::Served;

/// One MCP session.
pub struct Handler {
    served: Arc<Served>,
    session: Mutex<Session>,
}

impl Handler {
    pub fn new(served: Arc<Served>) -> Handler {
        Handler {
            session: Mutex::new(Session::new(served.clone())),
            served,
        }
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        // A panic while answering must not take later requests down with it.
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the session from an async handler. A call may run SQL for up to its
    /// time limit, and a request waits for the session's lock while another holds it:
    /// on the multi-threaded runtime of `serve` both block in place, so the runtime
    /// moves its other tasks (accepting, timeouts, other sessions) to a new worker
    /// instead of stalling behind them.
    fn with_session<T>(&self, f: impl FnOnce(&mut Session) -> T) -> T {
        let run = || f(&mut self.session());
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(run),
            _ => run(),
        }
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        let Some(recorder) = self.served.recorder.clone() else {
            return;
        };
        let ended = self.session().end(&recorder.run_id);
        match ended {
            Some(Ended::Scored(o)) => match recorder.append(*o) {
                Ok(key) => eprintln!(
                    "discbench serve: recorded {key} in {}",
                    recorder.dir().display()
                ),
                Err(e) => eprintln!("discbench serve: cannot record the session: {e:#}"),
            },
            Some(Ended::Unscored(s)) => match recorder.append_unscored(*s) {
                Ok(n) => eprintln!(
                    "discbench serve: recorded unscored session {n} (tied to no query) in {}",
                    recorder.dir().join(SESSIONS).display()
                ),
                Err(e) => eprintln!("discbench serve: cannot record the session: {e:#}"),
            },
            None => {}
        }
    }
}

/// The client-to-server request methods MCP defines.
const MCP_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

fn refusal(r: Refusal) -> ErrorData {
    match r {
        Refusal::UnknownTool(m) => ErrorData::invalid_params(m, None),
        Refusal::UnknownResource(m) => ErrorData::resource_not_found(m, None),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let caps = if self.served.resource_mode() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        let name = format!("discbench-{}", self.served.scenario.name);
        InitializeResult::new(caps)
            .with_server_info(
                Implementation::new(name, env!("CARGO_PKG_VERSION")).with_title(format!(
                    "{} under {} (discbench)",
                    self.served.scenario.name, self.served.mode_label
                )),
            )
            .with_instructions(self.served.composite.system())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        {
            let mut session = self.session();
            session.set_client(&request.client_info.name, &request.client_info.version);
            // Over Streamable HTTP the endpoint may name the query: `/mcp?query=ID`.
            let asked = context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|p| p.uri.query())
                .and_then(|q| {
                    q.split('&')
                        .filter_map(|kv| kv.split_once('='))
                        .find(|(k, _)| *k == "query")
                        .map(|(_, v)| v.to_string())
                });
            if let Some(id) = asked {
                if let Err(e) = session.tie(&id) {
                    // A session refused at its start held nothing worth recording.
                    session.discard();
                    return Err(ErrorData::invalid_params(e, None));
                }
            }
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.with_session(|s| s.list_tools());
        let tools = tools
            .into_iter()
            .map(|t| {
                let schema = match t.parameters {
                    Value::Object(m) => m,
                    _ => Default::default(),
                };
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let answer = self
            .with_session(|s| s.call(&request.name, &args))
            .map_err(refusal)?;
        let content = vec![ContentBlock::text(answer.content)];
        Ok(if answer.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let listed = self.with_session(|s| s.list_resources());
        let resources = listed
            .into_iter()
            .map(|r| {
                Resource::new(r.uri, r.name)
                    .with_description(r.description)
                    .with_mime_type(r.mime_type)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    /// A request rmcp could not read as any MCP request: a method MCP defines whose
    /// params do not fit (`tools/call` with a number for a name) is invalid params,
    /// anything else an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method;
        if MCP_METHODS.contains(&method.as_str()) {
            Err(ErrorData::invalid_params(
                format!("malformed params for {method}"),
                None,
            ))
        } else {
            Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("unknown method {method}"),
                None,
            ))
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let text = self.with_session(|s| s.read(&uri)).map_err(refusal)?;
        let contents = vec![ResourceContents::text(text, uri).with_mime_type("application/json")];
        Ok(ReadResourceResult::new(contents).into())
    }
}
