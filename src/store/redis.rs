//! The Redis store (feature `redis`): one hash per record, claims as one single-key Lua script.
//!
//! **Key layout** (SPEC §4): `<prefix><t>:<key>`, where `t` is `_` for no tenant, else `t`
//! followed by the lowercase hex of the tenant's UTF-8 bytes, and `key` is the 64-hex key. There
//! is no hash tag: every operation touches one key, so Redis Cluster spreads records freely.
//!
//! **Value**: a hash with the fields `v` (record format), `key`, `tenant` (absent for no tenant),
//! `scope`, `state` (`in_progress`/`completed`), `token`, `claimed_at`, `lease_end`, `ttl_ms`,
//! `expires_at` (milliseconds on the server's clock), and once completed `outcome` (the outcome as
//! JSON, written by Rust and never re-encoded by Lua, so a success comes back byte for byte) and
//! `outcome_kind` (`success`, `failure` or `too_large`, so scripts need not parse JSON).
//!
//! **Time**: every script reads Redis `TIME` as *now*; process clocks are never compared. Records
//! expire natively (`PEXPIREAT expires_at`) and every read checks `expires_at` as well.
//!
//! **Connections**: a few multiplexed connections used round-robin, each a
//! [`redis::aio::ConnectionManager`] that reconnects in the background after the server comes
//! back. A command that fails because its connection broke is sent once more, in every store
//! operation (claims, completions and releases act by owner token; scans, reads and deletes are
//! safe to repeat; a repeated `resolve` that finds its own outcome recorded answers done), so
//! the first call of any operation after an outage or a restart already works.
//!
//! **Redis Cluster**: open `redis+cluster://[user:password@]host:port[,host:port...]/` (or
//! `rediss+cluster://...` for TLS); the listed nodes are only where discovery starts. The store
//! then uses the redis crate's async cluster client (one multiplexed connection per node), which
//! follows the slot map (`MOVED`/`ASK`), reconnects by itself and gives up within the same
//! response timeout (it may send a command again after a broken connection, `resolve` too: a
//! resolution that landed may then be reported as already done). Claims, completions, releases, reads and resolutions are the same
//! single-key scripts, routed by their one key. `forget`, `list` and `purge_expired` SCAN every
//! primary (found with `CLUSTER SLOTS`) with its own cursor, in batches, and delete or read the
//! keys they find with per-key commands pipelined to that node (a command the node refuses
//! because its slot moved is sent again routed by key); a `list` cursor names the node and its
//! SCAN cursor. `newest` (the CLI's `list`) scans every key once on every primary, reading only
//! the fields that rank and filter a record, and then reads the newest whole. Opening checks `maxmemory-policy` on every primary. The cluster has only
//! database 0. While slots migrate, a SCAN may miss or repeat keys (as on any cluster) and the
//! counts `forget`/`purge_expired` answer may fall short; run `forget` again after a resharding
//! to be sure. A `redis://` URL naming a cluster node is refused (it would answer `MOVED` for
//! most keys), as is a `redis+cluster://` URL naming a server without cluster support.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use once_cell::sync::Lazy;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, RedisFuture, Script, Value};

use super::{
    newest_first, nfc, redact_url, repeated_resolution, Claim, ClaimReply, ClaimRequest,
    Completion, ListFilter, Page, RecordId, Resolution, Resolved, Store, StoreOptions,
    DEFAULT_MAX_OUTCOME_BYTES,
};
use crate::error::StoreError;
use crate::record::{Outcome, Record, RecordState, Status, Token, RECORD_FORMAT};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "idemkit:";

/// How many multiplexed connections a store keeps (used round-robin).
const CONNECTIONS: usize = 4;
/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one command may wait for its answer.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many keys one SCAN step asks for (`forget`, `purge_expired`).
const SCAN_BATCH: usize = 500;
/// How many keys one SCAN step of `newest` asks for (it reads every key: few round trips).
const NEWEST_SCAN_BATCH: usize = 5000;
/// How many SCAN steps one `list` page may take before it answers with what it has.
const LIST_SCAN_STEPS: usize = 32;
/// How often the cluster client retries a command (redirects, reconnects) within its timeout.
const CLUSTER_RETRIES: u32 = 6;
/// Leases and TTLs are capped at 100 years, so that times stay exact in Lua's doubles.
const MAX_SPAN_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

/// Shared Lua helpers, prepended to every script.
const PRELUDE: &str = r#"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format('%d', n) end
local function fields(flat)
  local f = {}
  for i = 1, #flat, 2 do f[flat[i]] = flat[i + 1] end
  return f
end
local function live(f, now)
  local e = tonumber(f['expires_at'])
  if e == nil then
    return redis.error_reply('idemkit: record ' .. KEYS[1] .. ' has no expires_at')
  end
  return now < e
end
"#;

/// Claim: KEYS = [record]; ARGV = [token, lease_ms, ttl_ms, retry_failure (0/1), format, key hex,
/// scope, has_tenant (0/1), tenant]. Answers `{answer, now, lease_end | record}`.
static CLAIM: Lazy<Script> = Lazy::new(|| {
    script(
        r#"
local now = now_ms()
local token = ARGV[1]
local flat = redis.call('HGETALL', KEYS[1])
if #flat > 0 then
  local f = fields(flat)
  local alive = live(f, now)
  if type(alive) == 'table' then return alive end
  if alive then
    if f['state'] == 'in_progress' and f['token'] == token then
      return {'acquired', fmt(now), f['lease_end']}
    end
    local replace = ARGV[4] == '1' and f['state'] == 'completed' and f['outcome_kind'] == 'failure'
    if not replace then
      local answer = 'abandoned'
      if f['state'] == 'completed' then
        answer = 'completed'
      elseif now < tonumber(f['lease_end']) then
        answer = 'in_progress'
      end
      return {answer, fmt(now), flat}
    end
  end
  redis.call('DEL', KEYS[1])
end
local lease_end = now + tonumber(ARGV[2])
local expires_at = lease_end + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'key', ARGV[6], 'scope', ARGV[7],
  'state', 'in_progress', 'token', token, 'claimed_at', fmt(now), 'lease_end', fmt(lease_end),
  'ttl_ms', ARGV[3], 'expires_at', fmt(expires_at))
if ARGV[8] == '1' then redis.call('HSET', KEYS[1], 'tenant', ARGV[9]) end
redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
return {'acquired', fmt(now), fmt(lease_end)}
"#,
    )
});

