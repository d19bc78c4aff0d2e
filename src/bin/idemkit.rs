//! `idemkit`: derive keys, and inspect, list, resolve, delete, purge and forget records in a store.
//!
//! Text read from a store (tools, tenants, failure messages) reaches a terminal only through
//! [`shown`] or [`tenant_label`], so control characters in it are escaped; a tenant in a
//! suggested command goes through [`shell_word`].

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use idemkit::error::{escape_for_display as shown, shell_word};
use idemkit::key::{canonical_material, derive_key, Key, KeyInput, KeyScope};
use idemkit::store::{Deleted, ListFilter, RecordId, Resolution, Resolved, StoreOptions};
use idemkit::{Failure, Outcome, Record, Status, Store};

/// idemkit: make side-effecting calls safe to retry.
///
/// Keys are derived exactly as every idemkit face derives them (spec v1). Store commands take
/// --store URL: redis://, rediss://, postgres:// or postgresql:// (memory: opens an empty,
/// private store and is only useful for trying the commands), or read it from the environment
/// variable IDEMKIT_STORE, which keeps a password out of the shell history. Tenants are taken
/// in Unicode NFC, as records are kept.
#[derive(Parser, Debug)]
#[command(name = "idemkit", version, about, long_about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the key of a call (and, with --material, the canonical text it hashes).
    Key(KeyArgs),
    /// Show the record of one key: state, outcome, owner, lease end, expiry, tenant.
    Inspect(InspectArgs),
    /// List records, newest first.
    List(ListArgs),
    /// Settle an abandoned (or, with --force, in-progress) record: release it or record an outcome.
    Resolve(ResolveArgs),
    /// Delete the record of one key, whatever its state: the next call runs the body again.
    Delete(DeleteArgs),
    /// Delete expired records.
    Purge(PurgeArgs),
    /// Delete every record of one tenant.
    Forget(ForgetArgs),
    /// Count records by state and tenant.
    Stats(StatsArgs),
}

#[derive(Args, Debug)]
struct CallArgs {
    /// The tool or action name (the key's scope).
    #[arg(long)]
    scope: Option<String>,
    /// The run the call belongs to (part of the key).
    #[arg(long)]
    run: Option<String>,
    /// The call's input as JSON text (HASH_INPUT).
    #[arg(long, conflicts_with = "explicit")]
    input: Option<String>,
    /// The supplied key (EXPLICIT).
    #[arg(long)]
    explicit: Option<String>,
    /// For --input: the argument names that identify the effect, comma-separated.
    #[arg(long, value_delimiter = ',')]
    key_arguments: Vec<String>,
}

#[derive(Args, Debug)]
struct KeyArgs {
    #[command(flatten)]
    call: CallArgs,
    /// The tenant (part of the key; "" is a tenant distinct from none).
    #[arg(long, value_parser = nfc_tenant)]
    tenant: Option<String>,
    /// Also print the canonical material, on the line before the key.
    #[arg(long)]
    material: bool,
}

#[derive(Args, Debug)]
struct StoreArgs {
    /// Required, here or in IDEMKIT_STORE (which keeps a password out of the shell history): the
    /// store, redis://[:password@]host:port/db, rediss://..., postgres://user@host/db.
    #[arg(
        long,
        value_name = "URL",
        env = "IDEMKIT_STORE",
        hide_env_values = true
    )]
    store: Option<String>,
    /// PostgreSQL table name.
    #[arg(long)]
    table: Option<String>,
    /// Redis key prefix.
    #[arg(long)]
    prefix: Option<String>,
    /// Redis: open even if maxmemory-policy may evict keys.
    #[arg(long)]
    allow_evicting: bool,
}

