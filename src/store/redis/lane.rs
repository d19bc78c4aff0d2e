//! A caller lane's own connection to one Redis server: one socket, one command at a time, read
//! and written inside the caller's future.
//!
//! **Why not a redis-rs connection**: the crate's async connections are multiplexed. A command is
//! queued on a channel for the connection's driver task, which writes it, reads the reply and
//! hands it back through another channel. On a caller lane (see `crate::runtime`) that costs a
//! wake of the lane's runtime through its eventfd for every command, and twice the system calls
//! of a plain blocking client. A lane is driven by one caller at a time, so its connection needs
//! no multiplexing: here the caller's own future writes the command and reads the reply, and the
//! only system calls are the write, the read and the caller's `epoll_wait` for the reply.
//!
//! **Parsing** is redis-rs's own ([`redis::parse_redis_value`]), once a whole reply has arrived;
//! what this file adds is finding where a reply ends (`reply_len`), the socket, the handshake
//! (`AUTH`, `SELECT`) and the rule that a socket is put back for the next command only after a
//! whole exchange: an error, a timeout or a future dropped half-way (a call's deadline) leaves
//! it out, closed, and the next command connects anew. Errors are
//! redis-rs errors of the same kinds the multiplexed connections give (I/O, timeout), so the
//! store's rule "a command whose connection broke is sent once more" applies unchanged.
//!
//! **TLS** (`rediss://`): the socket is wrapped in rustls with the system's trusted roots
//! (rustls-native-certs, which honours `SSL_CERT_FILE`), as redis-rs's own TLS connections
//! verify the server. A URL that turns verification off (`#insecure`) or a RESP3 server keeps a
//! redis-rs [`ConnectionManager`](redis::aio::ConnectionManager) on the lane instead (see
//! `pool::Connector::lane_connection`).

use std::io;
use std::sync::Arc;

use redis::aio::ConnectionLike;
use redis::{Cmd, ConnectionAddr, ConnectionInfo, Pipeline, RedisError, RedisFuture, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::pool::Timeouts;

/// How a lane connection reaches its server.
struct Target {
    info: ConnectionInfo,
    timeouts: Timeouts,
    /// For a `rediss://` server: how to verify it.
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// The TLS settings of lane connections: the system's trusted roots, loaded once per process.
/// None when they cannot be loaded (the lanes then keep redis-rs managers, which report it).
fn tls_config() -> Option<Arc<rustls::ClientConfig>> {
    static CONFIG: std::sync::OnceLock<Option<Arc<rustls::ClientConfig>>> =
        std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            if !found.errors.is_empty() {
                log::debug!(
                    "idemkit: caller lanes use redis-rs for rediss:// ({} errors loading the trusted roots)",
                    found.errors.len()
                );
                return None;
            }
            let mut roots = rustls::RootCertStore::empty();
            let (_added, _ignored) = roots.add_parsable_certificates(found.certs);
            Some(Arc::new(
                rustls::ClientConfig::builder()
                    .with_root_certificates(roots)
                    .with_no_client_auth(),
            ))
        })
        .clone()
}

/// A lane's connection: cheap to clone (clones share the socket, one command at a time).
#[derive(Clone)]
pub(super) struct LaneConnection {
    target: Arc<Target>,
    socket: Arc<tokio::sync::Mutex<Socket>>,
}

#[derive(Default)]
struct Socket {
    stream: Option<Stream>,
    /// Bytes read and not yet parsed (empty between exchanges).
    read: Vec<u8>,
}

