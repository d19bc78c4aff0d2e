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

use std::sync::atomic::{AtomicU32, Ordering};

use idemkit::store::StoreOptions;
use idemkit::{CallContext, Executor, KeyInput, Policy, Tool};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, tool, tenant, input] = args.as_slice() else {
        eprintln!("usage: cross_call <store-url> <tool> <tenant> <input-json>");
        std::process::exit(2);
    };
    let ran = AtomicU32::new(0);
    let result: String = idemkit::runtime::block_on(async {
        let store = idemkit::store::open(url, &StoreOptions::default()).await?;
        let executor = Executor::new(store);
        let tool = Tool::new(tool.as_str(), Policy::default())?;
        let context = CallContext::new().tenant(tenant.as_str());
        let result = executor
            .call(&tool, &context, KeyInput::Json(input), |_call| async {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(format!("rust:{input}"))
            })
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, Box<dyn std::error::Error>>(result)
    })?;
    println!(
        "{{\"ran\":{},\"result\":{}}}",
        ran.load(Ordering::SeqCst),
        serde_json::to_string(&result)?
    );
    Ok(())
}
