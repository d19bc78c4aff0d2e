//! Stores for C callers: open one by URL, share it between threads, and reopen it in a child
//! made by `fork()`.

use std::ffi::c_char;
use std::sync::{Mutex, PoisonError, RwLock};

use crate::boundary::{check_struct_size, guard, guard_void, optional_str, required_str, Fault};
use crate::IdemkitStatus;
use idemkit_core::executor::Executor;
use idemkit_core::key::{nfc, Key};
use idemkit_core::record::Outcome;
use idemkit_core::runtime;
use idemkit_core::store::{redact_url, settle_key, KeySettled, RecordId, Resolution, StoreOptions};

/// Options for `idemkit_store_open`. Fill it with
/// `idemkit_store_options_default(&options, sizeof options)` and set what you need; NULL text
/// and 0 mean the default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IdemkitStoreOptions {
    /// `sizeof(idemkit_store_options)` as the program was compiled, set by
    /// `idemkit_store_options_default`: the version of this struct. Later versions of the
    /// library only add fields at the end and accept the sizes of earlier ones; a size the
    /// library does not know (0: the struct was not filled by `idemkit_store_options_default`,
    /// or larger than its own: a newer header than the library) is refused with
    /// `IDEMKIT_STATUS_INVALID_ARGUMENT`.
    pub struct_size: usize,
    /// Redis: the key prefix (default `idemkit:`).
    pub key_prefix: *const c_char,
    /// PostgreSQL: the table name, validated as an SQL identifier (default `idemkit_records`).
    pub table: *const c_char,
    /// Redis: open even if the server's `maxmemory-policy` may evict keys (this breaks the
    /// guarantee; default false).
    pub allow_evicting: bool,
    /// The largest success result (JSON bytes) the store keeps (0: the default, 1 MiB).
    pub max_outcome_bytes: usize,
}

/// The sizes of `idemkit_store_options` this library reads: its own (see `check_struct_size`).
const OPTIONS_SIZES: [usize; 1] = [std::mem::size_of::<IdemkitStoreOptions>()];

const OPTIONS_INIT: &str = "idemkit_store_options_default(&options, sizeof options)";

/// Fills `*options` with the defaults (every text NULL, every number 0, `allow_evicting` false)
/// and `options->struct_size` with `struct_size`.
///
/// Pass `sizeof` of your struct: `idemkit_store_options_default(&options, sizeof options)`. A
/// size the library does not know (see `idemkit_store_options.struct_size`) answers
/// `IDEMKIT_STATUS_INVALID_ARGUMENT` and writes nothing.
///
/// # Safety
/// `options` is NULL or writable for `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn idemkit_store_options_default(
    options: *mut IdemkitStoreOptions,
    struct_size: usize,
) -> IdemkitStatus {
    guard(|| {
        if options.is_null() {
            return Err(Fault::null("options"));
        }
        check_struct_size(
            struct_size,
            &OPTIONS_SIZES,
            "struct_size",
            "idemkit_store_options",
            OPTIONS_INIT,
        )?;
        // The only known size is the whole struct (an older, smaller size would get its prefix).
        options.write(IdemkitStoreOptions {
            struct_size,
            key_prefix: std::ptr::null(),
            table: std::ptr::null(),
            allow_evicting: false,
            max_outcome_bytes: 0,
        });
        Ok(())
    })
}

/// A store and the executor that runs calls against it. Safe to share between threads; freed
/// with `idemkit_store_free`.
///
/// A store's connections belong to the process that opened them; in a child made by `fork()`
/// the handle opens the store again from its URL and options at its first use (see
/// `idemkit_store_open`).
pub struct IdemkitStore {
    /// The URL it was opened with, to open it again in a forked child. It may hold a password:
    /// only ever shown through `redact_url`.
    url: String,
    options: StoreOptions,
    /// Whether the store holds connections (every store but `memory:`).
    connected: bool,
    opened: RwLock<Opened>,
}

/// A store as opened in one process.
struct Opened {
    executor: Executor,
    /// The process it belongs to (`runtime::process_generation`) and that process's id.
    generation: u64,
    pid: u32,
}

impl std::fmt::Debug for IdemkitStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdemkitStore")
            .field("url", &redact_url(&self.url))
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// What a forked child must not touch nor drop: executors whose connections and tasks belong
/// to the parent's runtime (their sockets are shared with the parent, and dropping them could
/// wake the parent's runtime through shared file descriptors). Kept, never used, until exit.
static LEFT_BEHIND_BY_FORK: Mutex<Vec<Executor>> = Mutex::new(Vec::new());

pub(super) fn leave_behind(executor: Executor) {
    LEFT_BEHIND_BY_FORK
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(executor);
}

