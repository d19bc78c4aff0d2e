//! The Redis store (feature `redis`, Redis ≥ 7.0): one string per record (record v2); a new key
//! is claimed, and a repeat answered, by one plain command.
//!
//! **Key layout** (SPEC §4): `<prefix><t>:<key>`, where `t` is `_` for no tenant, else `t`
//! followed by the lowercase hex of the tenant's UTF-8 bytes, and `key` is the 64-hex key. There
//! is no hash tag: every operation touches one key, so Redis Cluster spreads records freely.
//!
//! **Value** (v2, SPEC v1.2 §9 rule 2): `2<s>|token|claimed_at|lease_ms|ttl_ms|expires_at|
//! fingerprint|<n>|` then `n` bytes of scope, then the outcome JSON (written by Rust or Java and
//! never re-encoded by Lua, so a success comes back byte for byte). `<s>` is `p` for a claim in
//! progress, whose `claimed_at` and `expires_at` are empty: the key's native expiry
//! (`PEXPIRETIME`) is its `expires_at`, `lease_end = expires_at - ttl_ms`; or the outcome kind of
//! a completed record (`s`uccess, `f`ailure, `t`oo large, `i`ndeterminate). Key and tenant are
//! the key's name. `Record::format` stays 1: the record's fields are those of v1.
//!
//! **Claims**: `SET key <claim> NX GET PX (lease + ttl)` claims a free key (nil) or answers the
//! value there; a completed record is answered from it. A claim in progress (its lease is judged
//! on the server's clock), a failure to replace, a v1 record (`WRONGTYPE`) or an error go to the
//! claim script, which decides alone. The `now_ms` of a claim the plain command settles is the
//! server's time as last read, moved on by the monotonic clock (`clock`): it only reports.
//!
//! **Time**: every script reads Redis `TIME` as *now*; process clocks are never compared. Records
//! expire natively and every script checks `expires_at` as well.
//!
//! **Rolling upgrade**: records of the v1 layout (one hash each, `v`, `key`, `tenant`, `scope`,
//! `state`, `token`, `claimed_at`, `lease_end`, `ttl_ms`, `expires_at`, `outcome`,
//! `outcome_kind`, `fingerprint`) are read by every script (`read` in `scripts/prelude.lua`) and
//! replaced by a v2 string when written. A process of the previous version meets a v2 record with
//! `HMGET`: `WRONGTYPE`, a store error, and its body does not run.
//!
//! **Connections**: a few multiplexed connections used round-robin, each a
//! [`redis::aio::ConnectionManager`] that reconnects in the background after the server comes
//! back. A command that fails because its connection broke is sent once more, in every store
//! operation (claims, completions and releases act by owner token; scans, reads and deletes are
//! safe to repeat; a repeated `resolve` that finds its own outcome recorded answers done), so
//! the first call of any operation after an outage or a restart already works. A C or Java
//! caller's commands go on its caller lane's own connection instead (`lane`, `pool`), which
//! connects again at the command after one that broke it.
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
//!
//! **Code**: the Lua scripts are `.lua` files under `scripts/` ; the key and cursor
//! layout is in `layout`, cluster discovery and per-node routing in `cluster`, reading Redis
//! answers in `codec`, the connections in `pool` (a caller lane's own in `lane`); this file holds the [`Store`] operations.

mod clock;
mod cluster;
mod codec;
mod lane;
mod layout;
mod pool;
mod scripts;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::AtomicUsize;

use async_trait::async_trait;
use redis::cluster_async::ClusterConnection;
use redis::{RedisError, Value};

use self::clock::ServerClock;
use self::cluster::{cluster_node_urls, Node};
pub use self::codec::RECORD_FIELDS;
use self::codec::{
    claim_value, claimed_record_in, config_value, found_v2, items, number, record_from_hash,
    record_in, reply, sum,
};
pub use self::layout::{glob_escape, tenant_segment};
use self::layout::{is_record_suffix, ListCursor};
use self::pool::{broken_connection, Connection};
pub use self::scripts::sources as script_sources;
use self::scripts::{
    CLAIM, COMPLETE, DELETE_HELD, FORGET_ONE, GET, PURGE_ONE, RELEASE, RESOLVE, TAKE_OVER,
};
use super::{
    checked_timeout, newest_first, nfc, not_deleted, redact_url, repeated_resolution,
    take_url_settings, Claim, ClaimReply, ClaimRequest, Completion, Deleted, ListFilter, Page,
    RecordId, Resolution, Resolved, Store, StoreOptions, TakeOver, TakeOverRequest,
    DEFAULT_MAX_OUTCOME_BYTES, MAX_SPAN_MS,
};
use crate::error::StoreError;
use crate::record::{Outcome, Record, Token, RECORD_FORMAT};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "idemkit:";

