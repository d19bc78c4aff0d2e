//! Criterion benchmarks of key derivation (SPEC §2) over JSON text and `serde_json::Value` inputs.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use idemkit::key::{derive_key, KeyInput, KeyScope};

/// A typical tool call: about 200 bytes of JSON object.
const SMALL: &str = r#"{"flight":"BA117","date":"2024-05-01","passengers":[{"name":"Ana Lima","seat":"12A"}],"class":"economy","price":412.50,"currency":"EUR","loyalty":true,"notes":null,"request_id":"7f3c9a2e"}"#;

/// About 4 KiB: nested arrays and objects, some non-ASCII strings, numbers of every kind.
fn large() -> String {
    let names = [
        "Zoë Ångström",
        "José Núñez",
        "李小龍",
        "Ana Lima",
        "Bjørn Ødegård",
    ];
    let mut items = Vec::new();
    for i in 0..27 {
        items.push(format!(
            r#"{{"sku":"SKU-{i:05}","name":"{}","qty":{},"price":{}.{:02},"tags":["a{i}","b","c"],"dims":{{"w":{}e-1,"h":1.5e2,"d":0.000{}}},"gift":{}}}"#,
            names[i % names.len()],
            i + 1,
            10 + i * 7,
            (i * 13) % 100,
            100 + i,
            i + 1,
            i % 2 == 0,
        ));
    }
    let text = format!(
        r#"{{"order":"ORD-2024-000417","customer":{{"id":9007199254740993,"name":"José Núñez","email":"jose@example.com","address":{{"street":"Rua das Flores 12","city":"São Paulo","zip":"01001-000"}}}},"items":[{}],"total":12345.67,"currency":"BRL","note":"entregar após às 18h — obrigado!"}}"#,
        items.join(",")
    );
    assert!(
        (3800..4400).contains(&text.len()),
        "large input is {} bytes",
        text.len()
    );
    text
}

fn key_derivation(c: &mut Criterion) {
    let scope = KeyScope {
        scope: "book_flight",
        tenant: Some("acme"),
        run: None,
    };
    let large = large();
    let small_value: serde_json::Value = serde_json::from_str(SMALL).unwrap();
    let large_value: serde_json::Value = serde_json::from_str(&large).unwrap();

    let mut group = c.benchmark_group("derive_key");
    group.throughput(Throughput::Bytes(SMALL.len() as u64));
    group.bench_function("json_200B", |b| {
        b.iter(|| derive_key(&scope, KeyInput::Json(black_box(SMALL)), &[]).unwrap())
    });
    group.bench_function("value_200B", |b| {
        b.iter(|| derive_key(&scope, KeyInput::Value(black_box(&small_value)), &[]).unwrap())
    });
    group.throughput(Throughput::Bytes(large.len() as u64));
    group.bench_function("json_4KiB", |b| {
        b.iter(|| derive_key(&scope, KeyInput::Json(black_box(&large)), &[]).unwrap())
    });
    group.bench_function("value_4KiB", |b| {
        b.iter(|| derive_key(&scope, KeyInput::Value(black_box(&large_value)), &[]).unwrap())
    });
    group.finish();
}

criterion_group!(benches, key_derivation);
criterion_main!(benches);
