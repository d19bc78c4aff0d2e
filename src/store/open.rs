//! Opening a store by URL: the schemes, idemkit's own URL parameters and `StoreOptions`.

use super::*;

/// How to open a store by URL (see [`open`]).
///
/// The connection settings (`connect_timeout`, `response_timeout`, `statement_timeout`,
/// `pool_size`) can also be given as query parameters of the store URL, which then win over
/// these fields: Redis `?connect_timeout_ms=2000&response_timeout_ms=5000`, PostgreSQL
/// `?connect_timeout=2` (libpq's, in seconds) `&statement_timeout_ms=5000&pool_size=16`.
/// `None` means the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// Redis: the key prefix (default `idemkit:`).
    pub key_prefix: Option<String>,
    /// PostgreSQL: the table name, validated as an SQL identifier (default `idemkit_records`).
    pub table: Option<String>,
    /// Redis: open even if the server's `maxmemory-policy` may evict keys (breaks the guarantee).
    pub allow_evicting: bool,
    /// The largest success result kept (default 1 MiB).
    pub max_outcome_bytes: Option<usize>,
    /// Redis and PostgreSQL: how long opening one connection may take, the server's first
    /// answers (authentication, startup) included (default 2 s). URL: Redis
    /// `connect_timeout_ms`, PostgreSQL `connect_timeout` (seconds, as in libpq).
    pub connect_timeout: Option<Duration>,
    /// Redis: how long one command may wait for its answer before the call fails as
    /// store-unavailable (default 5 s). URL: `response_timeout_ms`.
    pub response_timeout: Option<Duration>,
    /// PostgreSQL: how long one statement may take before the call fails as store-unavailable
    /// (default 5 s; measured by the client, the server's `statement_timeout` is not changed).
    /// URL: `statement_timeout_ms`.
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL: the most connections the store opens for Rust callers (default 16; from 1 to
    /// 1024). URL: `pool_size`. Besides these it opens one connection per caller lane that C
    /// and Java calls used with it: up to `IDEMKIT_CALLER_LANES` more (default 8), so at most
    /// `pool_size` + 8 by default.
    pub pool_size: Option<usize>,
}

/// The longest timeout a store takes: one day.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(super) const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);
/// The most connections a PostgreSQL store may be told to open.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) const MAX_POOL_SIZE: usize = 1024;

/// idemkit's own query parameters of a store URL, taken out before the driver reads the URL.
#[cfg(any(feature = "redis", feature = "postgres"))]
#[derive(Debug, Default)]
pub(crate) struct UrlSettings {
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) response_timeout: Option<Duration>,
    pub(crate) statement_timeout: Option<Duration>,
    pub(crate) pool_size: Option<usize>,
    /// PostgreSQL: libpq's `sslmode`, as given.
    pub(crate) ssl_mode: Option<String>,
    /// PostgreSQL: libpq's `sslrootcert`, percent-decoded.
    pub(crate) ssl_root_cert: Option<String>,
}

/// Which store a URL parameter belongs to. (`sslmode` and `sslrootcert` are libpq's; they are
/// taken here because tokio-postgres knows neither `verify-ca`/`verify-full` nor `sslrootcert`.)
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(super) const URL_PARAMETERS: [(&str, &str); 6] = [
    ("connect_timeout_ms", "Redis"),
    ("response_timeout_ms", "Redis"),
    ("statement_timeout_ms", "PostgreSQL"),
    ("pool_size", "PostgreSQL"),
    ("sslmode", "PostgreSQL"),
    ("sslrootcert", "PostgreSQL"),
];

/// Takes idemkit's own query parameters out of `url` for the store `store` (`"Redis"` or
/// `"PostgreSQL"`): answers the URL without them, for the driver, and their values. A
/// parameter of the other store, a repeated one, or a bad value is refused with a message
/// naming the parameter and the fix. Nothing inside the userinfo is read.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn take_url_settings(
    url: &str,
    store: &str,
) -> Result<(String, UrlSettings), StoreError> {
    let shown = redact_url(url);
    let secrets = secret_spans(url);
    let mut settings = UrlSettings::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut kept = String::with_capacity(url.len());
    let bytes = url.as_bytes();
    let mut copied = 0;
    // Whether the next parameter kept needs a `?` (the ones before it were all taken out).
    let mut need_question = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let in_secret = secrets.iter().any(|&(a, b)| i >= a && i < b);
        if !matches!(c, b'?' | b'&') || in_secret {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = url[start..]
            .find(['&', '#'])
            .map_or(url.len(), |n| start + n);
        let (name, value) = match url[start..end].split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (&url[start..end], None),
        };
        let lowered = name.to_ascii_lowercase();
        let ours = URL_PARAMETERS.iter().find(|(n, _)| *n == lowered);
        match ours {
            Some(&(name, owner)) => {
                if owner != store {
                    let hint = if name == "connect_timeout_ms" {
                        "; PostgreSQL takes libpq's connect_timeout, in seconds (e.g. connect_timeout=2)"
                    } else {
                        ""
                    };
                    return Err(StoreError::Configuration(format!(
                        "store URL {shown}: the parameter `{name}` applies to {owner} stores only; remove it{hint}"
                    )));
                }
                if seen.contains(&name) {
                    return Err(StoreError::Configuration(format!(
                        "store URL {shown}: the parameter `{name}` is given twice; give it once"
                    )));
                }
                seen.push(name);
                let value = value.unwrap_or("");
                match name {
                    "pool_size" => settings.pool_size = Some(parse_pool_size(value, &shown)?),
                    "sslmode" => settings.ssl_mode = Some(percent_decode(value)),
                    "sslrootcert" => settings.ssl_root_cert = Some(percent_decode(value)),
                    _ => {
                        let timeout = Some(parse_timeout_ms(name, value, &shown)?);
                        match name {
                            "connect_timeout_ms" => settings.connect_timeout = timeout,
                            "response_timeout_ms" => settings.response_timeout = timeout,
                            _ => settings.statement_timeout = timeout,
                        }
                    }
                }
                // Leave the parameter out; its separator goes with it.
                kept.push_str(&url[copied..i]);
                if c == b'?' {
                    need_question = true;
                }
                copied = end;
            }
            None => {
                kept.push_str(&url[copied..i]);
                kept.push(if need_question { '?' } else { c as char });
                need_question = false;
                copied = i + 1;
            }
        }
        i = end;
    }
    kept.push_str(&url[copied..]);
    Ok((kept, settings))
}