enum Stream {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl LaneConnection {
    /// A lane connection for `info`, or None where one is not used (`#insecure` TLS, RESP3: see
    /// the module documentation). Nothing connects until the first command.
    pub(super) fn for_server(info: &ConnectionInfo, timeouts: Timeouts) -> Option<LaneConnection> {
        let tls = match &info.addr {
            ConnectionAddr::Tcp(..) => None,
            #[cfg(unix)]
            ConnectionAddr::Unix(_) => None,
            ConnectionAddr::TcpTls {
                insecure: false,
                tls_params: None,
                ..
            } => Some(tls_config()?),
            _ => return None,
        };
        if info.redis.protocol != redis::ProtocolVersion::RESP2 {
            return None;
        }
        Some(LaneConnection {
            target: Arc::new(Target {
                info: info.clone(),
                timeouts,
                tls,
            }),
            socket: Arc::default(),
        })
    }

    /// Sends `packed` (`replies` commands) and answers their replies.
    async fn exchange(&self, packed: &[u8], replies: usize) -> Result<Vec<Value>, RedisError> {
        let mut socket = self.socket.lock().await;
        let socket = &mut *socket;
        let mut stream = match socket.stream.take() {
            Some(stream) => stream,
            None => {
                socket.read.clear();
                self.connect(&mut socket.read).await?
            }
        };
        let values = within(
            self.target.timeouts.response,
            exchange(&mut stream, &mut socket.read, packed, replies),
        )
        .await?;
        // A whole exchange: the socket serves the next command.
        socket.stream = Some(stream);
        Ok(values)
    }

    /// A new socket to the server, with the handshake done.
    async fn connect(&self, read: &mut Vec<u8>) -> Result<Stream, RedisError> {
        let info = &self.target.info;
        let timeouts = self.target.timeouts;
        let mut stream = within(timeouts.connect, async {
            Ok(match &info.addr {
                ConnectionAddr::Tcp(host, port) => {
                    let stream = TcpStream::connect((host.as_str(), *port)).await?;
                    stream.set_nodelay(true)?;
                    Stream::Tcp(stream)
                }
                ConnectionAddr::TcpTls { host, port, .. } => {
                    let config = self
                        .target
                        .tls
                        .clone()
                        .expect("a rediss:// lane has its config");
                    let name = rustls::pki_types::ServerName::try_from(host.clone())
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                    let stream = TcpStream::connect((host.as_str(), *port)).await?;
                    stream.set_nodelay(true)?;
                    let tls = tokio_rustls::TlsConnector::from(config)
                        .connect(name, stream)
                        .await?;
                    Stream::Tls(Box::new(tls))
                }
                #[cfg(unix)]
                ConnectionAddr::Unix(path) => {
                    Stream::Unix(tokio::net::UnixStream::connect(path).await?)
                }
                #[cfg(not(unix))]
                ConnectionAddr::Unix(_) => unreachable!("no lane connection to a Unix socket here"),
            })
        })
        .await?;
        let mut handshake = redis::pipe();
        if let Some(password) = &info.redis.password {
            let auth = handshake.cmd("AUTH");
            if let Some(username) = &info.redis.username {
                auth.arg(username);
            }
            auth.arg(password);
        }
        if info.redis.db != 0 {
            handshake.cmd("SELECT").arg(info.redis.db);
        }
        let commands = handshake.cmd_iter().count();
        if commands > 0 {
            let packed = handshake.get_packed_pipeline();
            let replies = within(
                timeouts.connect,
                exchange(&mut stream, read, &packed, commands),
            )
            .await?;
            for reply in replies {
                // A refused AUTH or SELECT: the server's error, as the multiplexed connection
                // would give it (it never holds the password).
                reply.extract_error()?;
            }
        }
        Ok(stream)
    }
}

/// `work`, or a timeout error (of the kind redis-rs gives) when it takes longer than `limit`.
async fn within<T>(
    limit: std::time::Duration,
    work: impl std::future::Future<Output = Result<T, RedisError>>,
) -> Result<T, RedisError> {
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the Redis server did not answer in time",
        )
        .into()),
    }
}