#[derive(Args, Debug)]
struct InspectArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The 64-hex key (instead of --scope and --input/--explicit).
    #[arg(long, conflicts_with_all = ["scope", "input", "explicit"])]
    key: Option<String>,
    /// The record's tenant.
    #[arg(long, value_parser = nfc_tenant)]
    tenant: Option<String>,
    #[command(flatten)]
    call: CallArgs,
    /// Print the record as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// Only this tenant's records.
    #[arg(long, conflicts_with = "no_tenant", value_parser = nfc_tenant)]
    tenant: Option<String>,
    /// Only records without a tenant.
    #[arg(long)]
    no_tenant: bool,
    /// Only records in this state.
    #[arg(long, value_parser = ["in-progress", "abandoned", "completed"])]
    state: Option<String>,
    /// At most this many records.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Print one JSON record per line.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ResolveArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The 64-hex key of the record.
    #[arg(long)]
    key: String,
    /// The record's tenant.
    #[arg(long, value_parser = nfc_tenant)]
    tenant: Option<String>,
    /// Delete the claim: the next call runs the body again.
    #[arg(long, conflicts_with_all = ["complete_success", "complete_failure"])]
    release: bool,
    /// Record this success result (JSON): the next call gets it.
    #[arg(long, value_name = "JSON", conflicts_with = "complete_failure")]
    complete_success: Option<String>,
    /// Record this failure, as JSON {"type": "...", "message": "..."}.
    #[arg(long, value_name = "JSON")]
    complete_failure: Option<String>,
    /// Also settle a record whose lease has not ended (its owner may still be running).
    #[arg(long)]
    force: bool,
    /// How long a recorded outcome is kept.
    #[arg(long, default_value_t = 3600)]
    ttl_seconds: u64,
}

#[derive(Args, Debug)]
struct DeleteArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The 64-hex key of the record.
    #[arg(long)]
    key: String,
    /// The record's tenant.
    #[arg(long, value_parser = nfc_tenant)]
    tenant: Option<String>,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
}

#[derive(Args, Debug)]
struct PurgeArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
}

#[derive(Args, Debug)]
struct ForgetArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The tenant whose records are deleted.
    #[arg(long, value_parser = nfc_tenant)]
    tenant: String,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
}

#[derive(Args, Debug)]
struct StatsArgs {
    #[command(flatten)]
    store: StoreArgs,
}

/// A failure with its exit code: 2 for bad input, 1 for everything else.
struct Failed {
    code: u8,
    message: String,
}

fn usage(message: impl Into<String>) -> Failed {
    Failed {
        code: 2,
        message: message.into(),
    }
}