#[cfg(any(feature = "redis", feature = "postgres"))]
pub(super) fn parse_timeout_ms(
    name: &str,
    value: &str,
    shown: &str,
) -> Result<Duration, StoreError> {
    let max = MAX_TIMEOUT.as_millis() as u64;
    match value.parse::<u64>() {
        Ok(ms) if (1..=max).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(StoreError::Configuration(format!(
            "store URL {shown}: `{name}={value}` is not a timeout; give whole milliseconds from 1 to {max} (e.g. {name}=5000)"
        ))),
    }
}

#[cfg(any(feature = "redis", feature = "postgres"))]
pub(super) fn parse_pool_size(value: &str, shown: &str) -> Result<usize, StoreError> {
    let max = MAX_POOL_SIZE;
    match value.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(StoreError::Configuration(format!(
            "store URL {shown}: `pool_size={value}` is not a pool size; give a whole number of connections from 1 to {max} (e.g. pool_size=16)"
        ))),
    }
}

/// A timeout given in [`StoreOptions`], checked: more than zero and at most a day.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn checked_timeout(
    field: &str,
    value: Option<Duration>,
) -> Result<Option<Duration>, StoreError> {
    match value {
        Some(t) if t.is_zero() || t > MAX_TIMEOUT => Err(StoreError::Configuration(format!(
            "StoreOptions.{field} is {t:?}; give a duration above zero and at most one day (e.g. Duration::from_secs(5)), or None for the default"
        ))),
        other => Ok(other),
    }
}

/// Opens a store by URL: `memory:` (a new in-memory store), `redis://`/`rediss://` and
/// `redis+cluster://`/`rediss+cluster://` (feature `redis`), `postgres://`/`postgresql://`
/// (feature `postgres`). Must be called inside a tokio
/// runtime. Errors name the URL without its password.
pub async fn open(
    url: &str,
    options: &StoreOptions,
) -> Result<std::sync::Arc<dyn Store>, crate::Error> {
    let scheme = url.split(':').next().unwrap_or("").to_ascii_lowercase();
    match scheme.as_str() {
        "memory" => {
            let mut store = MemoryStore::new();
            if let Some(max) = options.max_outcome_bytes {
                store = store.with_max_outcome_bytes(max);
            }
            Ok(std::sync::Arc::new(store))
        }
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+cluster" | "rediss+cluster" => {
            let store = redis::RedisStore::connect(url, options)
                .await
                .map_err(|e| opening_failed(url, e))?;
            Ok(std::sync::Arc::new(store))
        }
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => {
            let store = postgres::PostgresStore::connect(url, options)
                .await
                .map_err(|e| opening_failed(url, e))?;
            Ok(std::sync::Arc::new(store))
        }
        _ if !is_scheme(&scheme) => Err(crate::Error::Configuration(format!(
            "cannot open store {}: not a store URL; use memory:, redis://host:port/, redis+cluster://host:port,host:port/ or postgres://user@host/database (a libpq `key=value` string is not accepted: write it as a postgres:// URL)",
            redact_url(url)
        ))),
        _ => Err(crate::Error::Configuration(format!(
            "cannot open store {}: unknown or disabled scheme `{scheme}`; use memory:, redis://, rediss://, redis+cluster://, rediss+cluster://, postgres:// or postgresql:// (Redis and PostgreSQL need the cargo features `redis` and `postgres`)",
            redact_url(url)
        ))),
    }
}

/// Whether `text` has the shape of a URL scheme (letters, digits, `+ - .`).
pub(super) fn is_scheme(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// A store that could not be opened: a configuration error stays one; anything else means the
/// server could not be reached or answered an error. Either way without the URL's secrets,
/// should a driver have echoed one.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(super) fn opening_failed(url: &str, error: StoreError) -> crate::Error {
    match error {
        StoreError::Configuration(message) => {
            crate::Error::Configuration(scrub_secrets(&message, url))
        }
        other => {
            let message = scrub_secrets(&other.to_string(), url);
            // Owned, so that the driver's error moves into the scrubbed copy.
            let source = match other {
                StoreError::Unavailable { source, .. } => source,
                _ => None,
            };
            crate::Error::StoreOperation {
                operation: crate::error::StoreOperation::Open {
                    store: redact_url(url),
                },
                message,
                source: source.map(|e| e.scrubbed(&|text| scrub_secrets(text, url))),
            }
        }
    }
}