/// Writes `packed` and reads `replies` whole replies.
async fn exchange(
    stream: &mut Stream,
    read: &mut Vec<u8>,
    packed: &[u8],
    replies: usize,
) -> Result<Vec<Value>, RedisError> {
    match stream {
        Stream::Tcp(s) => exchange_on(s, read, packed, replies).await,
        Stream::Tls(s) => exchange_on(s.as_mut(), read, packed, replies).await,
        #[cfg(unix)]
        Stream::Unix(s) => exchange_on(s, read, packed, replies).await,
    }
}

async fn exchange_on<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    read: &mut Vec<u8>,
    packed: &[u8],
    replies: usize,
) -> Result<Vec<Value>, RedisError> {
    stream.write_all(packed).await?;
    let mut values = Vec::with_capacity(replies);
    // Where the unparsed bytes of `read` start.
    let mut start = 0;
    while values.len() < replies {
        if let Some(len) = reply_len(&read[start..])? {
            values.push(redis::parse_redis_value(&read[start..start + len])?);
            start += len;
            continue;
        }
        read.drain(..start);
        start = 0;
        if read.capacity() - read.len() < 4096 {
            read.reserve(16 * 1024);
        }
        if stream.read_buf(read).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the Redis server closed the connection",
            )
            .into());
        }
    }
    // Nothing follows the replies asked for (one command at a time, no push messages in RESP2).
    read.drain(..start);
    Ok(values)
}

/// The length of the first whole reply at the start of `buf` (RESP2 and RESP3), or None when
/// it has not all arrived yet.
fn reply_len(buf: &[u8]) -> Result<Option<usize>, RedisError> {
    let mut pos = 0;
    // Values still to pass over: the reply, then the elements its aggregates announce.
    let mut pending = 1usize;
    while pending > 0 {
        let Some(line) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let kind = buf[pos];
        let header = &buf[pos + 1..pos + line];
        pos += line + 2;
        pending -= 1;
        match kind {
            // Simple string, error, integer, null, double, boolean, big number: one line.
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
            // Bulk string, bulk error, verbatim string: a length, then that many bytes and CRLF.
            b'$' | b'!' | b'=' => {
                if let Some(n) = count(header)? {
                    let end = pos + n + 2;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    pos = end;
                }
            }
            // Array, set, push: that many values.
            b'*' | b'~' | b'>' => pending += count(header)?.unwrap_or(0),
            // Map: pairs. Attribute: pairs, then the value they describe.
            b'%' => pending += 2 * count(header)?.unwrap_or(0),
            b'|' => pending += 2 * count(header)?.unwrap_or(0) + 1,
            _ => {
                return Err(RedisError::from((
                    redis::ErrorKind::ParseError,
                    "not a Redis reply",
                    format!("type byte {kind:#04x}"),
                )))
            }
        }
    }
    Ok(Some(pos))
}

/// A length or count of a reply header; None for -1 (a RESP2 null).
fn count(header: &[u8]) -> Result<Option<usize>, RedisError> {
    let text = std::str::from_utf8(header).unwrap_or("");
    match text.parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(n) if n >= 0 => Ok(Some(n as usize)),
        _ => Err(RedisError::from((
            redis::ErrorKind::ParseError,
            "bad length in a Redis reply",
            text.chars().take(20).collect::<String>(),
        ))),
    }
}

impl ConnectionLike for LaneConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let packed = cmd.get_packed_command();
            let mut values = self.exchange(&packed, 1).await?;
            Ok(values.pop().unwrap_or(Value::Nil))
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let packed = cmd.get_packed_pipeline();
            let values = self.exchange(&packed, offset + count).await?;
            let mut values = values.into_iter();
            for skipped in values.by_ref().take(offset) {
                // In a transaction, MULTI and the QUEUED answers: an error there fails it (as
                // on redis-rs's multiplexed connection).
                if cmd.is_transaction() {
                    skipped.extract_error()?;
                }
            }
            Ok(values.collect())
        })
    }

    fn get_db(&self) -> i64 {
        self.target.info.redis.db
    }
}

