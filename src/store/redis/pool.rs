//! The connections of a Redis store: a few multiplexed connections used round-robin.
//!
//! **Why hand-made**: each [`ConnectionManager`] is already multiplexed (any number of commands
//! in flight at once) and reconnects by itself in the background, so nothing is checked out or
//! returned: a check-out pool (bb8, deadpool) would add a crate and a wait for a free
//! connection and gain nothing. What is left is a handful of managers, so that one slow answer
//! does not hold up every command behind it on one socket, picked in turn, and the one rule of
//! this store that no pool knows: a command whose connection broke is sent once more. On a
//! cluster the one [`ClusterConnection`] keeps its own connection per node.
//!
//! On one server, a call's commands from a C or Java caller go on the connection of its caller
//! lane (see `crate::runtime`), made on the lane and driven by the caller's thread: a
//! [`LaneConnection`] (one socket, read in the caller's future; see `lane`), or where that is
//! not used (`#insecure` TLS, RESP3) a manager of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, Value};
use tokio::sync::OnceCell;

use super::lane::LaneConnection;
use super::RedisStore;
use crate::error::StoreError;
use crate::runtime::LaneLocal;

/// How many multiplexed connections a store keeps (used round-robin), besides one per caller
/// lane that C and Java callers used (`crate::runtime::lanes`, `IDEMKIT_CALLER_LANES`).
const CONNECTIONS: usize = 4;
/// How long connecting to the server may take, unless configured (`connect_timeout_ms`).
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one command may wait for its answer, unless configured (`response_timeout_ms`).
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The timeouts of a store's connections.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    pub(super) connect: Duration,
    pub(super) response: Duration,
}

/// A connection: to one server, or to a whole cluster (routing each command by its key).
#[derive(Clone)]
pub(super) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// A caller lane's own connection (see `lane`).
    Lane(LaneConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
            Connection::Lane(c) => c.req_packed_command(cmd),
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
            Connection::Lane(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
            Connection::Lane(c) => c.get_db(),
        }
    }
}

/// How a store makes a connection to one server: the same for each of its own and for those
/// of the caller lanes.
pub(super) struct Connector {
    client: redis::Client,
    config: ConnectionManagerConfig,
    shown: String,
    timeouts: Timeouts,
    /// One connection per caller lane (see `crate::runtime`), made on that lane at first use
    /// and used only there, so that a C or Java caller's thread drives its socket itself.
    lanes: LaneLocal<Arc<OnceCell<Connection>>>,
}

impl Connector {
    pub(super) fn new(client: &redis::Client, shown: &str, timeouts: Timeouts) -> Connector {
        Connector {
            client: client.clone(),
            config: ConnectionManagerConfig::new()
                .set_number_of_retries(0)
                .set_connection_timeout(timeouts.connect)
                .set_response_timeout(timeouts.response),
            shown: shown.to_owned(),
            timeouts,
            lanes: LaneLocal::default(),
        }
    }

    /// A manager that never retries by itself (the store sends a command once more itself,
    /// see [`RedisStore::run`]), bound to the current runtime.
    async fn connect_one(&self) -> Result<Connection, StoreError> {
        let manager = ConnectionManager::new_with_config(self.client.clone(), self.config.clone())
            .await
            .map_err(|e| StoreError::driver(format!("cannot connect to {}", self.shown), e))?;
        Ok(Connection::Single(manager))
    }

    /// The store's own connections to the server: [`CONNECTIONS`] managers.
    pub(super) async fn connect(&self) -> Result<Vec<Connection>, StoreError> {
        let mut connections = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            connections.push(self.connect_one().await?);
        }
        Ok(connections)
    }

    /// The connection of the caller lane this thread drives (made now if it is the first use
    /// there), or None outside a lane or when it cannot be made (the store's own connections
    /// then take the command, and answer as they would).
    ///
    /// Mostly a [`LaneConnection`], which connects at its first command (and again after one
    /// that broke it); where that is not used (see `lane`) a manager made now.
    async fn lane_connection(&self) -> Option<Connection> {
        let cell = self.lanes.get(Default::default)?;
        let make = || async {
            match LaneConnection::for_server(self.client.get_connection_info(), self.timeouts) {
                Some(lane) => Ok(Connection::Lane(lane)),
                None => self.connect_one().await,
            }
        };
        match cell.get_or_try_init(make).await {
            Ok(connection) => Some(connection.clone()),
            Err(e) => {
                log::debug!("idemkit: no caller-lane connection to {}: {e}", self.shown);
                None
            }
        }
    }
}

impl RedisStore {
    pub(super) fn connection(&self) -> Connection {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.connections.len();
        self.connections[i].clone()
    }

    /// The caller lane's connection when this thread drives a lane, else the next connection.
    pub(super) async fn lane_or_next(&self) -> Connection {
        let on_lane = match &self.connector {
            Some(connector) => connector.lane_connection().await,
            None => None,
        };
        on_lane.unwrap_or_else(|| self.connection())
    }

    /// Runs `op` on the caller lane's connection, else the next connection; once more if the
    /// connection broke (the manager reconnects meanwhile, a lane connection at the next
    /// command). Only for operations that are safe to repeat.
    pub(super) async fn run<T, F, Fut>(&self, op: F) -> Result<T, StoreError>
    where
        F: Fn(Connection) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let connection = self.lane_or_next().await;
        match op(connection.clone()).await {
            Ok(v) => Ok(v),
            Err(e) if broken_connection(&e) => op(connection).await.map_err(|e| self.error(e)),
            Err(e) => Err(self.error(e)),
        }
    }
}

pub(super) fn broken_connection(e: &RedisError) -> bool {
    !e.is_timeout() && (e.is_io_error() || e.is_unrecoverable_error())
}