impl IdemkitStore {
    /// The executor for this process: in a child made by `fork()`, the first use opens a
    /// store with connections again (the parent's are left alone); `memory:` has none, so the
    /// child goes on with its copy of the records.
    pub(super) fn executor(&self) -> Result<Executor, Fault> {
        let generation = runtime::process_generation();
        {
            let opened = self.opened.read().unwrap_or_else(PoisonError::into_inner);
            if opened.generation == generation {
                return Ok(opened.executor.clone());
            }
        }
        let mut opened = self.opened.write().unwrap_or_else(PoisonError::into_inner);
        if opened.generation != generation {
            let pid = std::process::id();
            if self.connected {
                let store = runtime::block_on(idemkit_core::store::open(&self.url, &self.options))
                    .map_err(|error| {
                        Fault::from(error).context(&format!(
                            "store {} was opened in process {} before fork(); opening it again in this process ({pid}) failed",
                            redact_url(&self.url),
                            opened.pid
                        ))
                    })?;
                let parents = std::mem::replace(&mut opened.executor, Executor::new(store));
                leave_behind(parents);
            }
            opened.generation = generation;
            opened.pid = pid;
        }
        Ok(opened.executor.clone())
    }
}

/// Opens a store by URL: `memory:` (a new in-memory store, always available), `redis://` and
/// `rediss://` (when the library was built with the cargo feature `redis`), `postgres://` and
/// `postgresql://` (feature `postgres`). `options` may be NULL for the defaults, else filled by
/// `idemkit_store_options_default` (a `struct_size` the library does not know answers
/// `IDEMKIT_STATUS_INVALID_ARGUMENT`).
///
/// On OK, `*out` is a new store the caller owns: free it with `idemkit_store_free`. Otherwise
/// `*out` is NULL; an unknown or disabled scheme answers `IDEMKIT_STATUS_CONFIGURATION`, a server
/// that cannot be reached `IDEMKIT_STATUS_STORE_UNAVAILABLE`. Blocks while the store connects.
///
/// **fork().** Stores work in a child made by `fork()`, as pre-fork servers (uWSGI, php-fpm,
/// Apache prefork) make them; nothing hangs. The library's runtime is per process: the
/// child's first idemkit call starts a new one (the parent's is left behind, unused, in the
/// child's memory). A Redis or PostgreSQL store opened in the parent is opened again from its
/// URL and options at its first use in the child, with the child's own connections (the
/// parent's are never touched, so the parent goes on undisturbed); if that fails, the call
/// answers what this function would (`IDEMKIT_STATUS_STORE_UNAVAILABLE` within the store's
/// connect timeout of a few seconds, or `IDEMKIT_STATUS_CONFIGURATION`), naming the fork. A
/// `memory:` store has no connections: the child goes on with a copy of the parent's records
/// as they were at the fork, and from then on the two copies are apart (they do not
/// deduplicate against each other). Opening stores in the child after the fork is as good.
/// Fork while no idemkit call is running in another thread of the parent (a lock held at the
/// fork would stay held in the child). A call begun in the parent belongs to the parent; see
/// `idemkit_complete`.
///
/// # Safety
/// `url` is NULL or a NUL-terminated string; `options` is NULL or valid; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_store_open(
    url: *const c_char,
    options: *const IdemkitStoreOptions,
    out: *mut *mut IdemkitStore,
) -> IdemkitStatus {
    guard(|| {
        let out = out.as_mut().ok_or_else(|| Fault::null("out"))?;
        *out = std::ptr::null_mut();
        let url = required_str(url, "url")?;
        let mut store_options = StoreOptions::default();
        if !options.is_null() {
            // The size first, read on its own: the rest is read only as a struct it knows.
            check_struct_size(
                std::ptr::addr_of!((*options).struct_size).read(),
                &OPTIONS_SIZES,
                "options.struct_size",
                "idemkit_store_options",
                OPTIONS_INIT,
            )?;
            let options = &*options;
            store_options.key_prefix =
                optional_str(options.key_prefix, "options.key_prefix")?.map(str::to_owned);
            store_options.table = optional_str(options.table, "options.table")?.map(str::to_owned);
            store_options.allow_evicting = options.allow_evicting;
            store_options.max_outcome_bytes =
                (options.max_outcome_bytes > 0).then_some(options.max_outcome_bytes);
        }
        let generation = runtime::process_generation();
        let store = runtime::block_on(idemkit_core::store::open(url, &store_options))?;
        let connected = !url.to_ascii_lowercase().starts_with("memory:");
        *out = Box::into_raw(Box::new(IdemkitStore {
            url: url.to_owned(),
            options: store_options,
            connected,
            opened: RwLock::new(Opened {
                executor: Executor::new(store),
                generation,
                pid: std::process::id(),
            }),
        }));
        Ok(())
    })
}