fn failed(message: impl Into<String>) -> Failed {
    Failed {
        code: 1,
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // Messages escape what they quote from a store; this catches raw text from anywhere
            // else (a driver's error, an argument echoed back).
            let message = if f.message.chars().any(idemkit::error::is_unsafe_to_show) {
                shown(&f.message)
            } else {
                f.message.as_str().into()
            };
            eprintln!("idemkit: {message}");
            ExitCode::from(f.code)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failed> {
    match cli.command {
        Command::Key(args) => key(args),
        Command::Inspect(args) => idemkit::runtime::block_on(inspect(args)),
        Command::List(args) => idemkit::runtime::block_on(list(args)),
        Command::Resolve(args) => idemkit::runtime::block_on(resolve(args)),
        Command::Delete(args) => idemkit::runtime::block_on(delete(args)),
        Command::Purge(args) => idemkit::runtime::block_on(purge(args)),
        Command::Forget(args) => idemkit::runtime::block_on(forget(args)),
        Command::Stats(args) => idemkit::runtime::block_on(stats(args)),
    }
}

/// A `--tenant` in NFC, the form records are kept under (SPEC v1.1 rule 1).
fn nfc_tenant(tenant: &str) -> Result<String, String> {
    Ok(idemkit::key::nfc(tenant).into_owned())
}

fn call_input<'a>(call: &'a CallArgs) -> Result<(&'a str, KeyInput<'a>), Failed> {
    let scope = call
        .scope
        .as_deref()
        .ok_or_else(|| usage("--scope NAME is required (the tool or action name)"))?;
    let input = match (&call.input, &call.explicit) {
        (Some(json), None) => KeyInput::Json(json),
        (None, Some(explicit)) => {
            if !call.key_arguments.is_empty() {
                return Err(usage(
                    "--key-arguments applies to --input only, not --explicit",
                ));
            }
            KeyInput::Explicit(explicit)
        }
        _ => return Err(usage("give the call as --input JSON or --explicit KEY")),
    };
    Ok((scope, input))
}

fn derive(call: &CallArgs, tenant: Option<&str>) -> Result<Key, Failed> {
    let (scope, input) = call_input(call)?;
    let key_scope = KeyScope {
        scope,
        tenant,
        run: call.run.as_deref(),
    };
    derive_key(&key_scope, input, &call.key_arguments)
        .map_err(|e| usage(format!("cannot derive the key of `{scope}`: {e}")))
}

fn key(args: KeyArgs) -> Result<(), Failed> {
    let key = derive(&args.call, args.tenant.as_deref())?;
    if args.material {
        let (scope, input) = call_input(&args.call)?;
        let key_scope = KeyScope {
            scope,
            tenant: args.tenant.as_deref(),
            run: args.call.run.as_deref(),
        };
        let material = canonical_material(&key_scope, input, &args.call.key_arguments)
            .map_err(|e| usage(e.to_string()))?;
        println!("{material}");
    }
    println!("{}", key.hex());
    Ok(())
}

async fn open(args: &StoreArgs) -> Result<Arc<dyn Store>, Failed> {
    let options = StoreOptions {
        key_prefix: args.prefix.clone(),
        table: args.table.clone(),
        allow_evicting: args.allow_evicting,
        max_outcome_bytes: None,
        ..StoreOptions::default()
    };
    idemkit::store::open(args.url()?, &options)
        .await
        .map_err(|e| {
            let code = if e.kind() == idemkit::ErrorKind::Configuration {
                2
            } else {
                1
            };
            Failed {
                code,
                message: e.to_string(),
            }
        })
}

impl StoreArgs {
    /// The store URL: --store, else IDEMKIT_STORE.
    fn url(&self) -> Result<&str, Failed> {
        self.store.as_deref().ok_or_else(|| {
            usage("no store given: pass --store URL or set IDEMKIT_STORE (redis://, rediss://, postgres://, postgresql://)")
        })
    }

    /// The store URL without its password, for messages.
    fn redacted(&self) -> String {
        idemkit::store::redact_url(self.store.as_deref().unwrap_or_default())
    }
}

fn store_failed(store: &StoreArgs, e: impl std::fmt::Display) -> Failed {
    failed(format!("{}: {e}", store.redacted()))
}

fn parse_key(hex: &str) -> Result<Key, Failed> {
    hex.parse::<Key>()
        .map_err(|e| usage(format!("--key must be the 64-hex key of a record: {e}")))
}

/// Opens the store and reads the live record of `key` in `tenant`, with the store's clock.
async fn read_record(
    args: &StoreArgs,
    tenant: Option<&str>,
    key: &Key,
) -> Result<(Arc<dyn Store>, Option<Record>, i64), Failed> {
    let store = open(args).await?;
    let (record, now) = store
        .get(RecordId { tenant, key })
        .await
        .map_err(|e| store_failed(args, e))?;
    Ok((store, record, now))
}

async fn inspect(args: InspectArgs) -> Result<(), Failed> {
    let key = match &args.key {
        Some(hex) => parse_key(hex)?,
        None => derive(&args.call, args.tenant.as_deref())?,
    };
    let (_, record, now) = read_record(&args.store, args.tenant.as_deref(), &key).await?;
    match record {
        None => {
            if args.json {
                println!("null");
            }
            Err(failed(format!(
                "no record for key {} (tenant {}){}",
                key.hex(),
                tenant_label(args.tenant.as_deref()),
                if args.tenant.is_none() {
                    "; records are kept per tenant: pass the call's --tenant"
                } else {
                    ""
                }
            )))
        }
        Some(record) => {
            if args.json {
                println!("{}", record_json(&record, now));
            } else {
                print!("{}", describe_record(&record, now));
            }
            Ok(())
        }
    }
}

/// A tenant for a human-readable line: `"acme"`, escaped (see [`shown`]), or `(none)`.
fn tenant_label(tenant: Option<&str>) -> String {
    match tenant {
        None => "(none)".to_owned(),
        Some(t) => format!("\"{}\"", shown(t).replace('"', "\\\"")),
    }
}

fn record_json(record: &Record, now: i64) -> String {
    let mut value: serde_json::Value =
        serde_json::from_str(&record.to_json()).expect("a record serialises to an object");
    value["status"] = serde_json::Value::String(record.status(now).name().to_owned());
    value["now"] = serde_json::Value::from(now);
    value.to_string()
}

fn time(ms: i64, now: i64) -> String {
    let delta = (ms - now) as f64 / 1000.0;
    let rel = if delta >= 0.0 {
        format!("in {delta:.1} s")
    } else {
        format!("{:.1} s ago", -delta)
    };
    format!("{ms} ms since epoch ({rel})")
}

fn describe_record(r: &Record, now: i64) -> String {
    let mut out = String::new();
    let status = r.status(now);
    out += &format!("key:        {}\n", shown(&r.key));
    out += &format!("tenant:     {}\n", tenant_label(r.tenant.as_deref()));
    out += &format!("tool:       {}\n", shown(&r.scope));
    out += &format!("state:      {status}\n");
    out += &format!("owner:      {}\n", r.token);
    out += &format!("claimed at: {}\n", time(r.claimed_at, now));
    out += &format!("lease end:  {}\n", time(r.lease_end, now));
    out += &format!("expires at: {}\n", time(r.expires_at, now));
    match &r.outcome {
        None => out += "outcome:    none yet\n",
        Some(Outcome::Success(json)) => {
            out += &format!("outcome:    success {}\n", shown(json.get()))
        }
        Some(Outcome::Failure(f)) => {
            out += &format!(
                "outcome:    failure {}: {}\n",
                shown(&f.error_type),
                shown(&f.message)
            )
        }
        Some(Outcome::TooLarge { bytes }) => {
            out += &format!("outcome:    success too large to keep ({bytes} bytes)\n")
        }
        Some(Outcome::Indeterminate(f)) => {
            out += &format!(
                "outcome:    indeterminate (held failure of an EFFECTFUL tool) {}: {}\n",
                shown(&f.error_type),
                shown(&f.message)
            )
        }
    }
    let held = matches!(r.outcome, Some(Outcome::Indeterminate(_)));
    if status == Status::Abandoned || held {
        out += &format!(
            "note:       {}; settle it with\n            idemkit resolve --store URL --key {}{} --release | --complete-success JSON\n",
            if held {
                "the body failed and may have acted; find out whether it did"
            } else {
                "the owner's lease ended without an outcome"
            },
            shown(&r.key),
            r.tenant
                .as_deref()
                .map(|t| format!(" --tenant {}", shell_word(t)))
                .unwrap_or_default()
        );
    }
    out
}

/// Reads every page of `filter`, showing progress on a terminal for long scans.
async fn scan(
    store: &Arc<dyn Store>,
    args: &StoreArgs,
    mut filter: ListFilter,
) -> Result<(Vec<Record>, i64), Failed> {
    let progress = std::io::stderr().is_terminal();
    let mut records = Vec::new();
    let mut cursor: Option<String> = None;
    let mut now = 0;
    let mut pages = 0u64;
    filter.limit = 500;
    loop {
        let page = store
            .list(&filter, cursor.as_deref())
            .await
            .map_err(|e| store_failed(args, e))?;
        now = now.max(page.now_ms);
        records.extend(page.records);
        pages += 1;
        if progress && pages.is_multiple_of(4) {
            eprint!(
                "\rscanned {pages} pages, {} matching records…",
                records.len()
            );
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if progress && pages >= 4 {
        eprintln!();
    }
    Ok((records, now))
}

async fn list(args: ListArgs) -> Result<(), Failed> {
    let store = open(&args.store).await?;
    let filter = ListFilter {
        tenant: if args.no_tenant {
            Some(None)
        } else {
            args.tenant.clone().map(Some)
        },
        status: args.state.as_deref().and_then(Status::from_name),
        limit: args.limit,
    };
    // The newest of every record, however many (PostgreSQL reads them along an index; Redis
    // reads every key once, and a terminal is told so when that takes a while).
    let newest = store.newest(&filter);
    tokio::pin!(newest);
    let slow = tokio::time::sleep(std::time::Duration::from_secs(1));
    let page = tokio::select! {
        page = &mut newest => page,
        _ = slow => {
            let terminal = std::io::stderr().is_terminal();
            if terminal {
                eprint!("reading every record of the store to find the newest…");
            }
            let page = newest.await;
            if terminal {
                eprintln!(" done");
            }
            page
        }
    }
    .map_err(|e| store_failed(&args.store, e))?;
    let (mut records, now) = (page.records, page.now_ms);
    records.truncate(args.limit);
    let mut out = std::io::stdout().lock();
    if !args.json {
        let _ = writeln!(
            out,
            "{:<64}  {:<11}  {:<20}  {:<16}  CLAIMED",
            "KEY", "STATE", "TOOL", "TENANT"
        );
    }
    for r in &records {
        let _ = if args.json {
            writeln!(out, "{}", record_json(r, now))
        } else {
            writeln!(
                out,
                "{:<64}  {:<11}  {:<20}  {:<16}  {:.1} s ago",
                shown(&r.key),
                r.status(now).name(),
                shown(&r.scope),
                tenant_label(r.tenant.as_deref()),
                (now - r.claimed_at) as f64 / 1000.0
            )
        };
    }
    if !args.json {
        let _ = writeln!(out, "{} record(s)", records.len());
    }
    Ok(())
}

async fn resolve(args: ResolveArgs) -> Result<(), Failed> {
    let key = parse_key(&args.key)?;
    let resolution = if args.release {
        Resolution::Release
    } else if let Some(json) = &args.complete_success {
        let outcome = Outcome::success(json)
            .map_err(|e| usage(format!("--complete-success must be one JSON value: {e}")))?;
        Resolution::Complete {
            outcome,
            ttl_ms: args.ttl_seconds.saturating_mul(1000),
        }
    } else if let Some(json) = &args.complete_failure {
        let failure: Failure = serde_json::from_str(json).map_err(|e| {
            usage(format!(
                "--complete-failure must be JSON like {{\"type\":\"CardDeclined\",\"message\":\"...\"}}: {e}"
            ))
        })?;
        Resolution::Complete {
            outcome: Outcome::Failure(failure),
            ttl_ms: args.ttl_seconds.saturating_mul(1000),
        }
    } else {
        return Err(usage(
            "say how to settle the record: --release, --complete-success JSON or --complete-failure JSON",
        ));
    };
    if args.ttl_seconds == 0 {
        return Err(usage("--ttl-seconds must be > 0"));
    }
    let (store, record, now) = read_record(&args.store, args.tenant.as_deref(), &key).await?;
    let Some(record) = record else {
        return Err(failed(format!(
            "no record for key {} (tenant {}); nothing to resolve",
            key.hex(),
            tenant_label(args.tenant.as_deref())
        )));
    };
    let held = matches!(record.outcome, Some(Outcome::Indeterminate(_)));
    match record.status(now) {
        // A held failure (EFFECTFUL) is completed but waits for an operator, like an abandoned
        // claim.
        Status::Completed if held => {}
        Status::Completed => {
            return Err(failed(format!(
                "the record of key {} is completed; resolve refuses to override a known outcome (use delete to drop this record)",
                key.hex()
            )))
        }
        Status::InProgress if !args.force => {
            return Err(failed(format!(
                "the record of key {} is in progress and its lease ends in {:.1} s: its owner may still be running. Wait for it to become abandoned, or pass --force",
                key.hex(),
                (record.lease_end - now) as f64 / 1000.0
            )))
        }
        _ => {}
    }
    let id = RecordId {
        tenant: args.tenant.as_deref(),
        key: &key,
    };
    match store
        .resolve(id, record.token, &resolution)
        .await
        .map_err(|e| store_failed(&args.store, e))?
    {
        Resolved::Done => {
            println!(
                "resolved key {}: {}",
                key.hex(),
                if args.release {
                    "released"
                } else {
                    "outcome recorded"
                }
            );
            Ok(())
        }
        Resolved::NotFound => Err(failed(
            "the record disappeared meanwhile (expired or forgotten)",
        )),
        Resolved::TokenMismatch(_) => Err(failed(
            "the record changed meanwhile (another claim holds it now); inspect it and try again",
        )),
        Resolved::AlreadyCompleted(_) => Err(failed(
            "the record was completed meanwhile (its owner recorded an outcome); nothing changed",
        )),
    }
}

fn confirm(question: &str) -> Result<bool, Failed> {
    if !std::io::stdin().is_terminal() {
        eprint!("{question} [y/N] ");
    } else {
        print!("{question} [y/N] ");
        let _ = std::io::stdout().flush();
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| failed(format!("cannot read the confirmation: {e}")))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "YES"))
}

async fn delete(args: DeleteArgs) -> Result<(), Failed> {
    let key = parse_key(&args.key)?;
    let tenant = args.tenant.as_deref();
    let (store, record, now) = read_record(&args.store, tenant, &key).await?;
    let Some(record) = record else {
        return Err(failed(format!(
            "no record for key {} (tenant {}); nothing to delete",
            key.hex(),
            tenant_label(tenant)
        )));
    };
    if !args.yes
        && !confirm(&format!(
            "delete the {} record of key {} (tool {}, tenant {}) from {}? Its call will run again",
            record.status(now).name(),
            key.hex(),
            shown(&record.scope),
            tenant_label(tenant),
            args.store.redacted()
        ))?
    {
        return Err(failed(
            "not confirmed; nothing was deleted (pass --yes to skip the question)",
        ));
    }
    // Only the record shown: one claimed again since the question holds another token and is
    // kept (its owner may be running it now).
    let id = RecordId { tenant, key: &key };
    match store
        .delete_held(id, record.token)
        .await
        .map_err(|e| store_failed(&args.store, e))?
    {
        Deleted::Done => {
            println!(
                "deleted the record of key {} (tenant {})",
                key.hex(),
                tenant_label(tenant)
            );
            Ok(())
        }
        Deleted::NotFound => Err(failed(
            "the record disappeared meanwhile (expired or deleted); nothing was deleted",
        )),
        Deleted::Changed(now) => Err(failed(format!(
            "the record changed meanwhile: it was claimed again (owner {} instead of the {} shown); nothing was deleted. Inspect it and delete again if you still mean to",
            now.token, record.token
        ))),
        Deleted::Unsupported => Err(failed(format!(
            "{} cannot delete a record by its owner token; nothing was deleted",
            args.store.redacted()
        ))),
    }
}

async fn purge(args: PurgeArgs) -> Result<(), Failed> {
    let store = open(&args.store).await?;
    if !args.yes
        && !confirm(&format!(
            "delete expired records from {}?",
            args.store.redacted()
        ))?
    {
        return Err(failed(
            "not confirmed; nothing was deleted (pass --yes to skip the question)",
        ));
    }
    let removed = store
        .purge_expired()
        .await
        .map_err(|e| store_failed(&args.store, e))?;
    println!("purged {removed} expired record(s)");
    Ok(())
}

async fn forget(args: ForgetArgs) -> Result<(), Failed> {
    let store = open(&args.store).await?;
    if !args.yes
        && !confirm(&format!(
            "delete EVERY record of tenant {} from {}? Their calls will run again",
            tenant_label(Some(&args.tenant)),
            args.store.redacted()
        ))?
    {
        return Err(failed(
            "not confirmed; nothing was deleted (pass --yes to skip the question)",
        ));
    }
    let removed = store
        .forget(Some(&args.tenant))
        .await
        .map_err(|e| store_failed(&args.store, e))?;
    println!(
        "forgot {removed} record(s) of tenant {}",
        tenant_label(Some(&args.tenant))
    );
    Ok(())
}

async fn stats(args: StatsArgs) -> Result<(), Failed> {
    let store = open(&args.store).await?;
    let (records, now) = scan(&store, &args.store, ListFilter::default()).await?;
    let mut by_tenant: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let mut total = [0u64; 3];
    for r in &records {
        let slot = match r.status(now) {
            Status::InProgress => 0,
            Status::Abandoned => 1,
            Status::Completed => 2,
        };
        by_tenant
            .entry(tenant_label(r.tenant.as_deref()))
            .or_default()[slot] += 1;
        total[slot] += 1;
    }
    println!(
        "{:<24} {:>12} {:>12} {:>12}",
        "TENANT", "IN-PROGRESS", "ABANDONED", "COMPLETED"
    );
    for (tenant, c) in &by_tenant {
        println!("{:<24} {:>12} {:>12} {:>12}", tenant, c[0], c[1], c[2]);
    }
    println!(
        "{:<24} {:>12} {:>12} {:>12}",
        "all", total[0], total[1], total[2]
    );
    Ok(())
}