/// Complete: KEYS = [record]; ARGV = [token, outcome JSON, outcome kind, ttl_ms].
/// Answers `{'recorded', now}` or `{'not_owner', now[, record]}`.
static COMPLETE: Lazy<Script> = Lazy::new(|| {
    script(
        r#"
local now = now_ms()
local v = redis.call('HMGET', KEYS[1], 'state', 'token', 'expires_at')
if not v[3] or now >= tonumber(v[3]) then return {'not_owner', fmt(now)} end
if v[2] ~= ARGV[1] then return {'not_owner', fmt(now), redis.call('HGETALL', KEYS[1])} end
if v[1] == 'in_progress' then
  local expires_at = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'state', 'completed', 'outcome', ARGV[2], 'outcome_kind', ARGV[3],
    'ttl_ms', ARGV[4], 'expires_at', fmt(expires_at))
  redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
end
return {'recorded', fmt(now)}
"#,
    )
});

/// Release: KEYS = [record]; ARGV = [token]. Answers 1 when it deleted the claim, else 0.
static RELEASE: Lazy<Script> = Lazy::new(|| {
    script(
        r#"
local now = now_ms()
local v = redis.call('HMGET', KEYS[1], 'state', 'token', 'expires_at')
if v[3] and now < tonumber(v[3]) and v[1] == 'in_progress' and v[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"#,
    )
});

/// Get: KEYS = [record]. Answers `{now, record}`, the record empty when absent or expired.
static GET: Lazy<Script> = Lazy::new(|| {
    script(
        r#"
local now = now_ms()
local flat = redis.call('HGETALL', KEYS[1])
if #flat > 0 then
  local alive = live(fields(flat), now)
  if type(alive) == 'table' then return alive end
  if not alive then flat = {} end
end
return {fmt(now), flat}
"#,
    )
});

/// Resolve: KEYS = [record]; ARGV = [expected token, 'release' | 'complete', outcome JSON,
/// outcome kind, ttl_ms]. Answers `{answer, now[, record]}`.
static RESOLVE: Lazy<Script> = Lazy::new(|| {
    script(
        r#"
local now = now_ms()
local flat = redis.call('HGETALL', KEYS[1])
if #flat == 0 then return {'not_found', fmt(now)} end
local f = fields(flat)
local alive = live(f, now)
if type(alive) == 'table' then return alive end
if not alive then return {'not_found', fmt(now)} end
if f['state'] == 'completed' then return {'already_completed', fmt(now), flat} end
if f['token'] ~= ARGV[1] then return {'token_mismatch', fmt(now), flat} end
if ARGV[2] == 'release' then
  redis.call('DEL', KEYS[1])
else
  local expires_at = now + tonumber(ARGV[5])
  redis.call('HSET', KEYS[1], 'state', 'completed', 'outcome', ARGV[3], 'outcome_kind', ARGV[4],
    'ttl_ms', ARGV[5], 'expires_at', fmt(expires_at))
  redis.call('PEXPIREAT', KEYS[1], fmt(expires_at))
end
return {'done', fmt(now)}
"#,
    )
});

/// Purge one: KEYS = [record]. Deletes the record if it is expired but still present (native
/// expiry normally gets there first); answers 1 if it did.
static PURGE_ONE: Lazy<Script> = Lazy::new(|| {
    script(
        r#"
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
local e = redis.call('HGET', KEYS[1], 'expires_at')
if e and now_ms() >= tonumber(e) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"#,
    )
});

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}{body}"))
}