#[cfg(test)]
mod tests {
    use super::reply_len;

    /// Every reply kind the stores get, alone and nested.
    const REPLIES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-NOSCRIPT No matching script\r\n",
        b":1733000000000\r\n",
        b"$5\r\nhello\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"$4\r\na\r\nb\r\n",
        b"*3\r\n$8\r\nacquired\r\n:17\r\n*2\r\n$-1\r\n+x\r\n",
        b"%1\r\n+k\r\n*1\r\n:1\r\n",
        b"|1\r\n+a\r\n+b\r\n:3\r\n",
    ];

    #[test]
    fn a_reply_ends_where_its_last_element_ends() {
        for reply in REPLIES {
            let shown = String::from_utf8_lossy(reply);
            assert_eq!(reply_len(reply).unwrap(), Some(reply.len()), "{shown}");
            // Followed by the start of another reply, it still ends in the same place.
            let mut two = reply.to_vec();
            two.extend_from_slice(b"+next\r\n");
            assert_eq!(reply_len(&two).unwrap(), Some(reply.len()), "{shown}");
            // Any part of it is not a reply yet.
            for cut in 0..reply.len() {
                assert_eq!(
                    reply_len(&reply[..cut]).unwrap(),
                    None,
                    "{shown} cut at {cut}"
                );
            }
        }
    }

    /// Pipelines, plain and `MULTI`/`EXEC`, answer as on redis-rs's own connections (the
    /// store sends none on a lane today; a `ConnectionLike` must still answer them right). Needs
    /// the test Redis (`IDEMKIT_REDIS_URL`, as `scripts/test.sh` sets it); skipped without it.
    #[test]
    fn pipelines_answer_their_commands_replies() {
        use redis::aio::ConnectionLike;
        let Some(url) = crate::test_skip::env_url("IDEMKIT_REDIS_URL") else {
            return;
        };
        let info = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection_info()
            .clone();
        let timeouts = super::Timeouts {
            connect: super::super::pool::CONNECT_TIMEOUT,
            response: super::super::pool::RESPONSE_TIMEOUT,
        };
        let mut lane = super::LaneConnection::for_server(&info, timeouts).expect("a plain server");
        let key = format!("idemkit-lane-test:{}", crate::Token::random().hex());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (set, got, gone): ((), String, i64) = redis::pipe()
                .cmd("SET")
                .arg(&key)
                .arg("one")
                .cmd("GET")
                .arg(&key)
                .cmd("DEL")
                .arg(&key)
                .query_async(&mut lane)
                .await
                .unwrap();
            assert_eq!((set, got.as_str(), gone), ((), "one", 1));
            let (set, got): ((), String) = redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(&key)
                .arg("two")
                .cmd("GET")
                .arg(&key)
                .query_async(&mut lane)
                .await
                .unwrap();
            assert_eq!((set, got.as_str()), ((), "two"));
            // A command the server refuses inside a transaction fails the transaction.
            let refused: Result<((), ()), _> = redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(&key)
                .arg("three")
                .cmd("NO-SUCH-COMMAND")
                .query_async(&mut lane)
                .await;
            assert!(refused.is_err());
            let last: String = redis::cmd("GET")
                .arg(&key)
                .query_async(&mut lane)
                .await
                .unwrap();
            assert_eq!(last, "two", "nothing of the refused transaction ran");
            let _: i64 = redis::cmd("DEL")
                .arg(&key)
                .query_async(&mut lane)
                .await
                .unwrap();
            assert_eq!(lane.get_db(), info.redis.db);
        });
    }

    #[test]
    fn what_is_not_a_reply_is_an_error() {
        for bad in [
            &b"?what\r\n"[..],
            b"$x\r\n",
            b"*-2\r\n",
            b"$99999999999999999999\r\n",
        ] {
            assert!(reply_len(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
