//! What a protected `tools/call` costs over an unprotected one on the Rust MCP face, in one
//! process: rmcp's own client and server over an in-process byte stream (`tokio::io::duplex`, the
//! transport stdio uses, without the pipes), the same plain server served as it is (the baseline)
//! and wrapped in an `IdempotentServer`. Three kinds of call, in blocks whose order rotates each
//! round: unprotected, protected with new arguments (claim, body, completion) and a protected
//! repeat (a replay). On the memory store, and on Redis when `IDEMKIT_REDIS_URL` is set.
//!
//! `cargo bench --features mcp,redis --bench mcp -- [rounds] [calls]` (default 10 rounds of 2,000)

use std::sync::Arc;
use std::time::Instant;

use idemkit::mcp::{IdempotentServer, McpHints};
use idemkit::store::StoreOptions;
use idemkit::{CallContext, Executor, MemoryStore, Policy, Store, Tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

/// The plain server: `book` and `book_plain` do the same work.
#[derive(Clone)]
struct Desk;

impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Value::Object(schema) = json!({"type": "object"}) else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![
            rmcp::model::Tool::new("book", "Books", schema.clone()),
            rmcp::model::Tool::new("book_plain", "Books", schema),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "booking-{}-{}",
            arguments.get("guest").unwrap_or(&Value::Null),
            arguments.get("night").unwrap_or(&Value::Null)
        ))])
        .into())
    }
}

/// A client of `server` over an in-process byte stream.
async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(tokio::io::split(server_end)).await.unwrap();
        let _ = running.waiting().await;
    });
    ().serve(tokio::io::split(client_end)).await.unwrap()
}

fn call(name: &str, guest: &str, night: u64) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"guest": guest, "night": night}) else {
        unreachable!()
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn p50(samples: &mut [u128]) -> f64 {
    samples.sort_unstable();
    samples[samples.len() / 2] as f64 / 1000.0
}

fn mean(samples: &[u128]) -> f64 {
    samples.iter().sum::<u128>() as f64 / samples.len() as f64 / 1000.0
}

async fn measure(name: &str, store: Arc<dyn Store>, rounds: usize, calls: usize) {
    let tenant = format!("bench-{}", uuid::Uuid::new_v4());
    let plain = connect(Desk).await;
    let scope = tenant.clone();
    let server = IdempotentServer::new(Desk, Arc::new(Executor::new(store.clone())))
        .protect_tool(
            Tool::new("book", Policy::default()).unwrap(),
            McpHints::new(),
        )
        .unwrap()
        .with_context(move |_| CallContext::new().tenant(scope.clone()));
    let protected = connect(server).await;
    let kinds = ["unprotected", "protected, new key", "protected, repeat"];
    let mut samples: Vec<Vec<u128>> = vec![Vec::new(); 3];
    let mut next = 0u64;
    protected
        .call_tool(call("book", "repeat", 0))
        .await
        .unwrap();
    for round in 0..=rounds {
        for block in 0..kinds.len() {
            let kind = (round + block) % kinds.len();
            for _ in 0..calls {
                next += 1;
                let (client, request) = match kind {
                    0 => (&plain, call("book_plain", "g", next)),
                    1 => (&protected, call("book", "g", next)),
                    _ => (&protected, call("book", "repeat", 0)),
                };
                let start = Instant::now();
                let result = client.call_tool(request).await.unwrap();
                let took = start.elapsed().as_nanos();
                assert_ne!(
                    result.is_error,
                    Some(true),
                    "a bench call failed: {result:?}"
                );
                // Round 0 is the warm-up.
                if round > 0 {
                    samples[kind].push(took);
                }
            }
        }
    }
    let base = p50(&mut samples[0].clone());
    for (kind, label) in kinds.iter().enumerate() {
        let p = p50(&mut samples[kind]);
        println!(
            "duplex | {name} | {label} | {p:.1} | {:.1} | {:.2}× | {:+.1}",
            mean(&samples[kind]),
            p / base,
            p - base
        );
    }
    let _ = plain.cancel().await;
    let _ = protected.cancel().await;
    let _ = store.forget(Some(&tenant)).await;
}

fn main() {
    // `cargo bench` passes `--bench`; numbers are ours.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = numbers.first().copied().unwrap_or(10);
    let calls = numbers.get(1).copied().unwrap_or(2000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("{rounds} rounds of {calls} calls of each kind per store, in blocks");
        println!(
            "path | store | kind | p50 µs | mean µs | p50 ratio to unprotected | p50 added µs"
        );
        measure("memory", Arc::new(MemoryStore::new()), rounds, calls).await;
        match std::env::var("IDEMKIT_REDIS_URL") {
            Ok(url) if !url.is_empty() => {
                let options = StoreOptions {
                    key_prefix: Some("idemkit-bench:".to_owned()),
                    ..StoreOptions::default()
                };
                let store = idemkit::store::open(&url, &options).await.unwrap();
                measure("redis", store, rounds, calls).await;
            }
            _ => println!("IDEMKIT_REDIS_URL is not set: memory store only"),
        }
    });
}