/// The tenant part `t` of a record's key: `_` for no tenant, else `t` + hex of its UTF-8 bytes.
pub fn tenant_segment(tenant: Option<&str>) -> String {
    match tenant {
        None => "_".to_owned(),
        Some(t) => {
            let mut out = String::with_capacity(1 + 2 * t.len());
            out.push('t');
            for b in t.bytes() {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
    }
}

/// `text` with the glob characters of Redis `MATCH` patterns escaped.
pub fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^' | '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether `suffix` (a Redis key after the prefix) has the shape `<t>:<64 hex>`.
fn is_record_suffix(suffix: &str) -> bool {
    let Some((t, key)) = suffix.split_once(':') else {
        return false;
    };
    let tenant_ok = t == "_"
        || (t.starts_with('t')
            && t.len() % 2 == 1
            && t[1..]
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    tenant_ok && key.len() == 64 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The node URLs of a `redis+cluster://` / `rediss+cluster://` URL, or `None` for any other URL.
fn cluster_node_urls(url: &str) -> Result<Option<Vec<String>>, StoreError> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(None);
    };
    let base = match scheme.to_ascii_lowercase().as_str() {
        "redis+cluster" => "redis",
        "rediss+cluster" => "rediss",
        _ => return Ok(None),
    };
    let shown = redact_url(url);
    let bad = |why: &str| {
        StoreError::Configuration(format!(
            "bad Redis Cluster URL {shown}: {why}; use {scheme}://[user:password@]host:port[,host:port...]/"
        ))
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    let tail = tail.split('#').next().unwrap_or("");
    let (path, query) = match tail.find('?') {
        Some(q) => (&tail[..q], &tail[q..]),
        None => (tail, ""),
    };
    if !matches!(path, "" | "/" | "/0") {
        return Err(bad("a cluster has only database 0"));
    }
    let nodes: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| format!("{base}://{userinfo}{h}/{query}"))
        .collect();
    if nodes.is_empty() {
        return Err(bad("no node"));
    }
    Ok(Some(nodes))
}

/// A connection: to one server, or to a whole cluster (routing each command by its key).
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(cmd, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

/// One primary to SCAN: the server itself, or a cluster node by address.
struct Node {
    connection: Connection,
    address: Option<(String, u16)>,
}

impl Node {
    fn routing(&self) -> Option<SingleNodeRoutingInfo> {
        self.address
            .as_ref()
            .map(|(host, port)| SingleNodeRoutingInfo::ByAddress {
                host: host.clone(),
                port: *port,
            })
    }

    /// `host:port` of a cluster node (for cursors and messages).
    fn name(&self) -> Option<String> {
        self.address
            .as_ref()
            .map(|(host, port)| format!("{host}:{port}"))
    }

    /// Sends `cmd` (read-only or safe to repeat) to this node; once more if the connection
    /// broke (the connection reconnects meanwhile), as every store operation does.
    async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T, RedisError> {
        match self.query_once(cmd).await {
            Err(e) if broken_connection(&e) => self.query_once(cmd).await,
            other => other,
        }
    }

    async fn query_once<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T, RedisError> {
        match (self.routing(), &mut self.connection) {
            (Some(route), Connection::Cluster(c)) => {
                let value = c.route_command(cmd, RoutingInfo::SingleNode(route)).await?;
                redis::from_owned_redis_value(value)
            }
            (_, connection) => cmd.query_async(connection).await,
        }
    }

    /// The answers of a pipeline of single-key commands (each safe to repeat). On a cluster
    /// node that refuses some of them because their slot moved meanwhile (`MOVED`/`ASK`), the
    /// commands are sent once more one by one, each routed by its key.
    /// Sent once more if the connection broke.
    async fn pipeline(&mut self, pipe: &Pipeline, count: usize) -> Result<Vec<Value>, RedisError> {
        match self.pipeline_once(pipe, count).await {
            Err(e) if broken_connection(&e) => self.pipeline_once(pipe, count).await,
            other => other,
        }
    }

    async fn pipeline_once(
        &mut self,
        pipe: &Pipeline,
        count: usize,
    ) -> Result<Vec<Value>, RedisError> {
        match (self.routing(), &mut self.connection) {
            (Some(route), Connection::Cluster(c)) => {
                match c.route_pipeline(pipe, 0, count, route).await {
                    Ok(values) if !values.iter().any(|v| matches!(v, Value::ServerError(_))) => {
                        Ok(values)
                    }
                    Err(e) if e.redirect_node().is_none() => Err(e),
                    _ => {
                        let mut values = Vec::with_capacity(count);
                        for cmd in pipe.cmd_iter() {
                            values.push(cmd.query_async(c).await?);
                        }
                        Ok(values)
                    }
                }
            }
            (_, connection) => pipe.query_async(connection).await,
        }
    }
}

/// Records in Redis: see the module documentation for the layout.
pub struct RedisStore {
    connections: Vec<Connection>,
    /// Set for a Redis Cluster.
    cluster: Option<ClusterConnection>,
    next: AtomicUsize,
    prefix: String,
    url: String,
    max_outcome_bytes: usize,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://[user:password@]host[:port][/db]` or `rediss://...` for TLS;
    /// a Redis Cluster as `redis+cluster://[user:password@]host:port[,host:port...]/` or
    /// `rediss+cluster://...`).
    ///
    /// Refuses a server (on a cluster: any primary) whose `maxmemory-policy` may evict keys
    /// (anything but `noeviction`) unless `options.allow_evicting`: an evicted claim is a second
    /// execution. When the server does not allow `CONFIG GET` (managed Redis), a warning is logged
    /// and the store opens.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<RedisStore, StoreError> {
        let shown = redact_url(url);
        if url.len() >= 6 && url[..6].eq_ignore_ascii_case("rediss") {
            // The redis crate builds rustls without choosing a crypto provider; unless the
            // application installed one, use ring's (an error means one is already installed).
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
        }
        let prefix = options
            .key_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_PREFIX.to_owned());
        let max_outcome_bytes = options
            .max_outcome_bytes
            .unwrap_or(DEFAULT_MAX_OUTCOME_BYTES);
        if let Some(nodes) = cluster_node_urls(url)? {
            let client = ClusterClientBuilder::new(nodes)
                .connection_timeout(CONNECT_TIMEOUT)
                .response_timeout(RESPONSE_TIMEOUT)
                .retries(CLUSTER_RETRIES)
                .min_retry_wait(10)
                .max_retry_wait(500)
                .build()
                .map_err(|e| {
                    StoreError::Configuration(format!("bad Redis Cluster URL {shown}: {e}"))
                })?;
            let cluster = client.get_async_connection().await.map_err(|e| {
                if e.to_string().contains("cluster support disabled") {
                    StoreError::Configuration(format!(
                        "{shown} is not a Redis Cluster (cluster support disabled); open it as redis://host:port/ instead"
                    ))
                } else {
                    StoreError::unavailable(format!(
                        "cannot connect to Redis Cluster {shown}: {e}"
                    ))
                }
            })?;
            let store = RedisStore {
                connections: vec![Connection::Cluster(cluster.clone())],
                cluster: Some(cluster),
                next: AtomicUsize::new(0),
                prefix,
                url: shown,
                max_outcome_bytes,
            };
            store.check_eviction_policy(options.allow_evicting).await?;
            return Ok(store);
        }
        let client = redis::Client::open(url).map_err(|e| {
            StoreError::Configuration(format!(
                "bad Redis URL {shown}: {e}; use redis://[user:password@]host[:port][/db] or rediss://..."
            ))
        })?;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(0)
            .set_connection_timeout(CONNECT_TIMEOUT)
            .set_response_timeout(RESPONSE_TIMEOUT);
        let mut connections = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let manager = ConnectionManager::new_with_config(client.clone(), config.clone())
                .await
                .map_err(|e| StoreError::unavailable(format!("cannot connect to {shown}: {e}")))?;
            connections.push(Connection::Single(manager));
        }
        let store = RedisStore {
            connections,
            cluster: None,
            next: AtomicUsize::new(0),
            prefix,
            url: shown,
            max_outcome_bytes,
        };
        store.refuse_cluster_node().await?;
        store.check_eviction_policy(options.allow_evicting).await?;
        Ok(store)
    }

    /// The SCAN pattern of the records a list filter asks for (its tenant in NFC form).
    fn list_pattern(&self, filter: &ListFilter) -> String {
        match &filter.tenant {
            None => format!("{}*", glob_escape(&self.prefix)),
            Some(tenant) => format!(
                "{}{}:*",
                glob_escape(&self.prefix),
                tenant_segment(tenant.as_deref().map(nfc).as_deref())
            ),
        }
    }

    /// The key prefix (default `idemkit:`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The Redis key of a record: `<prefix><t>:<key>`.
    pub fn record_key(&self, id: RecordId<'_>) -> String {
        format!(
            "{}{}:{}",
            self.prefix,
            tenant_segment(id.tenant),
            id.key.hex()
        )
    }

    /// A `redis://` URL naming a cluster node would send every key to that one node, which
    /// answers `MOVED` for most of them: refuse it and name the cluster URL form instead.
    async fn refuse_cluster_node(&self) -> Result<(), StoreError> {
        let info: Result<String, RedisError> = redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut self.connection())
            .await;
        match info {
            Ok(text) if text.lines().any(|l| l.trim() == "cluster_enabled:1") => {
                Err(StoreError::Configuration(format!(
                    "{} is a Redis Cluster node; open the cluster as redis+cluster://host:port[,host:port...]/ (rediss+cluster:// for TLS) so that each key goes to the node that holds it",
                    self.url
                )))
            }
            _ => Ok(()),
        }
    }

    /// Whether this store talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    async fn check_eviction_policy(&self, allow_evicting: bool) -> Result<(), StoreError> {
        for mut node in self.primaries().await? {
            let at = match node.name() {
                Some(name) => format!("{} (node {name})", self.url),
                None => self.url.clone(),
            };
            let answer: Result<Value, RedisError> = node
                .query(redis::cmd("CONFIG").arg("GET").arg("maxmemory-policy"))
                .await;
            self.check_policy_answer(&at, answer, allow_evicting)?;
        }
        Ok(())
    }

    fn check_policy_answer(
        &self,
        at: &str,
        answer: Result<Value, RedisError>,
        allow_evicting: bool,
    ) -> Result<(), StoreError> {
        let policy = match answer {
            Ok(value) => config_value(&value),
            Err(e) if e.is_io_error() => {
                return Err(StoreError::unavailable(format!("cannot reach {at}: {e}")))
            }
            Err(e) => {
                log::warn!(
                    "idemkit: cannot read maxmemory-policy from {at} ({e}); make sure it is `noeviction`, or evicted records will let calls run twice"
                );
                return Ok(());
            }
        };
        match policy {
            Some(policy) if policy != "noeviction" => {
                if allow_evicting {
                    log::warn!(
                        "idemkit: {at} has maxmemory-policy `{policy}` and may evict records; opened anyway because evicting was allowed"
                    );
                    Ok(())
                } else {
                    Err(StoreError::Configuration(format!(
                        "Redis at {at} has maxmemory-policy `{policy}`, which may evict idempotency records and let a call run twice; set `maxmemory-policy noeviction` (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or open the store with allow_evicting (StoreOptions.allow_evicting / --allow-evicting) to accept the risk"
                    )))
                }
            }
            Some(_) => Ok(()),
            None => {
                log::warn!(
                    "idemkit: {at} did not report its maxmemory-policy; make sure it is `noeviction`"
                );
                Ok(())
            }
        }
    }

    fn connection(&self) -> Connection {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.connections.len();
        self.connections[i].clone()
    }

    /// Runs `op` on the next connection; once more if the connection broke (the manager
    /// reconnects meanwhile). Only for operations that are safe to repeat.
    async fn run<T, F, Fut>(&self, op: F) -> Result<T, StoreError>
    where
        F: Fn(Connection) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let connection = self.connection();
        match op(connection.clone()).await {
            Ok(v) => Ok(v),
            Err(e) if broken_connection(&e) => op(connection).await.map_err(|e| self.error(e)),
            Err(e) => Err(self.error(e)),
        }
    }

    /// `newest`: `(claimed_at, key)` of the live `keys` (on `node`) that pass `filter`, read
    /// with one pipelined `HMGET` of the ranking fields per key.
    async fn rank(
        &self,
        node: &mut Node,
        keys: Vec<String>,
        now: i64,
        filter: &ListFilter,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("HMGET")
                .arg(key)
                .arg("claimed_at")
                .arg("expires_at")
                .arg("state")
                .arg("lease_end");
        }
        let answers = node
            .pipeline(&pipe, keys.len())
            .await
            .map_err(|e| self.error(e))?;
        let mut ranked = Vec::with_capacity(keys.len());
        for (key, answer) in keys.into_iter().zip(answers) {
            if let Some(claimed_at) = ranking_fields(answer, now, filter)? {
                ranked.push((claimed_at, key));
            }
        }
        Ok(ranked)
    }

    fn error(&self, e: RedisError) -> StoreError {
        StoreError::unavailable(format!("Redis at {}: {e}", self.url))
    }

    async fn scan(
        &self,
        node: &mut Node,
        cursor: u64,
        pattern: &str,
        count: usize,
    ) -> Result<(u64, Vec<String>), StoreError> {
        node.query(
            redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(count),
        )
        .await
        .map_err(|e| self.error(e))
    }

    async fn server_time(&self, connection: &mut Connection) -> Result<i64, StoreError> {
        let time = redis::cmd("TIME");
        let answer = match time.query_async(connection).await {
            Err(e) if broken_connection(&e) => time.query_async(connection).await,
            other => other,
        };
        let (secs, micros): (i64, i64) = answer.map_err(|e| self.error(e))?;
        Ok(secs * 1000 + micros / 1000)
    }

    /// The cluster node `host:port` (from a list cursor).
    fn node_named(&self, name: &str) -> Result<Node, StoreError> {
        let (Some(cluster), Some(address)) = (&self.cluster, node_address(name)) else {
            return Err(StoreError::Configuration(format!(
                "bad list cursor node {name:?} for the Redis store"
            )));
        };
        Ok(Node {
            connection: Connection::Cluster(cluster.clone()),
            address: Some(address),
        })
    }

    /// The primaries to SCAN: the one server, or every primary of the cluster (sorted by
    /// address, as `CLUSTER SLOTS` reports them now).
    async fn primaries(&self) -> Result<Vec<Node>, StoreError> {
        let Some(cluster) = &self.cluster else {
            return Ok(vec![Node {
                connection: self.connection(),
                address: None,
            }]);
        };
        let mut cluster = cluster.clone();
        let command = redis::cmd("CLUSTER").arg("SLOTS").to_owned();
        let slots: Value = match command.query_async(&mut cluster).await {
            Err(e) if broken_connection(&e) => command.query_async(&mut cluster).await,
            other => other,
        }
        .map_err(|e| self.error(e))?;
        let mut addresses = Vec::new();
        for range in items(slots)? {
            let mut parts = items(range)?.into_iter().skip(2);
            let primary = items(parts.next().unwrap_or(Value::Nil))?;
            let (Some(host), Some(port)) = (primary.first(), primary.get(1)) else {
                continue;
            };
            let host = text(host)?;
            let port = u16::try_from(number(port)?)
                .map_err(|_| StoreError::Corrupt("CLUSTER SLOTS: bad port".into()))?;
            if !host.is_empty() && !addresses.contains(&(host.clone(), port)) {
                addresses.push((host, port));
            }
        }
        if addresses.is_empty() {
            return Err(StoreError::unavailable(format!(
                "Redis Cluster {} reports no primary serving slots",
                self.url
            )));
        }
        addresses.sort_by_key(|(host, port)| format!("{host}:{port}"));
        Ok(addresses
            .into_iter()
            .map(|address| Node {
                connection: Connection::Cluster(cluster.clone()),
                address: Some(address),
            })
            .collect())
    }
}

