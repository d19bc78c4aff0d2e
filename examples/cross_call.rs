//! Calls one tool once against a shared store and says whether its body ran: the Rust half of
//! the Java binding's cross-language test (a JVM and this process deduplicate against each other).
//!
//! ```text
//! cargo run --release --features redis,postgres --example cross_call -- <store-url> <tool> <tenant> <input-json>
//! # or, reusing the Java binding's build: (cd java/native && cargo run --release --features redis,postgres,cross-call --bin cross_call -- ...)
//! ```
//!
//! Prints one line of JSON: `{"ran":0|1,"result":<the result>}`. The body's result is
//! `"rust:<input>"`, so a caller that gets a remembered result can tell which language ran it.
//!
//! Options after the input: `--effectful` makes the tool `EFFECTFUL`; `--fail` makes the body
//! fail; `--explicit=<key>` makes the tool `EXPLICIT`, called under `<key>` with the input as its
//! payload; `--reject-payload-mismatch` refuses another payload under a used key. An idemkit error (or a held failure) is printed as `{"ran":0|1,"error":"<kind>"}`.

use std::sync::atomic::{AtomicU32, Ordering};

use idemkit::store::StoreOptions;
use idemkit::{CallContext, Effect, Executor, KeyInput, KeyStrategy, Policy, Tool};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, tool, tenant, input, options) = match args.as_slice() {
        [url, tool, tenant, input, options @ ..]
            if options.iter().all(|o| {
                o == "--effectful"
                    || o == "--fail"
                    || o == "--reject-payload-mismatch"
                    || o.starts_with("--explicit=")
            }) =>
        {
            (url, tool, tenant, input, options)
        }
        _ => {
            eprintln!(
                "usage: cross_call <store-url> <tool> <tenant> <input-json> [--effectful] [--fail] [--explicit=<key>] [--reject-payload-mismatch]"
            );
            std::process::exit(2);
        }
    };
    let effect = if options.iter().any(|o| o == "--effectful") {
        Effect::Effectful
    } else {
        Effect::Idempotent
    };
    let fail = options.iter().any(|o| o == "--fail");
    let strict = options.iter().any(|o| o == "--reject-payload-mismatch");
    let explicit = options.iter().find_map(|o| o.strip_prefix("--explicit="));
    let payload: serde_json::Value = serde_json::from_str(input)?;
    let ran = AtomicU32::new(0);
    let answer = idemkit::runtime::block_on(async {
        let store = idemkit::store::open(url, &StoreOptions::default()).await?;
        let executor = Executor::new(store);
        let policy = match explicit {
            Some(_) => Policy::new(KeyStrategy::Explicit),
            None => Policy::default(),
        };
        let tool = Tool::new(
            tool.as_str(),
            policy
                .with_effect(effect)
                .with_reject_payload_mismatch(strict),
        )?;
        let context = CallContext::new().tenant(tenant.as_str());
        let key_input = match explicit {
            Some(key) => KeyInput::ExplicitWithPayload {
                key,
                payload: &payload,
            },
            None => KeyInput::Json(input),
        };
        let result = executor
            .call(&tool, &context, key_input, |_call| async {
                ran.fetch_add(1, Ordering::SeqCst);
                if fail {
                    Err(std::io::Error::other("no answer from upstream"))
                } else {
                    Ok(format!("rust:{input}"))
                }
            })
            .await;
        Ok::<_, Box<dyn std::error::Error>>(result)
    })?;
    let ran = ran.load(Ordering::SeqCst);
    match answer {
        Ok(result) => println!(
            "{{\"ran\":{ran},\"result\":{}}}",
            serde_json::to_string(&result)?
        ),
        Err(error) => match error.idempotency() {
            Some(e) => println!("{{\"ran\":{ran},\"error\":\"{}\"}}", e.kind().name()),
            None => println!("{{\"ran\":{ran},\"error\":\"body\"}}"),
        },
    }
    Ok(())
}
