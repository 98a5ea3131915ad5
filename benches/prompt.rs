//! Criterion benchmarks for `buildPrompt`: the two exact tokenizer crates side by side
//! (`tiktoken-rs` and `bpe-openai`, cl100k_base, counting the same ~3,000-token English, Korean
//! and code texts), the in-process build of a `full` prompt of about 3,000 tokens (assembly and
//! the exact count), and the same request through a real sidecar's socket.
//!
//! Run with `cargo bench --bench prompt`.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use adaptive_guidebook::config::{Overrides, Settings};
use adaptive_guidebook::engine::Engine;
use adaptive_guidebook::prompt::{self, Phase, PromptRequest};
use adaptive_guidebook::rpc::build_prompt;
use adaptive_guidebook::tokens::Tokenizer;
use criterion::{criterion_group, criterion_main, Criterion};

/// About `tokens` cl100k tokens of `sample`, repeated.
fn text_of(sample: &str, tokens: usize) -> String {
    let each = bpe_openai::cl100k_base().count(sample).max(1);
    sample.repeat(tokens.div_ceil(each))
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tokens")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn tokenizers(c: &mut Criterion) {
    let texts = [
        ("english", text_of(&fixture("english.txt"), 3000)),
        ("korean", text_of(&fixture("korean.txt"), 3000)),
        (
            "code",
            text_of(
                &(fixture("rust.rs.txt") + &fixture("python.py.txt") + &fixture("kotlin.kt.txt")),
                3000,
            ),
        ),
    ];
    let tiktoken = tiktoken_rs::cl100k_base_singleton();
    let bpe = bpe_openai::cl100k_base();
    for (name, text) in &texts {
        assert_eq!(
            tiktoken.encode_ordinary(text).len(),
            bpe.count(text.as_str()),
            "{name}: the two crates disagree"
        );
        eprintln!(
            "{name}: {} bytes, {} tokens",
            text.len(),
            bpe.count(text.as_str())
        );
        let mut g = c.benchmark_group(format!("count_cl100k_{name}"));
        g.bench_function("tiktoken-rs", |b| {
            b.iter(|| tiktoken.encode_ordinary(text).len())
        });
        g.bench_function("bpe-openai", |b| b.iter(|| bpe.count(text.as_str())));
        g.finish();
    }
}

const TASK: &str = "Fix the N+1 query in OrderRepository.findAllWithItems(): the order list API takes 2.3 s for 500 orders. Keep the response shape unchanged.";

fn context() -> serde_json::Value {
    serde_json::json!({"ticket": "ORD-1287", "repository": "acme/backend-order",
        "files": ["orders/repository.py", "tests/orders/test_repository.py"]})
}

fn build_in_process(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        guidebook_root: Some(dir.path().join("guidebook")),
        db: Some(dir.path().join("bench.db")),
        socket: Some(dir.path().join("unused.sock")),
        ..Overrides::default()
    };
    let settings = Settings::resolve_with(&overrides, |k| {
        (k == "ADAPTIVE_GUIDEBOOK_HOME").then(|| dir.path().join("home").into_os_string())
    })
    .unwrap();
    let engine = Engine::open(settings).unwrap();
    let pack = prompt::embedded_default().unwrap();
    let context = context();
    let mut g = c.benchmark_group("build_prompt_full");
    for tokenizer in [Tokenizer::Cl100k, Tokenizer::O200k, Tokenizer::Estimate] {
        tokenizer.count("warm up");
        let request = PromptRequest {
            task: TASK,
            context: context.as_object(),
            phase: Phase::Full,
        };
        let built = prompt::build(&pack, request, tokenizer, true);
        eprintln!("full prompt: {} tokens ({tokenizer})", built.tokens);
        g.bench_function(format!("build_{tokenizer}"), |b| {
            b.iter(|| prompt::build(&pack, request, tokenizer, true))
        });
    }
    // The whole handler as the sidecar runs it: params, snapshot, flag, build, exact count.
    g.bench_function("handler_cl100k_base", |b| {
        b.iter(|| {
            let params: build_prompt::Params =
                serde_json::from_value(serde_json::json!({"task": TASK, "context": context}))
                    .unwrap();
            build_prompt::handle(&engine, params).unwrap()
        })
    });
    // A task far over the standard budget: one encoding and a cut, not a count per token.
    let huge = TASK.repeat(4_000);
    g.bench_function("standard_with_a_600KB_task_cut_to_1800", |b| {
        b.iter(|| {
            let r = prompt::build(
                &pack,
                PromptRequest {
                    task: &huge,
                    context: None,
                    phase: Phase::Standard,
                },
                Tokenizer::Cl100k,
                true,
            );
            assert!(r.truncated);
            r
        })
    });
    g.finish();
}

/// The same `full` request through a real sidecar's socket: connect, HTTP/1.1 POST, answer.
fn build_through_socket(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let socket = home.join("sidecar.sock");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_guidebook"))
        .arg("serve")
        .env("ADAPTIVE_GUIDEBOOK_HOME", &home)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let ready = Instant::now();
    while UnixStream::connect(&socket).is_err() {
        assert!(
            ready.elapsed() < Duration::from_secs(30),
            "sidecar did not start"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "buildPrompt",
        "params": {"task": TASK, "context": context()}})
    .to_string();
    let request = common::http_post(&body);
    let round_trip = || {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        out
    };
    let first = String::from_utf8(round_trip()).unwrap();
    assert!(first.contains("\"tokens\""), "{first}");
    c.bench_function("build_prompt_full_through_socket", |b| b.iter(round_trip));
    let _ = daemon.kill();
    let _ = daemon.wait();
}

criterion_group!(benches, tokenizers, build_in_process, build_through_socket);
criterion_main!(benches);
