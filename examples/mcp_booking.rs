//! An MCP server over stdio whose `book_room` tool runs at most once per booking, however often
//! a client (or a model) retries it.
//!
//! ```text
//! cargo run --features mcp --example mcp_booking              # memory store
//! cargo run --features mcp,redis --example mcp_booking -- redis://127.0.0.1:6379/0
//! ```
//!
//! Environment: `MCP_BOOKING_LOG` names a file the body appends one line to per run (how the
//! tests count effects across processes); `MCP_BOOKING_DELAY_MS` makes the body that slow;
//! `MCP_BOOKING_TENANT` is the tenant of every call (a stdio server has one client: its
//! session's tenant comes from its launcher, never from the arguments).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use idemkit::mcp::{IdempotentServer, McpHints};
use idemkit::store::StoreOptions;
use idemkit::{CallContext, Effect, Executor, Policy, Tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

/// The plain MCP server: it knows nothing of idemkit.
#[derive(Clone)]
struct Booking {
    log: Option<String>,
    delay: Duration,
}

impl ServerHandler for Booking {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"guest": {"type": "string"}, "night": {"type": "string"}},
            "required": ["guest", "night"]
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        let tool = rmcp::model::Tool::new("book_room", "Books a room for one night", schema);
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "book_room" {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}`", request.name),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let guest = arguments
            .get("guest")
            .and_then(|g| g.as_str())
            .unwrap_or("");
        tokio::time::sleep(self.delay).await;
        // The side effect.
        if let Some(path) = &self.log {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            writeln!(file, "booked {guest}")
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        }
        let confirmation = format!("booking-{guest}-{}", uuid::Uuid::new_v4());
        Ok(CallToolResult::success(vec![ContentBlock::text(confirmation)]).into())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1);
    let booking = Booking {
        log: std::env::var("MCP_BOOKING_LOG").ok(),
        delay: Duration::from_millis(
            std::env::var("MCP_BOOKING_DELAY_MS")
                .ok()
                .and_then(|d| d.parse().ok())
                .unwrap_or(0),
        ),
    };
    let tenant = std::env::var("MCP_BOOKING_TENANT").unwrap_or_else(|_| "demo".to_owned());
    idemkit::runtime::block_on(async move {
        let store = match url {
            Some(url) => idemkit::store::open(&url, &StoreOptions::default()).await?,
            None => Arc::new(idemkit::MemoryStore::new()) as Arc<dyn idemkit::Store>,
        };
        let executor = Arc::new(Executor::new(store));
        // A booking acts, and a failed one may have acted: EFFECTFUL (a failure is held).
        let book = Tool::new(
            "book_room",
            Policy::default().with_effect(Effect::Effectful),
        )?;
        let server = IdempotentServer::new(booking, executor)
            .protect_tool(book, McpHints::new().destructive(false).open_world(true))?
            .with_context(move |_| CallContext::new().tenant(tenant.clone()));
        let running = server.clone().serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        // The client has gone: let a call still running record its outcome before exiting.
        server.settled().await;
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}
