//! Redis Cluster: the node URLs of a `redis+cluster://` URL, the cluster client, and the
//! primaries that `forget`, `list`, `newest` and `purge_expired` SCAN one by one, each a
//! [`Node`] whose commands are routed to it by address.

use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, Value};

use super::codec::{items, number, text};
use super::pool::{broken_connection, Connection, Timeouts};
use super::RedisStore;
use crate::error::StoreError;
use crate::store::redact_url;

/// How often the cluster client retries a command (redirects, reconnects) within its timeout.
const CLUSTER_RETRIES: u32 = 6;

/// The node URLs of a `redis+cluster://` / `rediss+cluster://` URL, or `None` for any other URL.
pub(super) fn cluster_node_urls(url: &str) -> Result<Option<Vec<String>>, StoreError> {
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

/// Connects to the cluster whose seed nodes are `nodes` (`shown`: the URL without secrets).
pub(super) async fn connect(
    nodes: Vec<String>,
    shown: &str,
    timeouts: Timeouts,
) -> Result<ClusterConnection, StoreError> {
    let client = ClusterClientBuilder::new(nodes)
        .connection_timeout(timeouts.connect)
        .response_timeout(timeouts.response)
        .retries(CLUSTER_RETRIES)
        .min_retry_wait(10)
        .max_retry_wait(500)
        .build()
        .map_err(|e| StoreError::Configuration(format!("bad Redis Cluster URL {shown}: {e}")))?;
    client.get_async_connection().await.map_err(|e| {
                if e.to_string().contains("cluster support disabled") {
                    StoreError::Configuration(format!(
                        "{shown} is not a Redis Cluster (cluster support disabled); open it as redis://host:port/ instead"
                    ))
                } else {
                    StoreError::driver(format!("cannot connect to Redis Cluster {shown}"), e)
                }
            })
}

/// One primary to SCAN: the server itself, or a cluster node by address.
pub(super) struct Node {
    pub(super) connection: Connection,
    pub(super) address: Option<(String, u16)>,
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
    pub(super) fn name(&self) -> Option<String> {
        self.address
            .as_ref()
            .map(|(host, port)| format!("{host}:{port}"))
    }

    /// Sends `cmd` (read-only or safe to repeat) to this node; once more if the connection
    /// broke (the connection reconnects meanwhile), as every store operation does.
    pub(super) async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T, RedisError> {
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
    pub(super) async fn pipeline(
        &mut self,
        pipe: &Pipeline,
        count: usize,
    ) -> Result<Vec<Value>, RedisError> {
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

/// `host:port` split into its parts.
pub(super) fn node_address(name: &str) -> Option<(String, u16)> {
    let (host, port) = name.rsplit_once(':')?;
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port.parse().ok()?))
}

impl RedisStore {
    /// The cluster node `host:port` (from a list cursor).
    pub(super) fn node_named(&self, name: &str) -> Result<Node, StoreError> {
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
    pub(super) async fn primaries(&self) -> Result<Vec<Node>, StoreError> {
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

#[cfg(test)]
mod tests {
    use super::super::codec::sum;
    use super::*;
    use crate::record::Token;
    use crate::store::StoreOptions;

    /// Needs the local cluster (`IDEMKIT_REDIS_CLUSTER_URL`, see scripts/services.sh).
    #[tokio::test]
    async fn a_node_pipeline_with_keys_of_other_nodes_falls_back_to_routing_by_key() {
        let Some(url) = crate::test_skip::env_url("IDEMKIT_REDIS_CLUSTER_URL") else {
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
