//! Tools served over the Model Context Protocol (cargo feature `mcp`, over
//! [rmcp](https://docs.rs/rmcp)): SPEC v1.2 §9 rule 4.
//!
//! [`IdempotentServer`] wraps any rmcp server (a [`ServerHandler`]) and is one itself, served
//! over any rmcp transport (stdio, streamable HTTP). Every `tools/call` of a tool it protects
//! goes through the [`Executor`]: keyed as every face keys (tool name, tenant, run, the canonical
//! JSON of the arguments under `HASH_INPUT`), claimed, waited for, replayed or held by the
//! executor's one protocol. The wrapper only translates:
//!
//! - `tools/list` carries annotations derived from each protected tool's policy: `READ_ONLY` →
//!   `readOnlyHint: true`; `HASH_INPUT` or `EXPLICIT` (any other effect) → `idempotentHint:
//!   true`; `UUID` or `NONE` → `idempotentHint: false`; `destructiveHint` and `openWorldHint` as
//!   declared in [`McpHints`].
//! - A call whose `_meta` holds `"idempotencyKey": "<string>"` is keyed by that string, as a key
//!   from outside the application ([`KeyInput::OutsideKey`]): a reuse with another payload is
//!   refused. The result's `_meta` carries `"idempotencyKey"` (the client's string, or the
//!   derived 64-hex key) and `"replayed": true|false`.
//! - Every idemkit answer that is not the tool's own (a held or abandoned effect, a payload
//!   mismatch, a call still in progress at its deadline, a store error) is a tool error
//!   (`isError: true`) naming the key, never a JSON-RPC error.
//! - Tenant and run come from the request or session ([`IdempotentServer::with_context`]),
//!   never from the arguments.
//!
//! The body (the wrapped server's own `tools/call`) runs in a task of its own under its own
//! cancellation token: a client that disconnects mid-call does not cut the effect short, and
//! its retry waits for the same claim and gets the recorded result.
//!
//! A success is recorded as the whole `CallToolResult` (JSON text), so that a replay answers
//! with the same content. A result with `isError: true` is the body's failure (type
//! `ToolError`), settled by the policy (released, or held for an `EFFECTFUL` tool). A JSON-RPC
//! error from the wrapped server (unknown tool, invalid arguments) means the body never ran:
//! the claim is released and the error passed on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    MetaObject, PaginatedRequestParams, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::Notify;

use crate::error::{Error, ErrorKind};
use crate::executor::{Answer, BodyReport, CallContext, Executor, Step};
use crate::key::KeyInput;
use crate::policy::{Effect, KeyStrategy, Policy, Tool};
use crate::record::Failure;

/// The `_meta` field a client sends its own key in, and the result's field naming the key.
pub const KEY_FIELD: &str = "idempotencyKey";
/// The result's `_meta` field saying whether the answer was replayed from the record.
pub const REPLAYED_FIELD: &str = "replayed";
/// The result's `_meta` field naming idemkit's error kind, on an idemkit tool error.
pub const ERROR_FIELD: &str = "idempotencyError";

/// The annotations a policy does not decide: as the developer declares them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpHints {
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

impl McpHints {
    /// No declared hints.
    pub fn new() -> McpHints {
        McpHints::default()
    }

    /// Declares `destructiveHint`.
    pub fn destructive(mut self, destructive: bool) -> McpHints {
        self.destructive = Some(destructive);
        self
    }

    /// Declares `openWorldHint`.
    pub fn open_world(mut self, open_world: bool) -> McpHints {
        self.open_world = Some(open_world);
        self
    }
}

/// The annotations of a tool under `policy` (SPEC v1.2 §9 rule 4's table).
pub fn annotations(policy: &Policy, hints: McpHints) -> ToolAnnotations {
    let mut annotations = ToolAnnotations::new();
    if policy.effect == Effect::ReadOnly {
        annotations.read_only_hint = Some(true);
    } else {
        annotations.read_only_hint = Some(false);
        annotations.idempotent_hint = Some(policy.strategy.uses_store());
    }
    annotations.destructive_hint = hints.destructive;
    annotations.open_world_hint = hints.open_world;
    annotations
}

/// The annotations of a protected tool: derived from its policy, with the server's title kept.
fn annotated(declared: Option<&ToolAnnotations>, protected: &Protected) -> ToolAnnotations {
    let mut derived = annotations(protected.tool.policy(), protected.hints);
    derived.title = declared.and_then(|d| d.title.clone());
    derived
}

/// Tenant and run of a call, from its request or session context.
type Resolver = dyn Fn(&RequestContext<RoleServer>) -> CallContext + Send + Sync;

