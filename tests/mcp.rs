//! Tools served over MCP (SPEC v1.2 §9 rule 4) through rmcp's own transports and client:
//! streamable HTTP (an axum server on 127.0.0.1:0, rmcp's reqwest client) and stdio (the
//! `mcp_booking` example as a child process, rmcp's `TokioChildProcess` client). Effects are
//! counted where the body runs: an `AtomicUsize` in the tool, or the lines the example appends
//! to a file (one per run, across processes).

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use idemkit::mcp::{IdempotentServer, McpHints};
use idemkit::{
    derive_key, CallContext, Effect, Executor, KeyInput, KeyScope, KeyStrategy, MemoryStore,
    Policy, Store, Tool,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    MetaObject, PaginatedRequestParams, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// A plain MCP server (it knows nothing of idemkit) whose tools count their body runs.
#[derive(Clone, Default)]
struct Desk {
    runs: Arc<AtomicUsize>,
    /// How long `book` takes.
    delay: Duration,
}

fn schema() -> serde_json::Map<String, Value> {
    let Value::Object(schema) = json!({"type": "object"}) else {
        unreachable!()
    };
    schema
}

impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool = |name: &'static str| rmcp::model::Tool::new(name, name, schema());
        Ok(ListToolsResult::with_all_items(vec![
            tool("book"),
            tool("charge"),
            tool("lookup"),
            tool("ticket"),
            tool("plain"),
            tool("slow"),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(match request.name.as_ref() {
            "book" => {
                tokio::time::sleep(self.delay).await;
                CallToolResult::success(vec![ContentBlock::text(format!(
                    "booked {} (run {run})",
                    arguments["guest"]
                ))])
            }
            "slow" => {
                tokio::time::sleep(Duration::from_millis(800)).await;
                CallToolResult::success(vec![ContentBlock::text(format!("slow run {run}"))])
            }
            // A payment whose upstream timed out: it may have charged.
            "charge" => CallToolResult::error(vec![ContentBlock::text("upstream timed out")]),
            _ => CallToolResult::success(vec![ContentBlock::text(format!("run {run}"))]),
        }
        .into())
    }
}

/// The idemkit server over `desk`; the tenant comes from the `x-tenant` header.
fn protected(desk: Desk, store: Arc<dyn Store>) -> IdempotentServer<Desk> {
    IdempotentServer::new(desk, Arc::new(Executor::new(store)))
        .protect_tool(
            Tool::new("book", Policy::default()).unwrap(),
            McpHints::new().destructive(false).open_world(false),
        )
        .unwrap()
        .protect_tool(
            Tool::new("charge", Policy::default().with_effect(Effect::Effectful)).unwrap(),
            McpHints::new().destructive(true).open_world(true),
        )
        .unwrap()
        .protect("lookup", Policy::default().with_effect(Effect::ReadOnly))
        .unwrap()
        .protect("ticket", Policy::new(KeyStrategy::Uuid))
        .unwrap()
        .protect_tool(
            Tool::with_timeout("slow", Policy::default(), Some(Duration::from_millis(300)))
                .unwrap(),
            McpHints::new(),
        )
        .unwrap()
        .with_context(|context| {
            let tenant = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get("x-tenant"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("nobody")
                .to_owned();
            CallContext::new().tenant(tenant)
        })
}

/// Serves `server` over streamable HTTP on 127.0.0.1; the URL and the token that stops it.
async fn serve_http(server: IdempotentServer<Desk>) -> (String, CancellationToken) {
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(Duration::from_millis(100)))
        .with_cancellation_token(stop.child_token());
    let service: StreamableHttpService<IdempotentServer<Desk>, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let until = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { until.cancelled_owned().await })
            .await;
    });
    (format!("http://{address}/mcp"), stop)
}

/// An rmcp client over streamable HTTP, acting for `tenant`.
async fn http_client(url: &str, tenant: &str) -> RunningService<RoleClient, ()> {
    let headers = HashMap::from([(
        HeaderName::from_static("x-tenant"),
        HeaderValue::from_str(tenant).unwrap(),
    )]);
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn call(name: &str, arguments: Value, key: Option<&str>) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    if let Some(key) = key {
        let mut meta = MetaObject::new();
        meta.0
            .insert("idempotencyKey".to_owned(), Value::String(key.to_owned()));
        params.meta = Some(RequestMetaObject(meta));
    }
    params
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn meta<'a>(result: &'a CallToolResult, field: &str) -> &'a Value {
    result
        .meta
        .as_ref()
        .and_then(|m| m.0.get(field))
        .unwrap_or(&Value::Null)
}