/// Frees a store. NULL is accepted and ignored. Calls begun on it keep it alive until they are
/// freed; no other thread may use the handle once this is called.
///
/// # Safety
/// `store` is NULL or a store from `idemkit_store_open` that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn idemkit_store_free(store: *mut IdemkitStore) {
    guard_void(|| {
        if !store.is_null() {
            let store = Box::from_raw(store);
            let opened = store
                .opened
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            if opened.generation == runtime::process_generation() || !store.connected {
                let _runtime = runtime::runtime().enter();
                drop(opened.executor);
            } else {
                // Opened in the parent and not used here since fork(): not this process's to close.
                leave_behind(opened.executor);
            }
        }
    })
}

/// Settles one key's record in-process (`idemkit::store::settle_key`): `result_json` NULL
/// releases, otherwise records it.
unsafe fn settle_one_key(
    store: *const IdemkitStore,
    tenant: *const c_char,
    key: *const c_char,
    result_json: *const c_char,
    ttl_seconds: u64,
    force: bool,
    settled: *mut bool,
) -> IdemkitStatus {
    guard(|| {
        let settled = settled.as_mut().ok_or_else(|| Fault::null("settled"))?;
        *settled = false;
        let store = store.as_ref().ok_or_else(|| Fault::null("store"))?;
        let tenant = optional_str(tenant, "tenant")?.map(|t| nfc(t).into_owned());
        let hex = required_str(key, "key")?;
        let key: Key = hex.parse().map_err(|e| {
            Fault::invalid(format!(
                "key `{hex}` is not a 64-hex idemkit key ({e}); pass the key idemkit_begin_result.key named"
            ))
        })?;
        let resolution = match optional_str(result_json, "result_json")? {
            None => Resolution::Release,
            Some(json) => {
                if ttl_seconds == 0 {
                    return Err(Fault::invalid("ttl_seconds must be > 0"));
                }
                Resolution::Complete {
                    outcome: Outcome::success(json).map_err(|e| {
                        Fault::invalid(format!("result_json is not one JSON value: {e}"))
                    })?,
                    ttl_ms: ttl_seconds.saturating_mul(1000),
                }
            }
        };
        let executor = store.executor()?;
        let id = RecordId {
            tenant: tenant.as_deref(),
            key: &key,
        };
        let answer = runtime::block_on(settle_key(
            executor.store().as_ref(),
            id,
            &resolution,
            force,
        ))
        .map_err(|e| {
            Fault::new(
                IdemkitStatus::StoreUnavailable,
                format!("settling key {hex}: {e} ({})", executor.store().describe()),
            )
        })?;
        match answer {
            KeySettled::Done => {
                *settled = true;
                Ok(())
            }
            KeySettled::NotFound => Ok(()),
            refused => Err(Fault::invalid(refused.describe(hex))),
        }
    })
}

/// Releases the unfinished record of one key so that the next call with it runs (SPEC v1.1
/// rule 12): an abandoned claim (its lease ended without an outcome) or a failure held as
/// indeterminate (`IDEMKIT_STATUS_INDETERMINATE`). The in-process counterpart of
/// `idemkit resolve --release`, for a `memory:` store too. A claim whose lease has not ended is
/// left alone unless `force` (its owner may still be running).
///
/// `tenant` is NULL for none; `key` is the 64-hex key (`idemkit_begin_result.key`). On OK,
/// `*released` says whether a record was released (false: there was none). A record that must
/// not change — completed with a known outcome, still in progress without `force`, changed
/// meanwhile — answers `IDEMKIT_STATUS_INVALID_ARGUMENT` naming why; nothing changed.
///
/// # Safety
/// `store` is NULL or a live store; `tenant` is NULL or NUL-terminated; `key` is
/// NUL-terminated; `released` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_store_release_key(
    store: *const IdemkitStore,
    tenant: *const c_char,
    key: *const c_char,
    force: bool,
    released: *mut bool,
) -> IdemkitStatus {
    settle_one_key(store, tenant, key, std::ptr::null(), 0, force, released)
}

/// Records `result_json` (one JSON value) as the outcome of one key whose record is unfinished
/// (abandoned, or a failure held as indeterminate), kept `ttl_seconds`: repeats get it as a
/// cached success. Answers as `idemkit_store_release_key` (`*resolved` false: no record).
///
/// # Safety
/// As `idemkit_store_release_key`; `result_json` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn idemkit_store_resolve_key(
    store: *const IdemkitStore,
    tenant: *const c_char,
    key: *const c_char,
    result_json: *const c_char,
    ttl_seconds: u64,
    resolved: *mut bool,
) -> IdemkitStatus {
    if result_json.is_null() {
        return guard(|| Err(Fault::null("result_json")));
    }
    settle_one_key(
        store,
        tenant,
        key,
        result_json,
        ttl_seconds,
        false,
        resolved,
    )
}