/// One protected tool: its tool, its twin keyed by a client's key, its declared hints.
#[derive(Debug)]
struct Protected {
    tool: Tool,
    /// The same name, policy and deadline under `EXPLICIT`: a client's key is the call's key.
    outside: Tool,
    hints: McpHints,
}

/// Calls still running (for [`IdempotentServer::settled`]).
#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

struct Running(Arc<InFlight>);

impl Running {
    fn start(in_flight: &Arc<InFlight>) -> Running {
        in_flight.count.fetch_add(1, Ordering::SeqCst);
        Running(in_flight.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// An rmcp server whose protected tools go through the [`Executor`] (see the module docs).
///
/// Cheap to clone: clones share the wrapped server, the executor and the tools.
pub struct IdempotentServer<S> {
    inner: Arc<S>,
    executor: Arc<Executor>,
    tools: Arc<HashMap<String, Arc<Protected>>>,
    resolve: Arc<Resolver>,
    in_flight: Arc<InFlight>,
    /// Whether every protected name is a served tool, checked once, before the first call.
    served: Arc<tokio::sync::OnceCell<Result<(), ErrorData>>>,
}

impl<S> Clone for IdempotentServer<S> {
    fn clone(&self) -> Self {
        IdempotentServer {
            inner: self.inner.clone(),
            executor: self.executor.clone(),
            tools: self.tools.clone(),
            resolve: self.resolve.clone(),
            in_flight: self.in_flight.clone(),
            served: self.served.clone(),
        }
    }
}

impl<S: ServerHandler> IdempotentServer<S> {
    /// Wraps `inner`; no tool is protected yet, and calls have no tenant and no run.
    pub fn new(inner: S, executor: Arc<Executor>) -> IdempotentServer<S> {
        IdempotentServer {
            inner: Arc::new(inner),
            executor,
            tools: Arc::new(HashMap::new()),
            resolve: Arc::new(|_| CallContext::new()),
            in_flight: Arc::new(InFlight::default()),
            served: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// Protects the tool named `name` under `policy` (no deadline, no declared hints).
    ///
    /// # Errors
    ///
    /// As [`Tool::new`]; and [`Error::Configuration`] when the tool is already protected.
    pub fn protect(self, name: &str, policy: Policy) -> Result<IdempotentServer<S>, Error> {
        self.protect_tool(Tool::new(name, policy)?, McpHints::new())
    }

    /// Protects `tool` (its name is the MCP tool's name), with these declared hints.
    ///
    /// Each protected name must be a tool the wrapped server lists: the first `tools/call`
    /// (of any tool) and every `tools/list` refuse loudly when one is not.
    ///
    /// # Errors
    ///
    /// [`Error::Configuration`] when a tool of that name is already protected.
    pub fn protect_tool(
        mut self,
        tool: Tool,
        hints: McpHints,
    ) -> Result<IdempotentServer<S>, Error> {
        let name = tool.name().to_owned();
        if self.tools.contains_key(&name) {
            return Err(Error::config(format!(
                "the MCP tool `{name}` is protected twice; protect each tool once"
            )));
        }
        let mut policy = tool.policy().clone();
        policy.strategy = KeyStrategy::Explicit;
        policy.key_arguments = Vec::new();
        let outside = Tool::with_timeout(name.clone(), policy, tool.timeout())?;
        Arc::make_mut(&mut self.tools).insert(
            name,
            Arc::new(Protected {
                tool,
                outside,
                hints,
            }),
        );
        Ok(self)
    }

    /// Takes each call's tenant and run from its context, e.g. an HTTP header (the streamable
    /// HTTP transport puts the request's `http::request::Parts` in `context.extensions`) or the
    /// session (`context.peer`). Never from the model's arguments.
    pub fn with_context(
        mut self,
        resolve: impl Fn(&RequestContext<RoleServer>) -> CallContext + Send + Sync + 'static,
    ) -> IdempotentServer<S> {
        self.resolve = Arc::new(resolve);
        self
    }

    /// The wrapped server.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Waits until no protected call is running: a server that stops (its transport closed)
    /// awaits this, so that a call whose client went away still records its outcome.
    pub async fn settled(&self) {
        loop {
            let idle = self.in_flight.idle.notified();
            if self.in_flight.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// `tools/list` of the wrapped server, with the protected tools' annotations.
    async fn list(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut list = self.inner.list_tools(request, context).await?;
        for tool in &mut list.tools {
            if let Some(protected) = self.tools.get(tool.name.as_ref()) {
                tool.annotations = Some(annotated(tool.annotations.as_ref(), protected));
            }
        }
        // A protection that names no served tool would do nothing: refuse loudly.
        if list.next_cursor.is_none() {
            self.refuse_unserved(list.tools.iter().map(|t| t.name.as_ref()))?;
        }
        Ok(list)
    }

    /// An error naming each protected tool that is not among `served`, if any is not.
    fn refuse_unserved<'a>(
        &self,
        served: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<(), ErrorData> {
        let mut missing: Vec<String> = self
            .tools
            .keys()
            .filter(|name| !served.clone().any(|s| s == name.as_str()))
            .map(|name| format!("`{name}`"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        missing.sort_unstable();
        Err(ErrorData::internal_error(
            format!(
                "idemkit protects the MCP tool(s) {} but the server lists no such tool, so the protection would do nothing; pass the served tool's exact name to IdempotentServer::protect",
                missing.join(", ")
            ),
            None,
        ))
    }

    /// Before the first call: every protected name is a tool the wrapped server lists (all its
    /// pages), else every call is refused, naming the tool, whether or not a client ever
    /// listed the tools.
    async fn check_served(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let checked = self
            .served
            .get_or_init(|| async {
                let mut served = Vec::new();
                let mut cursor = None;
                loop {
                    let page = self
                        .inner
                        .list_tools(
                            Some(PaginatedRequestParams::default().with_cursor(cursor)),
                            context.clone(),
                        )
                        .await?;
                    served.extend(page.tools.into_iter().map(|t| t.name.into_owned()));
                    match page.next_cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                self.refuse_unserved(served.iter().map(String::as_str))
            })
            .await;
        checked.clone()
    }

    /// One `tools/call`: a protected tool's through the executor, in a task of its own.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.check_served(&context).await?;
        let Some(protected) = self.tools.get(request.name.as_ref()).cloned() else {
            return self.inner.call_tool(request, context).await;
        };
        let call_context = (self.resolve)(&context);
        let running = Running::start(&self.in_flight);
        let task = tokio::spawn(protected_call(
            self.executor.clone(),
            protected,
            self.inner.clone(),
            call_context,
            request,
            context,
            running,
        ));
        // Dropping this future (a client gone) leaves the task running to its end.
        match task.await {
            Ok(answer) => answer.map(CallToolResponse::Complete),
            Err(e) => Err(ErrorData::internal_error(
                format!("idemkit's call task failed: {e}"),
                None,
            )),
        }
    }
}

/// The client's key from the request's `_meta`, if it sent one; a non-string is refused.
fn client_key(
    context: &RequestContext<RoleServer>,
    call: &CallToolRequestParams,
) -> Result<Option<String>, String> {
    let field = context
        .meta
        .0
         .0
        .get(KEY_FIELD)
        .or_else(|| call.meta.as_ref().and_then(|meta| meta.0 .0.get(KEY_FIELD)));
    match field {
        None => Ok(None),
        Some(Value::String(key)) => Ok(Some(key.clone())),
        Some(other) => Err(format!(
            "`_meta.{KEY_FIELD}` must be a string, not {other}; send the key as a JSON string"
        )),
    }
}

/// One protected `tools/call`, from key to answer, through the executor's two-step protocol.
async fn protected_call<S: ServerHandler>(
    executor: Arc<Executor>,
    protected: Arc<Protected>,
    inner: Arc<S>,
    call_context: CallContext,
    call: CallToolRequestParams,
    context: RequestContext<RoleServer>,
    _running: Running,
) -> Result<CallToolResult, ErrorData> {
    let name = protected.tool.name().to_owned();
    let client_key = match client_key(&context, &call) {
        Ok(key) => key,
        Err(text) => return Ok(refusal(text, None, ErrorKind::InvalidKey)),
    };
    let arguments = Value::Object(call.arguments.clone().unwrap_or_default());
    let json = arguments.to_string();
    let prepared = match &client_key {
        Some(key) => executor.prepare(
            &protected.outside,
            &call_context,
            KeyInput::OutsideKey {
                key,
                payload: &arguments,
            },
        ),
        None if protected.tool.policy().strategy == KeyStrategy::Explicit => {
            return Ok(refusal(
                format!(
                    "`{name}` uses strategy EXPLICIT: its key comes from the client; send the call again with `_meta.{KEY_FIELD}`"
                ),
                None,
                ErrorKind::InvalidKey,
            ))
        }
        None => executor.prepare(&protected.tool, &call_context, KeyInput::Json(&json)),
    };
    let mut attempt = match prepared {
        Ok(attempt) => attempt,
        Err(error) => return Ok(idemkit_error(&error, client_key.as_deref())),
    };
    let key = client_key.or_else(|| attempt.key_text());
    loop {
        match executor.advance(&mut attempt, None).await {
            Err(error) => return Ok(idemkit_error(&error, key.as_deref())),
            Ok(Step::Replay(recorded)) => {
                return Ok(answered(replayed(&recorded), key.as_deref(), true))
            }
            Ok(Step::Pending) => continue,
            Ok(Step::Run) => {}
        }
        // The body: the wrapped server's own `tools/call`, in a task of its own (a panic is its
        // failure) and under a token of its own (a client's disconnect does not cut it short).
        let mut body_context = context.clone();
        body_context.ct = tokio_util::sync::CancellationToken::new();
        let body_inner = inner.clone();
        let body_call = call.clone();
        let ran =
            tokio::spawn(async move { body_inner.call_tool(body_call, body_context).await }).await;
        let (report, own_answer) = match ran {
            Ok(Ok(CallToolResponse::Complete(result))) if result.is_error != Some(true) => {
                match serde_json::to_string(&result) {
                    Ok(json) => (Report::Succeeded(json), Ok(result)),
                    Err(e) => (
                        Report::Failed(Failure::new("Unencodable", e.to_string())),
                        Ok(result),
                    ),
                }
            }
            Ok(Ok(CallToolResponse::Complete(result))) => (
                Report::Failed(Failure::new("ToolError", text_of(&result))),
                Ok(result),
            ),
            Ok(Ok(_)) => {
                let text = format!(
                    "`{name}` answered with a response idemkit cannot record (input required, or a task); a protected tool must answer with a complete result"
                );
                (
                    Report::Failed(Failure::new("UnrecordableResponse", text.clone())),
                    Err(text),
                )
            }
            Ok(Err(protocol_error)) => {
                executor.report(&mut attempt, BodyReport::NeverRan).await;
                return Err(protocol_error);
            }
            Err(join) => {
                let text = format!("`{name}` failed: its body panicked ({join})");
                (
                    Report::Failed(Failure::new("Panic", text.clone())),
                    Err(text),
                )
            }
        };
        let reported = match &report {
            Report::Succeeded(json) => {
                executor
                    .report(&mut attempt, BodyReport::Succeeded(json))
                    .await
            }
            Report::Failed(failure) => {
                executor
                    .report(&mut attempt, BodyReport::Failed(failure))
                    .await
            }
        };
        match reported.answer {
            Answer::Body => {
                return Ok(match own_answer {
                    Ok(result) => answered(result, key.as_deref(), false),
                    Err(text) => refusal(text, key.as_deref(), ErrorKind::Internal),
                })
            }
            Answer::Error(error) => return Ok(idemkit_error(&error, key.as_deref())),
            Answer::Retry(pause) => tokio::time::sleep(pause).await,
        }
    }
}

/// What the body did, as reported to the executor.
enum Report {
    Succeeded(String),
    Failed(Failure),
}

/// The text content of a result, for a failure's message.
fn text_of(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    if texts.is_empty() {
        "the tool answered with isError: true".to_owned()
    } else {
        texts.join("\n")
    }
}

/// A recorded result as a `CallToolResult`: this face records the whole result; a value
/// recorded by another face (a plain JSON result) is answered as its text and structured content.
fn replayed(recorded: &str) -> CallToolResult {
    let value: Value = serde_json::from_str(recorded).unwrap_or(Value::Null);
    if value.get("content").is_some_and(Value::is_array) {
        if let Ok(result) = serde_json::from_value::<CallToolResult>(value.clone()) {
            return result;
        }
    }
    let text = match &value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if value.is_object() {
        result.structured_content = Some(value);
    }
    result
}

/// `result` with the call's key and whether it was replayed in its `_meta`.
fn answered(mut result: CallToolResult, key: Option<&str>, replayed: bool) -> CallToolResult {
    let meta = result.meta.get_or_insert_with(MetaObject::new);
    if let Some(key) = key {
        meta.0
            .insert(KEY_FIELD.to_owned(), Value::String(key.to_owned()));
    }
    meta.0
        .insert(REPLAYED_FIELD.to_owned(), Value::Bool(replayed));
    result
}

/// idemkit's answer instead of the tool's, as a tool error the model can read.
fn idemkit_error(error: &Error, key: Option<&str>) -> CallToolResult {
    let advice = match error.kind() {
        ErrorKind::StoreUnavailable => {
            "The tool did not run; the call may be sent again later."
        }
        ErrorKind::InProgress => {
            "Another call with this key is still running; do not retry it: its effect may be under way, and its result is recorded under this key."
        }
        _ => "Do not retry this call: a retry gets the same answer and may not act again; report it with its key.",
    };
    refusal(format!("{error}. {advice}"), key, error.kind())
}

/// A tool error (`isError: true`) with this text, the key and idemkit's error kind.
fn refusal(text: String, key: Option<&str>, kind: ErrorKind) -> CallToolResult {
    let text = match key {
        Some(key) => format!("{text} (idempotency key: {key})"),
        None => text,
    };
    let mut result = answered(
        CallToolResult::error(vec![ContentBlock::text(text)]),
        key,
        false,
    );
    if let Some(meta) = result.meta.as_mut() {
        meta.0.insert(
            ERROR_FIELD.to_owned(),
            Value::String(kind.name().to_owned()),
        );
    }
    result
}

/// The `ServerHandler` of the wrapped server: `tools/call` and `tools/list` (and `get_tool`) go
/// through idemkit, everything else is the wrapped server's own.
#[allow(deprecated)]
mod forward {
    use std::borrow::Cow;
    use std::future::Future;

    use rmcp::model::*;
    use rmcp::service::{
        MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext,
    };
    use rmcp::{ErrorData, RoleServer, ServerHandler};

    use super::{annotated, IdempotentServer};

    /// Forwards each named method to the wrapped server.
    macro_rules! forward {
        ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
            fn $name(&self, $($arg: $ty),*) -> impl Future<Output = $out> + MaybeSendFuture + '_ {
                self.inner.$name($($arg),*)
            }
        )*};
    }

    impl<S: ServerHandler> ServerHandler for IdempotentServer<S> {
        fn call_tool(
            &self,
            request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_
        {
            self.call(request, context)
        }

        fn list_tools(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_
        {
            self.list(request, context)
        }

        fn get_tool(&self, name: &str) -> Option<Tool> {
            let mut tool = self.inner.get_tool(name)?;
            if let Some(protected) = self.tools.get(name) {
                tool.annotations = Some(annotated(tool.annotations.as_ref(), protected));
            }
            Some(tool)
        }

        fn negotiate_initialize(
            &self,
            request: &InitializeRequestParams,
        ) -> Result<InitializeResult, ErrorData> {
            self.inner.negotiate_initialize(request)
        }

        fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
            self.inner.supported_protocol_versions()
        }

        fn accepted_subscription_filter(
            &self,
            requested: &SubscriptionFilter,
        ) -> Option<SubscriptionFilter> {
            self.inner.accepted_subscription_filter(requested)
        }

        fn get_info(&self) -> ServerConfig {
            self.inner.get_info()
        }

        forward! {
            ping(context: RequestContext<RoleServer>) -> Result<(), ErrorData>;
            initialize(request: InitializeRequestParams, context: RequestContext<RoleServer>) -> Result<InitializeResult, ErrorData>;
            discover(context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData>;
            complete(request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData>;
            set_level(request: SetLevelRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData>;
            get_prompt(request: GetPromptRequestParams, context: RequestContext<RoleServer>) -> Result<GetPromptResponse, ErrorData>;
            list_prompts(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListPromptsResult, ErrorData>;
            list_resources(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData>;
            list_resource_templates(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListResourceTemplatesResult, ErrorData>;
            read_resource(request: ReadResourceRequestParams, context: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData>;
            listen(context: SubscriptionContext) -> Result<(), ErrorData>;
            subscribe(request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData>;
            unsubscribe(request: UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData>;
            on_custom_request(request: CustomRequest, context: RequestContext<RoleServer>) -> Result<CustomResult, ErrorData>;
            on_cancelled(notification: CancelledNotificationParam, context: NotificationContext<RoleServer>) -> ();
            on_progress(notification: ProgressNotificationParam, context: NotificationContext<RoleServer>) -> ();
            on_initialized(context: NotificationContext<RoleServer>) -> ();
            on_roots_list_changed(context: NotificationContext<RoleServer>) -> ();
            on_custom_notification(notification: CustomNotification, context: NotificationContext<RoleServer>) -> ();
            get_task(request: GetTaskParams, context: RequestContext<RoleServer>) -> Result<GetTaskResult, ErrorData>;
            update_task(request: UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData>;
            cancel_task(request: CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData>;
            list_skills(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListSkillsResult, ErrorData>;
            get_skill(request: GetSkillRequestParams, context: RequestContext<RoleServer>) -> Result<GetSkillResult, ErrorData>;
            read_resource_directory(request: ReadResourceDirectoryRequestParams, context: RequestContext<RoleServer>) -> Result<ReadResourceDirectoryResult, ErrorData>;
        }
    }
}
