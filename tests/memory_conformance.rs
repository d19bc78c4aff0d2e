//! The in-memory store passes the store conformance suite.

use std::sync::Arc;

use idemkit::{MemoryStore, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_passes_the_conformance_suite() {
    idemkit::testing::check_store(|| async { Arc::new(MemoryStore::new()) as Arc<dyn Store> })
        .await;
}