fn broken_connection(e: &RedisError) -> bool {
    !e.is_timeout() && (e.is_io_error() || e.is_unrecoverable_error())
}

fn config_value(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) if items.len() >= 2 => text(&items[1]).ok(),
        Value::Map(pairs) => pairs.first().and_then(|(_, v)| text(v).ok()),
        _ => None,
    }
}

fn text(value: &Value) -> Result<String, StoreError> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone())
            .map_err(|_| StoreError::Corrupt("a Redis answer is not UTF-8".into())),
        Value::SimpleString(s) => Ok(s.clone()),
        Value::Int(i) => Ok(i.to_string()),
        Value::Okay => Ok("OK".into()),
        other => Err(StoreError::Corrupt(format!(
            "unexpected Redis answer {other:?}"
        ))),
    }
}

fn number(value: &Value) -> Result<i64, StoreError> {
    match value {
        Value::Int(i) => Ok(*i),
        other => {
            let t = text(other)?;
            t.parse()
                .map_err(|_| StoreError::Corrupt(format!("{t:?} is not a number")))
        }
    }
}

fn items(value: Value) -> Result<Vec<Value>, StoreError> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(StoreError::Corrupt(format!(
            "unexpected Redis answer {other:?}"
        ))),
    }
}

/// A record from the flat `HGETALL` list of its hash.
fn record_from_hash(flat: &[Value]) -> Result<Record, StoreError> {
    let mut v = None;
    let mut key = None;
    let mut tenant = None;
    let mut scope = None;
    let mut state = None;
    let mut token = None;
    let (mut claimed_at, mut lease_end, mut ttl_ms, mut expires_at) = (None, None, None, None);
    let mut outcome = None;
    for pair in flat.chunks(2) {
        let [name, value] = pair else {
            return Err(StoreError::Corrupt("odd HGETALL answer".into()));
        };
        let name = text(name)?;
        match name.as_str() {
            "v" => v = Some(number(value)?),
            "key" => key = Some(text(value)?),
            "tenant" => tenant = Some(text(value)?),
            "scope" => scope = Some(text(value)?),
            "state" => state = Some(text(value)?),
            "token" => token = Some(text(value)?),
            "claimed_at" => claimed_at = Some(number(value)?),
            "lease_end" => lease_end = Some(number(value)?),
            "ttl_ms" => ttl_ms = Some(number(value)?),
            "expires_at" => expires_at = Some(number(value)?),
            "outcome" => outcome = Some(text(value)?),
            _ => {}
        }
    }
    let key_text = key.clone().unwrap_or_default();
    let missing = |field: &str| StoreError::Corrupt(format!("record {key_text} has no `{field}`"));
    let format = v.ok_or_else(|| missing("v"))?;
    if format != RECORD_FORMAT as i64 {
        return Err(StoreError::Corrupt(format!(
            "record {key_text} has format {format}, not {RECORD_FORMAT}; upgrade idemkit to read it"
        )));
    }
    let state = match state.as_deref() {
        Some("in_progress") => RecordState::InProgress,
        Some("completed") => RecordState::Completed,
        other => {
            return Err(StoreError::Corrupt(format!(
                "record {key_text} has state {other:?}"
            )))
        }
    };
    let token_text = token.ok_or_else(|| missing("token"))?;
    let token = Token::from_hex(&token_text).ok_or_else(|| {
        StoreError::Corrupt(format!("record {key_text} has token {token_text:?}"))
    })?;
    let outcome = match outcome {
        None => None,
        Some(json) => Some(serde_json::from_str::<Outcome>(&json).map_err(|e| {
            StoreError::Corrupt(format!("record {key_text} has an unreadable outcome: {e}"))
        })?),
    };
    Ok(Record {
        format: RECORD_FORMAT,
        key: key.ok_or_else(|| missing("key"))?,
        tenant,
        scope: scope.ok_or_else(|| missing("scope"))?,
        state,
        token,
        claimed_at: claimed_at.ok_or_else(|| missing("claimed_at"))?,
        lease_end: lease_end.ok_or_else(|| missing("lease_end"))?,
        ttl_ms: ttl_ms.ok_or_else(|| missing("ttl_ms"))?,
        expires_at: expires_at.ok_or_else(|| missing("expires_at"))?,
        outcome,
    })
}

