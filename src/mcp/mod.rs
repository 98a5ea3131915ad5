//! `guidebook mcp`: an MCP server on stdio, one process per agent session.
//!
//! Built on the official SDK (`rmcp`); its tools talk to the sidecar over its socket. Reads: MCP
//! requests on stdin, the sidecar's answers. Writes: MCP responses on stdout, logs on stderr.
//!
//! - [`tools`]: the tools, their input schemas and descriptions, and the sidecar call behind
//!   each agent tool.
//! - [`link`]: kept-alive connections to the sidecar, with autostart.
//!
//! **Invariant:** the `hook` tool runs `guidebook_hook::hook::handle_event`, the function the
//! `guidebook-hook` binary runs, so its text is byte for byte the shim's stdout for the same
//! event. It never fails the call: like the shim, anything that goes wrong is logged and
//! answered with empty text, within the hook timeout.

pub mod link;
pub mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use guidebook_hook::guard::Protected;
use guidebook_hook::protocol::CallError;
use link::{HookLink, Sidecar};

/// How `guidebook mcp` behaves, from its environment (the same variables as the shim's).
#[derive(Debug, Clone, Copy)]
pub struct McpOptions {
    /// A hook's whole budget, as `ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS` gives the shim's.
    pub hook_timeout: Duration,
    /// The guideline text's token budget per hook (`ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS`).
    pub max_tokens: Option<u64>,
    /// Patience for the agent tools' calls.
    pub tool_timeout: Duration,
    /// Whether the orchestrator's tools ([`tools::ORCHESTRATOR_TOOLS`]: QC results, reviews,
    /// token counts, A/B assignments) are offered. Off for the server agents load: the model
    /// being measured must not be able to write its own measurements.
    pub orchestrator: bool,
}

/// The MCP server: a handle on the sidecar and the options.
#[derive(Debug, Clone)]
pub struct GuidebookMcp {
    sidecar: Arc<Sidecar>,
    options: McpOptions,
    /// The sidecar's places the `hook` tool's guard keeps the agent away from.
    protected: Arc<Protected>,
}

impl GuidebookMcp {
    pub fn new(sidecar: Sidecar, options: McpOptions, protected: Protected) -> GuidebookMcp {
        GuidebookMcp {
            sidecar: Arc::new(sidecar),
            options,
            protected: Arc::new(protected),
        }
    }

    /// The `hook` tool: the shim's stdout for `event` (the line and its newline), or empty.
    fn hook(&self, event: Value) -> String {
        let mut link = HookLink {
            sidecar: &self.sidecar,
            deadline: Instant::now() + self.options.hook_timeout,
        };
        let answer = guidebook_hook::hook::handle_event(
            &event,
            self.options.max_tokens,
            || &*self.protected,
            &mut link,
        );
        match answer {
            // Past the deadline the shim would have been stopped by its watchdog: no output.
            Some(line) if Instant::now() < link.deadline => format!("{line}\n"),
            Some(_) => {
                tracing::warn!("hook: answer arrived too late; dropped");
                String::new()
            }
            None => String::new(),
        }
    }

    /// A call that blocks on the socket, off the async workers.
    fn call_tool_blocking(&self, name: &str, arguments: JsonObject) -> CallToolResult {
        if name == tools::HOOK {
            let text = self.hook(Value::Object(arguments));
            return CallToolResult::success(vec![ContentBlock::text(text)]);
        }
        if !self.options.orchestrator && tools::ORCHESTRATOR_TOOLS.contains(&name) {
            return tool_error(format!(
                "{name} is an orchestrator's tool and this server was not started with \
                 `guidebook mcp --orchestrator`"
            ));
        }
        let call = match tools::sidecar_call(name, arguments) {
            Some(Ok(call)) => call,
            Some(Err(why)) => return tool_error(format!("{name}: {why}")),
            None => return tool_error(format!("no tool named {name:?}")),
        };
        match self.sidecar.call(&call, self.options.tool_timeout) {
            Ok(result) => CallToolResult::success(vec![ContentBlock::text(result.to_string())]),
            Err(CallError::Exchange(e)) => {
                tool_error(format!("{name}: {e} ({})", self.sidecar.socket().display()))
            }
            Err(CallError::Response(e)) => tool_error(format!("{name}: {e}")),
        }
    }
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for GuidebookMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("guidebook", crate::VERSION))
            .with_instructions(
                "Adaptive Guidebook: the team's development guidelines for the files you change. \
                 Call search_guidelines with the absolute paths of files you are about to change \
                 or have changed, and follow what it returns. record_error and breaker_status \
                 talk to the circuit breaker that stops a session stuck on the same error.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::offered(
            self.options.orchestrator,
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let name = request.name.to_string();
        let arguments = request.arguments.unwrap_or_default();
        let result =
            tokio::task::spawn_blocking(move || server.call_tool_blocking(&name, arguments))
                .await
                .unwrap_or_else(|e| tool_error(format!("internal error: {e}")));
        Ok(result.into())
    }
}

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("starting the MCP runtime: {0}")]
    Runtime(std::io::Error),
    #[error("MCP handshake on stdio failed: {0}")]
    Handshake(String),
    #[error("MCP session ended with an error: {0}")]
    Session(String),
}

/// Serves MCP on stdin/stdout until the client closes stdin. The sidecar is warmed up (and
/// started, if allowed) in the background at once, so the first hook finds it ready.
pub fn serve(server: GuidebookMcp) -> Result<(), McpError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    runtime.block_on(async move {
        let sidecar = server.sidecar.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = sidecar.warm_up(Instant::now() + Duration::from_secs(10)) {
                tracing::info!(
                    "no sidecar yet at {}: {e}; hooks answer empty until one runs",
                    sidecar.socket().display()
                );
            }
        });
        let running = server
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| McpError::Handshake(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        Ok(())
    })?;
    // A warm-up still waiting for a starting sidecar must not hold the exit up.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(())
}
