//! The Redis store against a real 3-primary Redis Cluster (`IDEMKIT_REDIS_CLUSTER_URL`,
//! `redis+cluster://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003/`, set by `scripts/test.sh` after
//! `scripts/services.sh start`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idemkit::store::redis::RedisStore;
use idemkit::store::{Claim, ClaimRequest, ListFilter, RecordId, StoreOptions};
use idemkit::testing::{random_key, random_tenant};
use idemkit::{CallContext, CallError, Executor, KeyInput, Policy, Store, Token, Tool};
use tokio::sync::RwLock;

/// Tests take this for reading; the one that changes a node's configuration takes it for writing.
static CLUSTER_CONFIG: RwLock<()> = RwLock::const_new(());

mod common;

use common::{free_port, make_certificates, prefix_options as options, wait_until};

fn cluster_url() -> Option<String> {
    common::env_url("IDEMKIT_REDIS_CLUSTER_URL")
}

fn unique_prefix() -> String {
    common::unique_prefix("idemkit-cluster-test")
}

/// `host:port` of each seed node in the cluster URL.
fn seed_nodes(url: &str) -> Vec<String> {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split(['/', '?']).next().unwrap();
    let hosts = authority.rsplit('@').next().unwrap();
    hosts.split(',').map(str::to_owned).collect()
}