/// The outcome as stored: its JSON and its kind.
fn outcome_fields(outcome: &Outcome) -> (String, &'static str) {
    let kind = match outcome {
        Outcome::Success(_) => "success",
        Outcome::Failure(_) => "failure",
        Outcome::TooLarge { .. } => "too_large",
    };
    let json = serde_json::to_string(outcome).expect("an outcome always serialises");
    (json, kind)
}

/// `{answer, now, rest...}` from a script.
fn reply(value: Value) -> Result<(String, i64, Vec<Value>), StoreError> {
    let mut items = items(value)?.into_iter();
    let answer = text(&items.next().unwrap_or(Value::Nil))?;
    let now = number(&items.next().unwrap_or(Value::Nil))?;
    Ok((answer, now, items.collect()))
}

fn record_in(rest: Vec<Value>) -> Result<Record, StoreError> {
    let flat = items(rest.into_iter().next().unwrap_or(Value::Nil))?;
    record_from_hash(&flat)
}

/// A `list` position: on a cluster the node being scanned (`host:port`), where its SCAN is
/// (`None` when it finished) and keys it returned that the previous page had no room for.
///
/// Rendered `r1.<scan>.<pending>` for one server, `c1/<node>/<scan>/<pending>` for a cluster.
struct ListCursor {
    node: Option<String>,
    scan: Option<u64>,
    pending: Vec<String>,
}

impl ListCursor {
    fn parse(text: Option<&str>, cluster: bool) -> Result<ListCursor, StoreError> {
        let Some(text) = text else {
            return Ok(ListCursor {
                node: None,
                scan: Some(0),
                pending: Vec::new(),
            });
        };
        let bad =
            || StoreError::Configuration(format!("bad list cursor {text:?} for the Redis store"));
        let (node, scan, pending) = if cluster {
            let rest = text.strip_prefix("c1/").ok_or_else(bad)?;
            let mut parts = rest.splitn(3, '/');
            let (Some(node), Some(scan), Some(pending)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad());
            };
            if node_address(node).is_none() {
                return Err(bad());
            }
            (Some(node.to_owned()), scan, pending)
        } else {
            let rest = text.strip_prefix("r1.").ok_or_else(bad)?;
            let (scan, pending) = rest.split_once('.').ok_or_else(bad)?;
            (None, scan, pending)
        };
        let scan = if scan == "-" {
            None
        } else {
            Some(scan.parse().map_err(|_| bad())?)
        };
        let pending: Vec<String> = if pending.is_empty() {
            Vec::new()
        } else {
            pending.split(',').map(str::to_owned).collect()
        };
        if !pending.iter().all(|p| is_record_suffix(p)) {
            return Err(bad());
        }
        Ok(ListCursor {
            node,
            scan,
            pending,
        })
    }

    /// Moves to the next node (in `nodes`' order) once this one is done; answers whether it did.
    fn advance(&mut self, nodes: &[String]) -> bool {
        if self.scan.is_some() || !self.pending.is_empty() {
            return false;
        }
        let Some(current) = &self.node else {
            return false;
        };
        match nodes.iter().find(|n| n.as_str() > current.as_str()) {
            Some(next) => {
                self.node = Some(next.clone());
                self.scan = Some(0);
                true
            }
            None => false,
        }
    }

    fn render(&self) -> Option<String> {
        if self.scan.is_none() && self.pending.is_empty() {
            return None;
        }
        let scan = match self.scan {
            Some(c) => c.to_string(),
            None => "-".into(),
        };
        match &self.node {
            Some(node) => Some(format!("c1/{node}/{scan}/{}", self.pending.join(","))),
            None => Some(format!("r1.{scan}.{}", self.pending.join(","))),
        }
    }
}

/// `host:port` split into its parts.
fn node_address(name: &str) -> Option<(String, u16)> {
    let (host, port) = name.rsplit_once(':')?;
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port.parse().ok()?))
}

/// A candidate of `newest`: ordered so that the greater is the newer (`claimed_at`, then the
/// smaller key hex).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ranked {
    claimed_at: i64,
    hex: Reverse<String>,
    key: String,
    node: usize,
}