/// How many keys one SCAN step asks for (`forget`, `purge_expired`).
const SCAN_BATCH: usize = 500;
/// How many keys one SCAN step of `newest` asks for (it reads every key: few round trips).
const NEWEST_SCAN_BATCH: usize = 5000;
/// How many SCAN steps one `list` page may take before it answers with what it has.
const LIST_SCAN_STEPS: usize = 32;

/// Records in Redis: see the module documentation for the layout.
pub struct RedisStore {
    connections: Vec<Connection>,
    /// Makes the caller lanes' connections; None for a Redis Cluster.
    connector: Option<pool::Connector>,
    /// Set for a Redis Cluster.
    cluster: Option<ClusterConnection>,
    next: AtomicUsize,
    prefix: String,
    url: String,
    max_outcome_bytes: usize,
    /// The server's time as last read (the `now_ms` of claims one plain command settles).
    clock: ServerClock,
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
    ///
    /// Timeouts: `options.connect_timeout` (default 2 s) and `options.response_timeout`
    /// (default 5 s), or the URL's `connect_timeout_ms` and `response_timeout_ms`, which win.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<RedisStore, StoreError> {
        let shown = redact_url(url);
        let (url, settings) = take_url_settings(url, "Redis")?;
        let url = url.as_str();
        let timeouts = pool::Timeouts {
            connect: settings
                .connect_timeout
                .or(checked_timeout("connect_timeout", options.connect_timeout)?)
                .unwrap_or(pool::CONNECT_TIMEOUT),
            response: settings
                .response_timeout
                .or(checked_timeout(
                    "response_timeout",
                    options.response_timeout,
                )?)
                .unwrap_or(pool::RESPONSE_TIMEOUT),
        };
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
            let cluster = cluster::connect(nodes, &shown, timeouts).await?;
            let store = RedisStore {
                connections: vec![Connection::Cluster(cluster.clone())],
                connector: None,
                cluster: Some(cluster),
                next: AtomicUsize::new(0),
                prefix,
                url: shown,
                max_outcome_bytes,
                clock: ServerClock::new(),
            };
            store.check_eviction_policy(options.allow_evicting).await?;
            store
                .clock
                .saw(store.server_time(&mut store.connection()).await?);
            return Ok(store);
        }
        let client = redis::Client::open(url).map_err(|e| {
            StoreError::Configuration(format!(
                "bad Redis URL {shown}: {e}; use redis://[user:password@]host[:port][/db] or rediss://..."
            ))
        })?;
        let connector = pool::Connector::new(&client, &shown, timeouts);
        let connections = connector.connect().await?;
        let store = RedisStore {
            connections,
            connector: Some(connector),
            cluster: None,
            next: AtomicUsize::new(0),
            prefix,
            url: shown,
            max_outcome_bytes,
            clock: ServerClock::new(),
        };
        store.refuse_cluster_node().await?;
        store.check_eviction_policy(options.allow_evicting).await?;
        store
            .clock
            .saw(store.server_time(&mut store.connection()).await?);
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
                return Err(StoreError::driver(format!("cannot reach {at}"), e))
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

    /// `newest`: `(claimed_at, key)` of the live `keys` (on `node`) that pass `filter`.
    async fn rank(
        &self,
        node: &mut Node,
        keys: Vec<String>,
        now: i64,
        filter: &ListFilter,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        let records = self.read_whole(node, &keys, now, filter).await?;
        Ok(records
            .into_iter()
            .map(|(key, record)| (record.claimed_at, key))
            .collect())
    }

    /// The live records at `keys` (on `node`) that pass `filter`, with their keys: one pipelined
    /// run of the get script per key, which reads either format (the script must be loaded).
    async fn read_whole(
        &self,
        node: &mut Node,
        keys: &[String],
        now: i64,
        filter: &ListFilter,
    ) -> Result<Vec<(String, Record)>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.cmd("EVALSHA").arg(GET.get_hash()).arg(1).arg(key);
        }
        let answers = node
            .pipeline(&pipe, keys.len())
            .await
            .map_err(|e| self.error(e))?;
        let mut records = Vec::with_capacity(keys.len());
        for (key, answer) in keys.iter().zip(answers) {
            if let Value::ServerError(e) = &answer {
                return Err(StoreError::unavailable(format!("Redis: {e:?}")));
            }
            let mut parts = items(answer)?.into_iter();
            let _ = parts.next();
            let flat = items(parts.next().unwrap_or(Value::Nil))?;
            if flat.is_empty() {
                continue;
            }
            let record = record_from_hash(&flat)?;
            if !record.is_expired(now) && filter.matches(&record, now) {
                records.push((key.clone(), record));
            }
        }
        Ok(records)
    }

    /// Loads the get script (on a cluster the client loads it on every primary).
    async fn load_get(&self) -> Result<(), StoreError> {
        self.run(|mut c| async move { GET.prepare_invoke().load_async(&mut c).await })
            .await?;
        Ok(())
    }

    fn error(&self, e: RedisError) -> StoreError {
        StoreError::driver(format!("Redis at {}", self.url), e)
    }

    /// SCANs `pattern` on every primary in batches and sends `command` for each key that `keep`
    /// accepts, one pipeline per batch; answers the sum of the replies (what was removed).
    async fn sweep(
        &self,
        pattern: &str,
        keep: impl Fn(&str) -> bool,
        command: impl Fn(&mut redis::Pipeline, &str),
    ) -> Result<u64, StoreError> {
        let mut removed = 0u64;
        for mut primary in self.primaries().await? {
            let mut cursor = 0u64;
            loop {
                let (next, keys) = self.scan(&mut primary, cursor, pattern, SCAN_BATCH).await?;
                let keys: Vec<String> = keys.into_iter().filter(|k| keep(k)).collect();
                if !keys.is_empty() {
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        command(&mut pipe, key);
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

#[async_trait]
impl Store for RedisStore {
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        let key = self.record_key(request.id);
        let token = request.token.hex();
        let lease_ms = request.lease_ms.min(MAX_SPAN_MS);
        let ttl_ms = request.ttl_ms.min(MAX_SPAN_MS);
        // The common paths are one plain command (record v2): a free key is claimed, or the
        // record there is answered, by `SET key <claim> NX GET PX (lease + ttl)`. Whatever needs
        // the server's clock (a claim to judge), a failure to replace, a v1 record (WRONGTYPE) or
        // a server without `SET NX GET` goes to the claim script, which decides alone.
        if lease_ms + ttl_ms > 0 {
            let value = claim_value(&token, lease_ms, ttl_ms, request.fingerprint, request.scope);
            let command = redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("NX")
                .arg("GET")
                .arg("PX")
                .arg(lease_ms + ttl_ms)
                .clone();
            let found: Option<Value> = self
                .run(|mut c| {
                    let command = command.clone();
                    async move {
                        match command.query_async::<Value>(&mut c).await {
                            Ok(value) => Ok(Some(value)),
                            Err(e) if e.code().is_some() => Ok(None),
                            Err(e) => Err(e),
                        }
                    }
                })
                .await?;
            match found {
                Some(Value::Nil) => {
                    let now_ms = self.clock.now();
                    return Ok(ClaimReply {
                        now_ms,
                        claim: Claim::Acquired {
                            lease_end: now_ms + lease_ms as i64,
                        },
                    });
                }
                Some(Value::BulkString(bytes)) => {
                    let hex = request.id.key.hex();
                    if let Some(Some(record)) = found_v2(&bytes, &hex, request.id.tenant) {
                        if !request.replaces_failure(&record) {
                            let now_ms = self.clock.now().min(record.expires_at - 1);
                            return Ok(ClaimReply {
                                now_ms,
                                claim: Claim::Completed(record),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
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
                    .arg(request.id.tenant.unwrap_or(""))
                    .arg(request.fingerprint.unwrap_or(""))
                    .arg(if request.payload_checked { "1" } else { "0" });
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        let (answer, now_ms, rest) = reply(value)?;
        self.clock.saw(now_ms);
        let claim = match answer.as_str() {
            "acquired" => Claim::Acquired {
                lease_end: number(rest.first().unwrap_or(&Value::Nil))?,
            },
            "completed" => Claim::Completed(claimed_record_in(rest)?),
            "in_progress" => Claim::InProgress(claimed_record_in(rest)?),
            "abandoned" => Claim::Abandoned(claimed_record_in(rest)?),
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
        let (json, kind) = outcome.stored();
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

    async fn take_over(&self, request: &TakeOverRequest<'_>) -> Result<TakeOver, StoreError> {
        let key = self.record_key(request.id);
        let expected = request.expected.hex();
        let token = request.token.hex();
        let lease_ms = request.lease_ms.min(MAX_SPAN_MS);
        let ttl_ms = request.ttl_ms.min(MAX_SPAN_MS);
        // Sent again on a broken connection like every operation: should the first one have
        // landed, the second finds the record held by this very token, which is the take-over
        // done.
        let value: Value = self
            .run(|mut c| {
                let mut invocation = TAKE_OVER.key(&key);
                invocation
                    .arg(&expected)
                    .arg(&token)
                    .arg(lease_ms)
                    .arg(ttl_ms);
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        let (answer, _, rest) = reply(value)?;
        match answer.as_str() {
            "acquired" => Ok(TakeOver::Acquired {
                lease_end: number(rest.first().unwrap_or(&Value::Nil))?,
            }),
            "lost" if rest.is_empty() => Ok(TakeOver::Lost(None)),
            "lost" => {
                let record = record_in(rest)?;
                Ok(if record.token == request.token {
                    TakeOver::Acquired {
                        lease_end: record.lease_end,
                    }
                } else {
                    TakeOver::Lost(Some(record))
                })
            }
            other => Err(StoreError::Corrupt(format!(
                "unexpected take-over answer {other:?} from {}",
                self.url
            ))),
        }
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
        self.load_get().await?;
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
                let batch: Vec<String> = position
                    .pending
                    .drain(..take)
                    .map(|suffix| format!("{}{suffix}", self.prefix))
                    .collect();
                let found = self.read_whole(&mut node, &batch, now, filter).await?;
                records.extend(found.into_iter().map(|(_, record)| record));
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
                let (json, kind) = outcome.stored();
                invocation
                    .arg("complete")
                    .arg(json)
                    .arg(kind)
                    .arg((*ttl_ms).min(MAX_SPAN_MS));
            }
        }
        // Sent once more on a broken connection, like every operation; should the first one
        // have landed, the second finds the outcome recorded (see `repeated_resolution`).
        let mut connection = self.lane_or_next().await;
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
        self.load_get().await?;
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
            let keys: Vec<String> = chosen
                .iter()
                .filter(|r| r.node == index)
                .map(|r| r.key.clone())
                .collect();
            let found = self.read_whole(primary, &keys, now, filter).await?;
            records.extend(found.into_iter().map(|(_, record)| record));
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

    async fn delete_held(&self, id: RecordId<'_>, expected: Token) -> Result<Deleted, StoreError> {
        let key = self.record_key(id);
        let token = expected.hex();
        let deleted: i64 = self
            .run(|mut c| {
                let mut invocation = DELETE_HELD.key(&key);
                invocation.arg(&token);
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        if deleted == 1 {
            return Ok(Deleted::Done);
        }
        Ok(not_deleted(self.get(id).await?.0))
    }

    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
        let tenant = tenant.map(nfc);
        let pattern = format!(
            "{}{}:*",
            glob_escape(&self.prefix),
            tenant_segment(tenant.as_deref())
        );
        // Only keys of a record's shape, each deleted by a script that checks it is a record: an
        // application's key under the same prefix (or under an empty one) is never touched. One
        // EVALSHA per key, pipelined: one round trip per batch, and no multi-key command that
        // Redis Cluster would refuse across slots.
        self.run(|mut c| async move { FORGET_ONE.prepare_invoke().load_async(&mut c).await })
            .await?;
        self.sweep(
            &pattern,
            |key| key.strip_prefix(&self.prefix).is_some_and(is_record_suffix),
            |pipe, key| {
                pipe.cmd("EVALSHA")
                    .arg(FORGET_ONE.get_hash())
                    .arg(1)
                    .arg(key);
            },
        )
        .await
    }

    async fn purge_expired(&self) -> Result<u64, StoreError> {
        // Redis expires records itself at `expires_at` (PEXPIREAT); this sweep finds what is
        // expired but still present (the millisecond at `expires_at`, or a record whose TTL was
        // removed by hand) and deletes it, each key checked atomically on the server's clock.
        let pattern = format!("{}*", glob_escape(&self.prefix));
        // SCRIPT LOAD: on a cluster the client sends it to every primary.
        self.run(|mut c| async move { PURGE_ONE.prepare_invoke().load_async(&mut c).await })
            .await?;
        self.sweep(
            &pattern,
            |key| key.strip_prefix(&self.prefix).is_some_and(is_record_suffix),
            |pipe, key| {
                pipe.cmd("EVALSHA")
                    .arg(PURGE_ONE.get_hash())
                    .arg(1)
                    .arg(key);
            },
        )
        .await
    }

    fn max_outcome_bytes(&self) -> usize {
        self.max_outcome_bytes
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}