fn memory() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

async fn redis() -> Option<Arc<dyn Store>> {
    let url = common::env_url("IDEMKIT_REDIS_URL")?;
    let options = common::prefix_options(&common::unique_prefix("mcp"));
    Some(idemkit::store::open(&url, &options).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_gone_mid_call_and_a_new_one_get_one_effect() {
    let desk = Desk {
        delay: Duration::from_millis(600),
        ..Desk::default()
    };
    let runs = desk.runs.clone();
    let (url, stop) = serve_http(protected(desk, memory())).await;
    let first = http_client(&url, "acme").await;
    let peer = first.peer().clone();
    let gone = tokio::spawn(async move {
        peer.call_tool(call("book", json!({"guest": "ana"}), None))
            .await
    });
    // The body is running: the first client disconnects.
    while runs.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gone.abort();
    first.cancel().await.unwrap();

    let second = http_client(&url, "acme").await;
    let result = second
        .call_tool(call("book", json!({"guest": "ana"}), None))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text(&result), "booked \"ana\" (run 1)");
    assert_eq!(meta(&result, "replayed"), &json!(true));
    // The key every face derives: tool name, tenant, canonical JSON of the arguments.
    let scope = KeyScope {
        tenant: Some("acme"),
        ..KeyScope::new("book")
    };
    let expected = derive_key(&scope, KeyInput::Json(r#"{"guest":"ana"}"#), &[]).unwrap();
    assert_eq!(meta(&result, "idempotencyKey"), &json!(expected.hex()));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one effect");

    // Another tenant (its header) is another key: it runs.
    let other = http_client(&url, "globex").await;
    let result = other
        .call_tool(call("book", json!({"guest": "ana"}), None))
        .await
        .unwrap();
    assert_eq!(text(&result), "booked \"ana\" (run 2)");
    assert_eq!(meta(&result, "replayed"), &json!(false));
    stop.cancel();
}

/// 8 concurrent identical calls, each from its own client: one body run, one answer for all.
async fn eight_concurrent_duplicates(store: Arc<dyn Store>) {
    let desk = Desk {
        delay: Duration::from_millis(300),
        ..Desk::default()
    };
    let runs = desk.runs.clone();
    let (url, stop) = serve_http(protected(desk, store)).await;
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(http_client(&url, "acme").await);
    }
    let mut calls = tokio::task::JoinSet::new();
    for client in &clients {
        let peer = client.peer().clone();
        calls.spawn(async move {
            peer.call_tool(call(
                "book",
                json!({"guest": "bo", "night": "2026-12-24"}),
                None,
            ))
            .await
        });
    }
    let results: Vec<CallToolResult> = calls
        .join_all()
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one effect");
    for result in &results {
        assert_eq!(text(result), "booked \"bo\" (run 1)", "{result:?}");
    }
    let fresh = results
        .iter()
        .filter(|r| meta(r, "replayed") == &json!(false))
        .count();
    assert_eq!(fresh, 1, "exactly one call ran the body");
    let keys: std::collections::HashSet<&Value> =
        results.iter().map(|r| meta(r, "idempotencyKey")).collect();
    assert_eq!(keys.len(), 1, "one key");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_duplicates_run_once_on_memory() {
    eight_concurrent_duplicates(memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_duplicates_run_once_on_redis() {
    let Some(store) = redis().await else { return };
    eight_concurrent_duplicates(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_carries_the_policies_annotations() {
    let (url, stop) = serve_http(protected(Desk::default(), memory())).await;
    let client = http_client(&url, "acme").await;
    let tools = client.list_all_tools().await.unwrap();
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.clone().unwrap_or_default();
        (
            a.read_only_hint,
            a.idempotent_hint,
            a.destructive_hint,
            a.open_world_hint,
        )
    };
    // HASH_INPUT, IDEMPOTENT; declared hints.
    assert_eq!(
        hints("book"),
        (Some(false), Some(true), Some(false), Some(false))
    );
    // HASH_INPUT, EFFECTFUL.
    assert_eq!(
        hints("charge"),
        (Some(false), Some(true), Some(true), Some(true))
    );
    assert_eq!(hints("lookup"), (Some(true), None, None, None));
    assert_eq!(hints("ticket"), (Some(false), Some(false), None, None));
    // Not protected: as the server lists it.
    assert_eq!(hints("plain"), (None, None, None, None));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protection_naming_no_served_tool_is_refused_at_tools_list_and_first_call() {
    let desk = Desk::default();
    let runs = desk.runs.clone();
    let server = protected(desk, memory())
        .protect("bok", Policy::default())
        .unwrap();
    let (url, stop) = serve_http(server).await;
    let client = http_client(&url, "acme").await;
    let error = client.list_all_tools().await.unwrap_err().to_string();
    assert!(error.contains("`bok`"), "{error}");
    assert!(error.contains("IdempotentServer::protect"), "{error}");
    // A client that never lists the tools is refused at its first call, of any tool.
    let error = client
        .call_tool(call("book", json!({"guest": "gus"}), None))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("`bok`"), "{error}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_key_is_the_key_and_its_reuse_with_another_payload_is_refused() {
    let desk = Desk::default();
    let runs = desk.runs.clone();
    let (url, stop) = serve_http(protected(desk, memory())).await;
    let client = http_client(&url, "acme").await;
    let first = client
        .call_tool(call("book", json!({"guest": "cy"}), Some("order-17")))
        .await
        .unwrap();
    assert_eq!(text(&first), "booked \"cy\" (run 1)");
    assert_eq!(meta(&first, "idempotencyKey"), &json!("order-17"));
    assert_eq!(meta(&first, "replayed"), &json!(false));

    let again = client
        .call_tool(call("book", json!({"guest": "cy"}), Some("order-17")))
        .await
        .unwrap();
    assert_eq!(text(&again), "booked \"cy\" (run 1)");
    assert_eq!(meta(&again, "replayed"), &json!(true));

    let other = client
        .call_tool(call("book", json!({"guest": "dee"}), Some("order-17")))
        .await
        .unwrap();
    assert_eq!(other.is_error, Some(true), "{other:?}");
    assert_eq!(meta(&other, "idempotencyError"), &json!("payload_mismatch"));
    assert!(text(&other).contains("order-17"), "{}", text(&other));
    assert!(text(&other).contains("Do not retry"), "{}", text(&other));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the refused call did not run"
    );

    // A key that is not a string is refused before anything runs.
    let mut bad = call("book", json!({"guest": "cy"}), None);
    let mut meta_object = MetaObject::new();
    meta_object.0.insert("idempotencyKey".to_owned(), json!(17));
    bad.meta = Some(RequestMetaObject(meta_object));
    let bad = client.call_tool(bad).await.unwrap();
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_effect_is_a_tool_error_naming_the_key() {
    let desk = Desk::default();
    let runs = desk.runs.clone();
    let (url, stop) = serve_http(protected(desk, memory())).await;
    let client = http_client(&url, "acme").await;
    for attempt in 0..3 {
        let result = client
            .call_tool(call("charge", json!({"amount": 40}), None))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true), "attempt {attempt}: {result:?}");
        assert_eq!(meta(&result, "idempotencyError"), &json!("indeterminate"));
        let key = meta(&result, "idempotencyKey").as_str().unwrap().to_owned();
        assert_eq!(key.len(), 64);
        assert!(text(&result).contains(&key), "{}", text(&result));
        assert!(text(&result).contains("Do not retry"), "{}", text(&result));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "held: never run again");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn past_the_deadline_the_waiter_and_the_runner_get_tool_errors_and_the_result_is_kept() {
    let desk = Desk::default();
    let runs = desk.runs.clone();
    let (url, stop) = serve_http(protected(desk, memory())).await;
    let runner = http_client(&url, "acme").await;
    let waiter = http_client(&url, "acme").await;
    let first = runner.call_tool(call("slow", json!({"n": 1}), None));
    let second = async {
        // The runner holds the claim; this call waits for it until its own deadline.
        while runs.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        waiter.call_tool(call("slow", json!({"n": 1}), None)).await
    };
    let (first, second) = tokio::join!(first, second);
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(second.is_error, Some(true), "{second:?}");
    assert_eq!(meta(&second, "idempotencyError"), &json!("in_progress"));
    let key = meta(&second, "idempotencyKey").as_str().unwrap().to_owned();
    assert!(text(&second).contains(&key), "{}", text(&second));
    assert!(text(&second).contains("do not retry"), "{}", text(&second));
    // The body ran past its deadline: the runner is told so, and the late result is recorded.
    assert_eq!(first.is_error, Some(true), "{first:?}");
    assert_eq!(meta(&first, "idempotencyError"), &json!("timeout"));
    let later = waiter
        .call_tool(call("slow", json!({"n": 1}), None))
        .await
        .unwrap();
    assert_eq!(text(&later), "slow run 1");
    assert_eq!(meta(&later, "replayed"), &json!(true));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one effect");
    stop.cancel();
}

/// The `mcp_booking` example as an rmcp child process, on `store_url` (memory when `None`).
fn booking_server(
    store_url: Option<&str>,
    log: &std::path::Path,
    tenant: &str,
    delay_ms: u64,
) -> TokioChildProcess {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join("mcp_booking");
    assert!(
        example.exists(),
        "{} is missing: build it with `cargo test --features mcp,testing,redis` (or `cargo build --features mcp --example mcp_booking`)",
        example.display()
    );
    TokioChildProcess::new(tokio::process::Command::new(example).configure(|command| {
        if let Some(url) = store_url {
            command.arg(url);
        }
        command
            .env("MCP_BOOKING_LOG", log)
            .env("MCP_BOOKING_TENANT", tenant)
            .env("MCP_BOOKING_DELAY_MS", delay_ms.to_string());
    }))
    .unwrap()
}

fn lines(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn temp_log(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{name}-{}.log", uuid::Uuid::new_v4()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_annotations_and_replay_in_one_process() {
    let log = temp_log("mcp-stdio");
    let client = ().serve(booking_server(None, &log, "acme", 0)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let a = tools[0].annotations.clone().unwrap();
    assert_eq!(tools[0].name, "book_room");
    assert_eq!(
        (
            a.read_only_hint,
            a.idempotent_hint,
            a.destructive_hint,
            a.open_world_hint
        ),
        (Some(false), Some(true), Some(false), Some(true))
    );
    let arguments = json!({"guest": "eve", "night": "2026-12-31"});
    let first = client
        .call_tool(call("book_room", arguments.clone(), None))
        .await
        .unwrap();
    let again = client
        .call_tool(call("book_room", arguments, None))
        .await
        .unwrap();
    assert_eq!(text(&first), text(&again));
    assert_eq!(meta(&again, "replayed"), &json!(true));
    client.cancel().await.unwrap();
    assert_eq!(lines(&log), 1, "one effect");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_a_client_gone_mid_call_and_a_new_process_get_one_effect_on_redis() {
    let Some(url) = common::env_url("IDEMKIT_REDIS_URL") else {
        return;
    };
    let log = temp_log("mcp-stdio-redis");
    // A tenant no other run uses: the records of this test are its own.
    let tenant = format!("stdio-{}", uuid::Uuid::new_v4());
    let arguments = json!({"guest": "fay", "night": "2026-12-25"});
    let first = ().serve(booking_server(Some(&url), &log, &tenant, 1_000)).await.unwrap();
    let peer = first.peer().clone();
    let args = arguments.clone();
    let gone = tokio::spawn(async move { peer.call_tool(call("book_room", args, None)).await });
    // The call is under way (the body sleeps a second); the client goes away: its server
    // process sees its stdin close, and exits once the call has recorded its outcome.
    tokio::time::sleep(Duration::from_millis(300)).await;
    gone.abort();
    first.cancel().await.unwrap();

    // A new client, a new server process, the same store: the call waits for the first claim
    // and gets its result.
    let second = ().serve(booking_server(Some(&url), &log, &tenant, 0)).await.unwrap();
    let result = second
        .call_tool(call("book_room", arguments, None))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(meta(&result, "replayed"), &json!(true), "{result:?}");
    second.cancel().await.unwrap();
    assert_eq!(lines(&log), 1, "one effect");
    let _ = std::fs::remove_file(&log);
}