/// From `HMGET claimed_at expires_at state lease_end`: the record's `claimed_at` when it is
/// live and passes the filter's status, else `None` (gone, expired, or another status).
fn ranking_fields(answer: Value, now: i64, filter: &ListFilter) -> Result<Option<i64>, StoreError> {
    if let Value::ServerError(e) = &answer {
        return Err(StoreError::unavailable(format!("Redis: {e:?}")));
    }
    let fields = items(answer)?;
    let field = |i: usize| fields.get(i).filter(|v| !matches!(v, Value::Nil));
    let (Some(claimed_at), Some(expires_at), Some(state)) = (field(0), field(1), field(2)) else {
        return Ok(None);
    };
    if now >= number(expires_at)? {
        return Ok(None);
    }
    if let Some(wanted) = filter.status {
        let status = match text(state)?.as_str() {
            "completed" => Status::Completed,
            _ => match field(3) {
                Some(lease_end) if now < number(lease_end)? => Status::InProgress,
                _ => Status::Abandoned,
            },
        };
        if status != wanted {
            return Ok(None);
        }
    }
    Ok(Some(number(claimed_at)?))
}

/// The sum of the integer answers of a pipeline (deleted counts).
fn sum(values: &[Value]) -> Result<u64, StoreError> {
    let mut total = 0u64;
    for value in values {
        if let Value::ServerError(e) = value {
            return Err(StoreError::unavailable(format!("Redis: {e:?}")));
        }
        total += number(value)?.max(0) as u64;
    }
    Ok(total)
}