/// A plain connection to one node (`host:port`), to look at what that node holds.
async fn node(address: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://{address}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every primary's `host:port` with the slot ranges it serves (from `CLUSTER SLOTS`).
async fn primaries(url: &str) -> BTreeMap<String, Vec<(i64, i64)>> {
    let mut conn = node(&seed_nodes(url)[0]).await;
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut out: BTreeMap<String, Vec<(i64, i64)>> = BTreeMap::new();
    for range in slots {
        let redis::Value::Array(parts) = range else {
            panic!("CLUSTER SLOTS answer {range:?}")
        };
        let start: i64 = redis::from_redis_value(&parts[0]).unwrap();
        let end: i64 = redis::from_redis_value(&parts[1]).unwrap();
        let (host, port): (String, i64) = match &parts[2] {
            redis::Value::Array(p) => (
                redis::from_redis_value(&p[0]).unwrap(),
                redis::from_redis_value(&p[1]).unwrap(),
            ),
            other => panic!("CLUSTER SLOTS node {other:?}"),
        };
        out.entry(format!("{host}:{port}"))
            .or_default()
            .push((start, end));
    }
    out
}

/// The keys matching `pattern` that one node holds (SCAN on that node only).
async fn keys_on(address: &str, pattern: &str) -> BTreeSet<String> {
    let mut conn = node(address).await;
    let mut cursor = 0u64;
    let mut keys = BTreeSet::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

fn request<'a>(id: RecordId<'a>, token: Token) -> ClaimRequest<'a> {
    common::claim_request(id, "redis_cluster_test", token, 60_000, 120_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_store_passes_the_conformance_suite() {
    let Some(url) = cluster_url() else { return };
    let _shared = CLUSTER_CONFIG.read().await;
    let store = idemkit::store::open(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    assert!(
        store.describe().starts_with("redis+cluster://"),
        "{}",
        store.describe()
    );
    common::check_conformance(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_spread_over_every_primary_and_forget_removes_them_from_each() {
    let Some(url) = cluster_url() else { return };
    let _shared = CLUSTER_CONFIG.read().await;
    let prefix = unique_prefix();
    let store = RedisStore::connect(&url, &options(&prefix)).await.unwrap();
    assert!(store.is_cluster());
    let primaries = primaries(&url).await;
    assert_eq!(primaries.len(), 3, "a 3-primary cluster: {primaries:?}");

    // 40 tenants (and no tenant) with 3 records each.
    let tenants: Vec<Option<String>> = std::iter::once(None)
        .chain((0..40).map(|_| Some(random_tenant())))
        .collect();
    let mut keys_of: BTreeMap<Option<String>, BTreeSet<String>> = BTreeMap::new();
    for tenant in &tenants {
        for _ in 0..3 {
            let key = random_key();
            let id = RecordId {
                tenant: tenant.as_deref(),
                key: &key,
            };
            let reply = store.claim(&request(id, Token::random())).await.unwrap();
            assert!(matches!(reply.claim, Claim::Acquired { .. }));
            keys_of
                .entry(tenant.clone())
                .or_default()
                .insert(store.record_key(id));
        }
    }
    let all: BTreeSet<String> = keys_of.values().flatten().cloned().collect();
    assert_eq!(all.len(), 41 * 3);

    // Each record lives on the primary serving its slot, and every primary holds some.
    let pattern = format!("{prefix}*");
    let mut on_node: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for address in primaries.keys() {
        on_node.insert(address.clone(), keys_on(address, &pattern).await);
    }
    let mut any = node(primaries.keys().next().unwrap()).await;
    for key in &all {
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query_async(&mut any)
            .await
            .unwrap();
        let owner = primaries
            .iter()
            .find(|(_, ranges)| ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .map(|(address, _)| address.clone())
            .unwrap();
        assert!(
            on_node[&owner].contains(key),
            "{key} (slot {slot}) is not on {owner}"
        );
    }
    for (address, keys) in &on_node {
        assert!(
            !keys.is_empty(),
            "no record on primary {address}: {on_node:?}"
        );
        let dbsize: i64 = redis::cmd("DBSIZE")
            .query_async(&mut node(address).await)
            .await
            .unwrap();
        assert!(dbsize >= keys.len() as i64, "{address}: DBSIZE {dbsize}");
    }
    let total: usize = on_node.values().map(BTreeSet::len).sum();
    assert_eq!(total, all.len());

    // forget(tenant) removes that tenant's records from every node and nothing else.
    let mut forgotten = BTreeSet::new();
    for tenant in tenants.iter().take(21) {
        let removed = store.forget(tenant.as_deref()).await.unwrap();
        assert_eq!(removed, 3, "forget({tenant:?})");
        forgotten.extend(keys_of[tenant].iter().cloned());
        let (record, _) = store
            .get(RecordId {
                tenant: tenant.as_deref(),
                key: &random_key(),
            })
            .await
            .unwrap();
        assert!(record.is_none());
    }
    let mut left = BTreeSet::new();
    for address in primaries.keys() {
        let keys = keys_on(address, &pattern).await;
        assert!(
            keys.is_disjoint(&forgotten),
            "{address} still holds forgotten records"
        );
        left.extend(keys);
    }
    let expected: BTreeSet<String> = all.difference(&forgotten).cloned().collect();
    assert_eq!(left, expected, "other tenants' records stay");
    assert!(
        forgotten
            .iter()
            .any(|k| on_node.values().any(|n| n.contains(k))),
        "sanity"
    );
    let nodes_forgotten_on = on_node
        .values()
        .filter(|keys| !keys.is_disjoint(&forgotten))
        .count();
    assert_eq!(
        nodes_forgotten_on, 3,
        "the forgotten tenants had records on every primary"
    );

    // Forgetting again finds nothing; the rest goes too.
    assert_eq!(store.forget(tenants[0].as_deref()).await.unwrap(), 0);
    for tenant in tenants.iter().skip(21) {
        assert_eq!(store.forget(tenant.as_deref()).await.unwrap(), 3);
    }
    for address in primaries.keys() {
        assert!(keys_on(address, &pattern).await.is_empty(), "{address}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_pages_across_every_node() {
    let Some(url) = cluster_url() else { return };
    let _shared = CLUSTER_CONFIG.read().await;
    let prefix = unique_prefix();
    let store = idemkit::store::open(&url, &options(&prefix)).await.unwrap();
    let tenant = random_tenant();
    let other = random_tenant();
    let mut mine = BTreeSet::new();
    for i in 0..90 {
        let key = random_key();
        let t = if i % 3 == 0 { &other } else { &tenant };
        let id = RecordId {
            tenant: Some(t),
            key: &key,
        };
        store.claim(&request(id, Token::random())).await.unwrap();
        if t == &tenant {
            mine.insert(key.hex());
        }
    }
    assert_eq!(mine.len(), 60);

    for (filter, expected) in [
        (
            ListFilter {
                tenant: Some(Some(tenant.clone())),
                limit: 7,
                ..ListFilter::default()
            },
            60,
        ),
        (
            ListFilter {
                limit: 11,
                ..ListFilter::default()
            },
            90,
        ),
    ] {
        let mut seen = BTreeSet::new();
        let mut cursor: Option<String> = None;
        let mut nodes_in_cursors = BTreeSet::new();
        let mut pages = 0;
        loop {
            let page = store.list(&filter, cursor.as_deref()).await.unwrap();
            pages += 1;
            assert!(page.records.len() <= filter.limit, "page over the limit");
            for record in &page.records {
                if filter.tenant.is_some() {
                    assert_eq!(record.tenant.as_deref(), Some(tenant.as_str()));
                }
                seen.insert(record.key.clone());
            }
            match page.next_cursor {
                Some(next) => {
                    assert!(next.starts_with("c1/"), "{next}");
                    nodes_in_cursors.insert(next.split('/').nth(1).unwrap().to_owned());
                    cursor = Some(next);
                }
                None => break,
            }
            assert!(pages < 200, "list does not end");
        }
        assert_eq!(seen.len(), expected, "every record once over the pages");
        if filter.tenant.is_some() {
            assert_eq!(seen, mine);
        }
        assert!(pages >= expected / filter.limit, "{pages} pages");
        assert_eq!(
            nodes_in_cursors.len(),
            3,
            "the cursors walk every primary: {nodes_in_cursors:?}"
        );
    }
    assert!(store
        .list(&ListFilter::default(), Some("r1.0."))
        .await
        .is_err());
    store.forget(Some(&tenant)).await.unwrap();
    store.forget(Some(&other)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_calls_on_the_cluster_run_the_body_once() {
    let Some(url) = cluster_url() else { return };
    let _shared = CLUSTER_CONFIG.read().await;
    let store = idemkit::store::open(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    let executor = Executor::new(store.clone());
    let tool = Tool::new(
        "cluster_send",
        Policy::default().with_lease(Duration::from_secs(30)),
    )
    .unwrap();
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.clone());
    let runs = Arc::new(AtomicUsize::new(0));
    let input = format!(
        r#"{{"to":"a@example.com","n":"{}"}}"#,
        Token::random().hex()
    );
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (executor, tool, context, runs, input) = (
            executor.clone(),
            tool.clone(),
            context.clone(),
            runs.clone(),
            input.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let result: Result<String, CallError<std::io::Error>> = executor
                .call(&tool, &context, KeyInput::Json(&input), |_| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok("sent once".to_string())
                })
                .await;
            result
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), "sent once");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the body ran once");
    store.forget(Some(&tenant)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_evicting_policy_on_any_primary_is_refused() {
    let Some(url) = cluster_url() else { return };
    let _exclusive = CLUSTER_CONFIG.write().await;
    let primaries = primaries(&url).await;
    let last = primaries.keys().last().unwrap().clone();
    let mut conn = node(&last).await;
    let set = |policy: &'static str| {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory-policy")
            .arg(policy)
            .clone()
    };
    let _: () = set("allkeys-lru").query_async(&mut conn).await.unwrap();
    let refused = RedisStore::connect(&url, &StoreOptions::default()).await;
    let allowed = RedisStore::connect(
        &url,
        &StoreOptions {
            allow_evicting: true,
            ..StoreOptions::default()
        },
    )
    .await;
    let _: () = set("noeviction").query_async(&mut conn).await.unwrap();
    let error = refused.expect_err("an evicting primary is refused");
    let message = error.to_string();
    assert!(message.contains("allkeys-lru"), "{message}");
    assert!(message.contains(&last), "names the node: {message}");
    assert!(allowed.is_ok());
    RedisStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_urls_are_checked() {
    let Some(url) = cluster_url() else { return };
    let bad = url.trim_end_matches('/').to_owned() + "/3";
    let error = idemkit::store::open(&bad, &StoreOptions::default())
        .await
        .err()
        .expect("a database number is refused");
    assert!(error.to_string().contains("database 0"), "{error}");

    // A plain redis:// URL naming a cluster node is refused with the cluster form.
    let single = format!("redis://{}/", seed_nodes(&url)[0]);
    let error = idemkit::store::open(&single, &StoreOptions::default())
        .await
        .err()
        .expect("a cluster node behind redis:// is refused");
    assert!(error.to_string().contains("redis+cluster://"), "{error}");
    assert_eq!(error.kind(), idemkit::ErrorKind::Configuration, "{error}");

    // And a redis+cluster:// URL naming a server without cluster support.
    if let Ok(plain) = std::env::var("IDEMKIT_REDIS_URL") {
        let authority = plain
            .split_once("://")
            .unwrap()
            .1
            .split('/')
            .next()
            .unwrap();
        let error = idemkit::store::open(
            &format!("redis+cluster://{authority}/"),
            &StoreOptions::default(),
        )
        .await
        .err()
        .expect("a server without cluster support is refused");
        assert_eq!(error.kind(), idemkit::ErrorKind::Configuration, "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forget_and_purge_work_in_batches_on_every_node() {
    let Some(url) = cluster_url() else { return };
    let _shared = CLUSTER_CONFIG.read().await;
    let prefix = unique_prefix();
    let store = Arc::new(RedisStore::connect(&url, &options(&prefix)).await.unwrap());
    let tenant = random_tenant();

    // More records than one SCAN batch (500) on each node.
    let scope = "redis_cluster_test";
    common::claim_many(store.clone(), scope, &tenant, 16, 125, (60_000, 120_000)).await;
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 2000);
    for address in primaries(&url).await.keys() {
        assert!(keys_on(address, &format!("{prefix}*")).await.is_empty());
    }

    // Records expired but still present (their TTL removed by hand) are purged on every node.
    let client = redis::cluster::ClusterClient::new(
        seed_nodes(&url)
            .iter()
            .map(|a| format!("redis://{a}/"))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mut cluster = client.get_async_connection().await.unwrap();
    let mut keys = Vec::new();
    for _ in 0..30 {
        let key = random_key();
        let id = RecordId {
            tenant: None,
            key: &key,
        };
        let mut short = request(id, Token::random());
        short.lease_ms = 50;
        short.ttl_ms = 50;
        store.claim(&short).await.unwrap();
        let name = store.record_key(id);
        let _: i64 = redis::cmd("PERSIST")
            .arg(&name)
            .query_async(&mut cluster)
            .await
            .unwrap();
        keys.push(name);
    }
    let live_key = random_key();
    store
        .claim(&request(
            RecordId {
                tenant: None,
                key: &live_key,
            },
            Token::random(),
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let on_nodes = {
        let mut n = BTreeSet::new();
        for (address, _) in primaries(&url).await {
            if !keys_on(&address, &format!("{prefix}_:*")).await.is_empty() {
                n.insert(address);
            }
        }
        n
    };
    assert_eq!(on_nodes.len(), 3, "expired records on every primary");
    assert_eq!(store.purge_expired().await.unwrap(), 30);
    for key in &keys {
        let exists: i64 = redis::cmd("EXISTS")
            .arg(key)
            .query_async(&mut cluster)
            .await
            .unwrap();
        assert_eq!(exists, 0, "{key}");
    }
    assert_eq!(store.purge_expired().await.unwrap(), 0);
    assert_eq!(
        store.forget(None).await.unwrap(),
        1,
        "the live record stays"
    );
}

// ---------------------------------------------------------------------------------------------
// A private 3-primary cluster whose nodes the test stops and restarts.

struct PrivateCluster {
    nodes: Vec<(u16, std::process::Child)>,
    dir: std::path::PathBuf,
    /// TLS only (certificates `ca.pem`, `cert.pem`, `key.pem` in `dir`) and this password.
    tls: bool,
}

const TLS_PASSWORD: &str = "s3cret";

impl PrivateCluster {
    /// Three cluster-enabled `redis-server`s on free ports, joined by `redis-cli --cluster create`.
    fn start() -> Option<PrivateCluster> {
        Self::start_with(false)
    }

    /// The same over TLS only, with a password; `None` (and a loud skip) without openssl.
    fn start_tls() -> Option<PrivateCluster> {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> Option<PrivateCluster> {
        let dir = std::env::temp_dir().join(format!(
            "idemkit-private-cluster-{}",
            &Token::random().hex()[..10]
        ));
        std::fs::create_dir_all(&dir).unwrap();
        if tls && !make_certificates(&dir) {
            common::skip("openssl", "openssl could not make test certificates");
            return None;
        }
        let mut cluster = PrivateCluster {
            nodes: Vec::new(),
            dir,
            tls,
        };
        let mut ports = Vec::new();
        while ports.len() < 3 {
            let port = free_port();
            // The cluster bus listens on port + 10000.
            if port < 55000
                && !ports.contains(&port)
                && std::net::TcpListener::bind(("127.0.0.1", port + 10000)).is_ok()
            {
                ports.push(port);
            }
        }
        for port in ports {
            let child = cluster.spawn(port)?;
            cluster.nodes.push((port, child));
        }
        for (port, _) in &cluster.nodes {
            wait_until(&format!("node {port} answers"), || {
                cluster.cli(*port, &["ping"]).contains("PONG")
            });
        }
        let hosts: Vec<String> = cluster
            .nodes
            .iter()
            .map(|(p, _)| format!("127.0.0.1:{p}"))
            .collect();
        let created = std::process::Command::new("redis-cli")
            .args(cluster.cli_options())
            .args(["--cluster", "create"])
            .args(&hosts)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            created.status.success(),
            "{}",
            String::from_utf8_lossy(&created.stdout)
        );
        cluster.wait_ok();
        Some(cluster)
    }

    fn spawn(&self, port: u16) -> Option<std::process::Child> {
        let dir = self.dir.join(port.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = std::process::Command::new("redis-server");
        if self.tls {
            let file = |name: &str| self.dir.join(name).to_string_lossy().into_owned();
            command
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--tls-cluster", "yes", "--tls-auth-clients", "no"])
                .args(["--tls-cert-file", &file("cert.pem")])
                .args(["--tls-key-file", &file("key.pem")])
                .args(["--tls-ca-cert-file", &file("ca.pem")])
                .args(["--requirepass", TLS_PASSWORD, "--masterauth", TLS_PASSWORD]);
        } else {
            command.args(["--port", &port.to_string()]);
        }
        command
            .args(["--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--maxmemory-policy", "noeviction"])
            .arg("--dir")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        common::spawn_redis_server(&mut command)
    }

    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|(p, _)| format!("127.0.0.1:{p}"))
            .collect();
        if self.tls {
            format!("rediss+cluster://:{TLS_PASSWORD}@{}/", hosts.join(","))
        } else {
            format!("redis+cluster://{}/", hosts.join(","))
        }
    }

    fn cli_options(&self) -> Vec<String> {
        if self.tls {
            let ca = self.dir.join("ca.pem").to_string_lossy().into_owned();
            [
                "--tls",
                "--cacert",
                &ca,
                "-a",
                TLS_PASSWORD,
                "--no-auth-warning",
            ]
            .map(str::to_owned)
            .to_vec()
        } else {
            Vec::new()
        }
    }

    fn cli(&self, port: u16, args: &[&str]) -> String {
        std::process::Command::new("redis-cli")
            .args(self.cli_options())
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    fn wait_ok(&self) {
        for (port, _) in &self.nodes {
            wait_until(&format!("node {port} reports cluster_state:ok"), || {
                self.cli(*port, &["cluster", "info"])
                    .contains("cluster_state:ok")
            });
        }
    }

    fn stop(&mut self, i: usize) {
        let (_, child) = &mut self.nodes[i];
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Starts node `i` again on its port, from its `nodes.conf`: it rejoins as the same node.
    fn restart(&mut self, i: usize) {
        let port = self.nodes[i].0;
        self.nodes[i].1 = self.spawn(port).expect("redis-server ran before");
        self.wait_ok();
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_primary_fails_its_calls_unrun_and_the_store_recovers() {
    if cluster_url().is_none() {
        return;
    }
    let Some(mut cluster) = PrivateCluster::start() else {
        return;
    };
    let store = idemkit::store::open(&cluster.url(), &StoreOptions::default())
        .await
        .unwrap();
    let executor = Executor::new(store.clone());
    let tool = Tool::new(
        "cluster_outage",
        Policy::new(idemkit::KeyStrategy::Explicit).with_lease(Duration::from_secs(30)),
    )
    .unwrap();
    let context = CallContext::new().tenant("outage");
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |key: String| {
        let (executor, tool, context, runs) = (
            executor.clone(),
            tool.clone(),
            context.clone(),
            runs.clone(),
        );
        let n = key.len();
        async move {
            executor
                .call(&tool, &context, KeyInput::Explicit(&key), |_| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(n)
                })
                .await
        }
    };
    let keys: Vec<String> = (0..12).map(|i| format!("order-{i}")).collect();
    for key in &keys {
        call(key.clone()).await.unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 12);

    cluster.stop(2);
    let mut failed = Vec::new();
    for key in &keys {
        let started = std::time::Instant::now();
        match call(key.clone()).await {
            Ok(n) => assert_eq!(n, key.len()),
            Err(CallError::Idempotency(e)) => {
                assert_eq!(e.kind(), idemkit::ErrorKind::StoreUnavailable, "{e}");
                failed.push(key.clone());
            }
            Err(other) => panic!("{other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "a call took {:?} with a primary down",
            started.elapsed()
        );
    }
    eprintln!(
        "{} of {} calls failed unrun with a primary down",
        failed.len(),
        keys.len()
    );
    assert!(
        !failed.is_empty(),
        "some of 12 keys live on the stopped primary"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        12,
        "nothing ran again: answered calls replayed, the others failed unrun"
    );
    assert!(
        store.forget(Some("nobody")).await.is_err(),
        "forget cannot reach every primary"
    );

    cluster.restart(2);
    // The restarted node lost its records (no persistence): those keys run once more, the rest
    // replay. The first call after the outage already works.
    let mut recovered = None;
    for _ in 0..50 {
        match call(failed[0].clone()).await {
            Ok(_) => {
                recovered = Some(());
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    recovered.expect("the store recovers after the primary is back");
    for key in &keys {
        call(key.clone()).await.unwrap();
    }
    let rerun = runs.load(Ordering::SeqCst) - 12;
    // The keys on the stopped node ran once more (it lost them); the others replayed.
    assert!((1..=failed.len()).contains(&rerun), "{rerun} re-runs");
    assert!(store.forget(Some("outage")).await.unwrap() as usize >= keys.len());
}

/// `rediss+cluster://` with a password, against a private TLS-only cluster whose certificate is
/// signed by a test CA trusted through `SSL_CERT_FILE` (read by rustls-native-certs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_cluster_urls_connect_over_tls_with_a_password() {
    if cluster_url().is_none() {
        return;
    }
    let Some(cluster) = PrivateCluster::start_tls() else {
        return;
    };
    std::env::set_var("SSL_CERT_FILE", cluster.dir.join("ca.pem"));
    let url = cluster.url();
    let store = idemkit::store::open(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    let shown = store.describe();
    assert!(shown.starts_with("rediss+cluster://"), "{shown}");
    assert!(!shown.contains(TLS_PASSWORD), "{shown}");
    let tenant = random_tenant();
    for _ in 0..30 {
        let key = random_key();
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        let reply = store.claim(&request(id, Token::random())).await.unwrap();
        assert!(matches!(reply.claim, Claim::Acquired { .. }));
    }
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 30);
    let wrong = url.replace(TLS_PASSWORD, "wrong-pw");
    let error = idemkit::store::open(&wrong, &StoreOptions::default())
        .await
        .err()
        .expect("a wrong password is refused");
    assert!(!error.to_string().contains("wrong-pw"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_and_list_take_the_tenant_in_nfc_form() {
    let Some(url) = cluster_url() else { return };
    let _config = CLUSTER_CONFIG.read().await;
    let store = RedisStore::connect(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    common::check_tenants_are_taken_in_nfc_form(Arc::new(store)).await;
}

/// After a primary restarts, the first `list`, `newest`, `purge_expired` and `forget` already
/// work: each node's broken connection is noticed and the command sent once more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scans_work_at_once_after_a_primary_restarts() {
    if cluster_url().is_none() {
        return;
    }
    let Some(mut cluster) = PrivateCluster::start() else {
        return;
    };
    let store = RedisStore::connect(&cluster.url(), &StoreOptions::default())
        .await
        .unwrap();
    let tenant = random_tenant();
    for _ in 0..30 {
        let key = random_key();
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        store.claim(&request(id, Token::random())).await.unwrap();
    }
    let filter = ListFilter {
        tenant: Some(Some(tenant.clone())),
        ..ListFilter::default()
    };
    let mut restart = |i: usize| {
        cluster.stop(i);
        cluster.restart(i);
    };
    for i in 0..3 {
        restart(i);
        let mut cursor: Option<String> = None;
        loop {
            let page = store
                .list(&filter, cursor.as_deref())
                .await
                .unwrap_or_else(|e| panic!("list after node {i} restarted: {e}"));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        restart(i);
        store
            .newest(&filter)
            .await
            .unwrap_or_else(|e| panic!("newest after node {i} restarted: {e}"));
        restart(i);
        store
            .purge_expired()
            .await
            .unwrap_or_else(|e| panic!("purge after node {i} restarted: {e}"));
        restart(i);
        store
            .forget(Some(&tenant))
            .await
            .unwrap_or_else(|e| panic!("forget after node {i} restarted: {e}"));
    }
}

/// `newest` reads every primary: the five records claimed last come first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn newest_reads_every_primary() {
    let Some(url) = cluster_url() else { return };
    let _config = CLUSTER_CONFIG.read().await;
    let prefix = unique_prefix();
    let store: Arc<dyn Store> =
        Arc::new(RedisStore::connect(&url, &options(&prefix)).await.unwrap());
    let tenant = random_tenant();
    common::claim_many(
        store.clone(),
        "cluster_test",
        &tenant,
        4,
        300,
        (600_000, 600_000),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let newest = common::claim_five_newest(&store, &tenant).await;
    common::check_newest_first(
        &store,
        &tenant,
        &newest,
        &["--store", &url, "--prefix", &prefix],
    )
    .await;
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 1205);
}