#[async_trait]
impl Store for RedisStore {
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        let key = self.record_key(request.id);
        let token = request.token.hex();
        let lease_ms = request.lease_ms.min(MAX_SPAN_MS);
        let ttl_ms = request.ttl_ms.min(MAX_SPAN_MS);
        let key_hex = request.id.key.hex();
        let value: Value = self
            .run(|mut c| {
                let mut invocation = CLAIM.key(&key);
                invocation
                    .arg(&token)
                    .arg(lease_ms)
                    .arg(ttl_ms)
                    .arg(if request.retry_failure { "1" } else { "0" })
                    .arg(RECORD_FORMAT)
                    .arg(&key_hex)
                    .arg(request.scope)
                    .arg(if request.id.tenant.is_some() {
                        "1"
                    } else {
                        "0"
                    })
                    .arg(request.id.tenant.unwrap_or(""));
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        let (answer, now_ms, rest) = reply(value)?;
        let claim = match answer.as_str() {
            "acquired" => Claim::Acquired {
                lease_end: number(rest.first().unwrap_or(&Value::Nil))?,
            },
            "completed" => Claim::Completed(record_in(rest)?),
            "in_progress" => Claim::InProgress(record_in(rest)?),
            "abandoned" => Claim::Abandoned(record_in(rest)?),
            other => {
                return Err(StoreError::Corrupt(format!(
                    "unexpected claim answer {other:?} from {}",
                    self.url
                )))
            }
        };
        Ok(ClaimReply { now_ms, claim })
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        outcome: &Outcome,
        ttl_ms: u64,
    ) -> Result<Completion, StoreError> {
        let key = self.record_key(id);
        let token = token.hex();
        let (json, kind) = outcome_fields(outcome);
        let ttl_ms = ttl_ms.min(MAX_SPAN_MS);
        let value: Value = self
            .run(|mut c| {
                let mut invocation = COMPLETE.key(&key);
                invocation.arg(&token).arg(&json).arg(kind).arg(ttl_ms);
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        let (answer, _, rest) = reply(value)?;
        match answer.as_str() {
            "recorded" => Ok(Completion::Recorded),
            "not_owner" if rest.is_empty() => Ok(Completion::NotOwner(None)),
            "not_owner" => Ok(Completion::NotOwner(Some(record_in(rest)?))),
            other => Err(StoreError::Corrupt(format!(
                "unexpected complete answer {other:?} from {}",
                self.url
            ))),
        }
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError> {
        let key = self.record_key(id);
        let token = token.hex();
        let deleted: i64 = self
            .run(|mut c| {
                let mut invocation = RELEASE.key(&key);
                invocation.arg(&token);
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        Ok(deleted == 1)
    }

    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
        let key = self.record_key(id);
        let value: Value = self
            .run(|mut c| {
                let invocation = GET.key(&key);
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        let mut parts = items(value)?.into_iter();
        let now = number(&parts.next().unwrap_or(Value::Nil))?;
        let flat = items(parts.next().unwrap_or(Value::Nil))?;
        if flat.is_empty() {
            return Ok((None, now));
        }
        let record = record_from_hash(&flat)?;
        Ok(((!record.is_expired(now)).then_some(record), now))
    }

    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError> {
        let mut position = ListCursor::parse(cursor, self.cluster.is_some())?;
        let limit = if filter.limit == 0 {
            1000
        } else {
            filter.limit
        };
        let pattern = self.list_pattern(filter);
        let mut connection = self.connection();
        let now = self.server_time(&mut connection).await?;
        // On a cluster: every primary's `host:port`, in the order pages visit them.
        let nodes: Vec<String> = if self.cluster.is_some() {
            let mut names: Vec<String> = self
                .primaries()
                .await?
                .iter()
                .filter_map(Node::name)
                .collect();
            names.sort();
            if cursor.is_none() {
                position.node = names.first().cloned();
            }
            names
        } else {
            Vec::new()
        };
        let mut node = match &position.node {
            Some(name) => self.node_named(name)?,
            None => Node {
                connection,
                address: None,
            },
        };
        let mut records = Vec::new();
        let mut steps = 0;
        loop {
            if !position.pending.is_empty() {
                let room = limit - records.len();
                let take = position.pending.len().min(room.max(1));
                let batch: Vec<String> = position.pending.drain(..take).collect();
                let mut pipe = redis::pipe();
                for suffix in &batch {
                    pipe.cmd("HGETALL").arg(format!("{}{suffix}", self.prefix));
                }
                let hashes = node
                    .pipeline(&pipe, batch.len())
                    .await
                    .map_err(|e| self.error(e))?;
                for hash in hashes {
                    let flat = items(hash)?;
                    if flat.is_empty() {
                        continue;
                    }
                    let record = record_from_hash(&flat)?;
                    if !record.is_expired(now) && filter.matches(&record, now) {
                        records.push(record);
                    }
                }
                if records.len() >= limit {
                    break;
                }
                continue;
            }
            let Some(scan) = position.scan else {
                if position.advance(&nodes) {
                    node = self.node_named(position.node.as_deref().unwrap_or_default())?;
                    continue;
                }
                break;
            };
            if steps >= LIST_SCAN_STEPS && !records.is_empty() {
                break;
            }
            if steps >= LIST_SCAN_STEPS * 4 {
                break;
            }
            steps += 1;
            let (next, keys) = self
                .scan(&mut node, scan, &pattern, limit.clamp(100, SCAN_BATCH * 2))
                .await?;
            position.scan = (next != 0).then_some(next);
            position.pending = keys
                .into_iter()
                .filter_map(|k| k.strip_prefix(&self.prefix).map(str::to_owned))
                .filter(|s| is_record_suffix(s))
                .collect();
        }
        // A node that finished hands over to the next one, so the cursor ends only after the last.
        position.advance(&nodes);
        Ok(Page {
            records,
            next_cursor: position.render(),
            now_ms: now,
        })
    }

    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError> {
        let key = self.record_key(id);
        let mut invocation = RESOLVE.key(&key);
        invocation.arg(expected.hex());
        match resolution {
            Resolution::Release => {
                invocation.arg("release").arg("").arg("").arg(0);
            }
            Resolution::Complete { outcome, ttl_ms } => {
                let (json, kind) = outcome_fields(outcome);
                invocation
                    .arg("complete")
                    .arg(json)
                    .arg(kind)
                    .arg((*ttl_ms).min(MAX_SPAN_MS));
            }
        }
        // Sent once more on a broken connection, like every operation; should the first one
        // have landed, the second finds the outcome recorded (see `repeated_resolution`).
        let mut connection = self.connection();
        let (value, repeated): (Value, bool) = match invocation.invoke_async(&mut connection).await
        {
            Ok(value) => (value, false),
            Err(e) if broken_connection(&e) => (
                invocation
                    .invoke_async(&mut connection)
                    .await
                    .map_err(|e| self.error(e))?,
                true,
            ),
            Err(e) => return Err(self.error(e)),
        };
        let (answer, _, rest) = reply(value)?;
        let answer = match answer.as_str() {
            "done" => Resolved::Done,
            "not_found" => Resolved::NotFound,
            "already_completed" => Resolved::AlreadyCompleted(record_in(rest)?),
            "token_mismatch" => Resolved::TokenMismatch(record_in(rest)?),
            other => {
                return Err(StoreError::Corrupt(format!(
                    "unexpected resolve answer {other:?} from {}",
                    self.url
                )))
            }
        };
        Ok(if repeated {
            repeated_resolution(answer, expected, resolution)
        } else {
            answer
        })
    }

    async fn newest(&self, filter: &ListFilter) -> Result<Page, StoreError> {
        let limit = if filter.limit == 0 { 100 } else { filter.limit };
        let pattern = self.list_pattern(filter);
        let now = self.server_time(&mut self.connection()).await?;
        // Every primary is scanned whole, reading only what ranks and filters a record
        // (claimed_at and the status fields); the best `limit` (and a few spare, for records
        // that change meanwhile) are kept, then read whole.
        let keep = limit + 16;
        let mut best: BinaryHeap<Reverse<Ranked>> = BinaryHeap::with_capacity(keep + 1);
        let mut primaries = self.primaries().await?;
        for (index, primary) in primaries.iter_mut().enumerate() {
            // The next SCAN step runs while the keys of the previous one are read: two round
            // trips in flight, on a second handle of the same connection.
            let mut scanner = Node {
                connection: primary.connection.clone(),
                address: primary.address.clone(),
            };
            let mut cursor = Some(0u64);
            let mut batch: Vec<String> = Vec::new();
            while cursor.is_some() || !batch.is_empty() {
                let step = cursor;
                let scanner = &mut scanner;
                let pattern = &pattern;
                let scan = async move {
                    match step {
                        Some(c) => self
                            .scan(scanner, c, pattern, NEWEST_SCAN_BATCH)
                            .await
                            .map(Some),
                        None => Ok(None),
                    }
                };
                let read = self.rank(primary, std::mem::take(&mut batch), now, filter);
                let (scanned, ranked) = tokio::try_join!(scan, read)?;
                for (claimed_at, key) in ranked {
                    let hex = key.rsplit(':').next().unwrap_or_default().to_owned();
                    best.push(Reverse(Ranked {
                        claimed_at,
                        hex: Reverse(hex),
                        key,
                        node: index,
                    }));
                    if best.len() > keep {
                        best.pop();
                    }
                }
                match scanned {
                    Some((next, keys)) => {
                        cursor = (next != 0).then_some(next);
                        batch = keys
                            .into_iter()
                            .filter(|k| k.strip_prefix(&self.prefix).is_some_and(is_record_suffix))
                            .collect();
                    }
                    None => cursor = None,
                }
            }
        }
        // Read the chosen records whole, from the node that holds each.
        let mut chosen: Vec<Ranked> = best.into_iter().map(|Reverse(r)| r).collect();
        chosen.sort_by(|a, b| b.cmp(a));
        let mut records = Vec::with_capacity(chosen.len());
        for (index, primary) in primaries.iter_mut().enumerate() {
            let keys: Vec<&str> = chosen
                .iter()
                .filter(|r| r.node == index)
                .map(|r| r.key.as_str())
                .collect();
            if keys.is_empty() {
                continue;
            }
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("HGETALL").arg(*key);
            }
            let hashes = primary
                .pipeline(&pipe, keys.len())
                .await
                .map_err(|e| self.error(e))?;
            for hash in hashes {
                let flat = items(hash)?;
                if flat.is_empty() {
                    continue;
                }
                let record = record_from_hash(&flat)?;
                if !record.is_expired(now) && filter.matches(&record, now) {
                    records.push(record);
                }
            }
        }
        records.sort_by(newest_first);
        records.truncate(limit);
        Ok(Page {
            records,
            next_cursor: None,
            now_ms: now,
        })
    }

    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        // One key, one DEL: Redis expires a record itself at `expires_at`, so a present key is a
        // live record.
        let key = self.record_key(id);
        let deleted: i64 = self
            .run(|mut c| {
                let command = redis::cmd("DEL").arg(&key).clone();
                async move { command.query_async(&mut c).await }
            })
            .await?;
        Ok(deleted == 1)
    }

    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
        let tenant = tenant.map(nfc);
        let pattern = format!(
            "{}{}:*",
            glob_escape(&self.prefix),
            tenant_segment(tenant.as_deref())
        );
        let mut removed = 0u64;
        for mut primary in self.primaries().await? {
            let mut cursor = 0u64;
            loop {
                let (next, keys) = self
                    .scan(&mut primary, cursor, &pattern, SCAN_BATCH)
                    .await?;
                if !keys.is_empty() {
                    // One UNLINK per key, pipelined: one round trip per batch, and no multi-key
                    // command that Redis Cluster would refuse across slots.
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.cmd("UNLINK").arg(key);
                    }
                    let counts = primary
                        .pipeline(&pipe, keys.len())
                        .await
                        .map_err(|e| self.error(e))?;
                    removed += sum(&counts)?;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(removed)
    }

    async fn purge_expired(&self) -> Result<u64, StoreError> {
        // Redis expires records itself at `expires_at` (PEXPIREAT); this sweep finds what is
        // expired but still present (the millisecond at `expires_at`, or a record whose TTL was
        // removed by hand) and deletes it, each key checked atomically on the server's clock.
        let pattern = format!("{}*", glob_escape(&self.prefix));
        // SCRIPT LOAD: on a cluster the client sends it to every primary.
        self.run(|mut c| async move { PURGE_ONE.prepare_invoke().load_async(&mut c).await })
            .await?;
        let mut removed = 0u64;
        for mut primary in self.primaries().await? {
            let mut cursor = 0u64;
            loop {
                let (next, keys) = self
                    .scan(&mut primary, cursor, &pattern, SCAN_BATCH)
                    .await?;
                let keys: Vec<String> = keys
                    .into_iter()
                    .filter(|k| k.strip_prefix(&self.prefix).is_some_and(is_record_suffix))
                    .collect();
                if !keys.is_empty() {
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.cmd("EVALSHA")
                            .arg(PURGE_ONE.get_hash())
                            .arg(1)
                            .arg(key);
                    }
                    let counts = primary
                        .pipeline(&pipe, keys.len())
                        .await
                        .map_err(|e| self.error(e))?;
                    removed += sum(&counts)?;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(removed)
    }

    fn max_outcome_bytes(&self) -> usize {
        self.max_outcome_bytes
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_segment_is_underscore_or_t_and_hex() {
        assert_eq!(tenant_segment(None), "_");
        assert_eq!(tenant_segment(Some("")), "t");
        assert_eq!(tenant_segment(Some("acme")), "t61636d65");
        assert_eq!(tenant_segment(Some("é")), "tc3a9");
    }

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("idemkit:"), "idemkit:");
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }

    #[test]
    fn record_suffixes_are_recognised() {
        let key = "ab".repeat(32);
        assert!(is_record_suffix(&format!("_:{key}")));
        assert!(is_record_suffix(&format!("t:{key}")));
        assert!(is_record_suffix(&format!("t61:{key}")));
        assert!(!is_record_suffix(&format!("t6:{key}")));
        assert!(!is_record_suffix(&format!("x:{key}")));
        assert!(!is_record_suffix("_:abc"));
    }

    #[test]
    fn list_cursors_round_trip() {
        let key = "cd".repeat(32);
        let c = ListCursor {
            node: None,
            scan: Some(17),
            pending: vec![format!("_:{key}"), format!("t61:{key}")],
        };
        let text = c.render().unwrap();
        let back = ListCursor::parse(Some(&text), false).unwrap();
        assert_eq!(back.scan, Some(17));
        assert_eq!(back.pending, c.pending);
        let done = ListCursor {
            node: None,
            scan: None,
            pending: vec![],
        };
        assert_eq!(done.render(), None);
        assert!(ListCursor::parse(Some("nonsense"), false).is_err());
        assert!(ListCursor::parse(Some(&text), true).is_err());
    }

    #[test]
    fn cluster_list_cursors_name_the_node_and_move_on_in_order() {
        let key = "ef".repeat(32);
        let nodes = vec!["127.0.0.1:7001".to_owned(), "127.0.0.1:7002".to_owned()];
        let mut c = ListCursor {
            node: Some(nodes[0].clone()),
            scan: Some(5),
            pending: vec![format!("_:{key}")],
        };
        let text = c.render().unwrap();
        assert_eq!(text, format!("c1/127.0.0.1:7001/5/_:{key}"));
        let back = ListCursor::parse(Some(&text), true).unwrap();
        assert_eq!(back.node.as_deref(), Some("127.0.0.1:7001"));
        assert_eq!((back.scan, back.pending), (Some(5), c.pending.clone()));
        assert!(ListCursor::parse(Some(&text), false).is_err());
        assert!(!c.advance(&nodes));
        c.scan = None;
        c.pending.clear();
        assert!(c.advance(&nodes));
        assert_eq!(
            (c.node.as_deref(), c.scan),
            (Some("127.0.0.1:7002"), Some(0))
        );
        c.scan = None;
        assert!(!c.advance(&nodes));
        assert_eq!(c.render(), None);
    }

    /// Needs the local cluster (`IDEMKIT_REDIS_CLUSTER_URL`, see scripts/services.sh).
    #[tokio::test]
    async fn a_node_pipeline_with_keys_of_other_nodes_falls_back_to_routing_by_key() {
        let Ok(url) = std::env::var("IDEMKIT_REDIS_CLUSTER_URL") else {
            eprintln!("SKIPPED: IDEMKIT_REDIS_CLUSTER_URL not set — run scripts/test.sh");
            return;
        };
        let prefix = format!("idemkit-unit-{}:", &Token::random().hex()[..10]);
        let options = StoreOptions {
            key_prefix: Some(prefix.clone()),
            ..StoreOptions::default()
        };
        let store = RedisStore::connect(&url, &options).await.unwrap();
        let mut nodes = store.primaries().await.unwrap();
        assert_eq!(nodes.len(), 3);
        // Keys in many slots: most belong to other nodes than the one the pipeline goes to.
        let keys: Vec<String> = (0..20).map(|i| format!("{prefix}{i}")).collect();
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("UNLINK").arg(key);
        }
        let mut cluster = store.connection();
        for key in &keys {
            let _: () = redis::cmd("SET")
                .arg(key)
                .arg("x")
                .query_async(&mut cluster)
                .await
                .unwrap();
        }
        // The node deletes its own keys and refuses the others (MOVED); in the end every key is
        // gone and every command has its own answer.
        let values = nodes[0].pipeline(&pipe, keys.len()).await.unwrap();
        assert_eq!(values.len(), keys.len());
        assert!(sum(&values).unwrap() <= keys.len() as u64);
        for key in &keys {
            let exists: i64 = redis::cmd("EXISTS")
                .arg(key)
                .query_async(&mut cluster)
                .await
                .unwrap();
            assert_eq!(exists, 0, "{key}");
        }
        let again = nodes[1].pipeline(&pipe, keys.len()).await.unwrap();
        assert_eq!(sum(&again).unwrap(), 0);
    }

    #[test]
    fn cluster_urls_name_every_seed_node() {
        assert_eq!(cluster_node_urls("redis://127.0.0.1:6379/0").unwrap(), None);
        assert_eq!(
            cluster_node_urls("redis+cluster://:pw@10.0.0.1:7001,10.0.0.2:7002/").unwrap(),
            Some(vec![
                "redis://:pw@10.0.0.1:7001/".to_owned(),
                "redis://:pw@10.0.0.2:7002/".to_owned()
            ])
        );
        assert_eq!(
            cluster_node_urls("REDISS+CLUSTER://h:7001?protocol=3").unwrap(),
            Some(vec!["rediss://h:7001/?protocol=3".to_owned()])
        );
        assert!(cluster_node_urls("redis+cluster://h:7001/2").is_err());
        assert!(cluster_node_urls("redis+cluster:///").is_err());
    }
}
