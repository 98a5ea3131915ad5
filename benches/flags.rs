//! Criterion benchmarks of the flags store: what the `stat`-per-request design costs a request
//! (`isEnabled` with its `stat`, beside a bare `stat` and the lookup alone that a file watcher
//! would leave), and a reload (read + parse + validate) after the file changed.

use std::time::Duration;

use adaptive_guidebook::flags::{file, Flags};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feature_flags.json");
    let sample = include_str!("../guidebook/feature_flags.json");
    std::fs::write(&path, sample).unwrap();
    // Past the window in which a just-written file's stamp is not trusted.
    std::thread::sleep(Duration::from_millis(100));
    let flags = Flags::open_with_env(path.clone(), Vec::new());
    assert!(flags.is_enabled("progressive_disclosure", Some("s")));

    let mut g = c.benchmark_group("flags");
    g.bench_function("isEnabled (stat + lookup)", |b| {
        b.iter(|| flags.is_enabled(black_box("ab_test_haiku"), Some(black_box("session-1"))))
    });
    g.bench_function("stat alone", |b| {
        b.iter(|| std::fs::metadata(black_box(&path)).unwrap().len())
    });
    let parsed = file::parse(sample.as_bytes()).unwrap();
    g.bench_function("lookup alone (what a watcher leaves per request)", |b| {
        b.iter(|| {
            parsed
                .flags
                .iter()
                .find(|(n, _)| n.as_str() == black_box("ab_test_haiku"))
                .map(|(_, d)| {
                    d.enabled
                        && adaptive_guidebook::flags::rollout::rolled_out(
                            "ab_test_haiku",
                            d.rollout_percent,
                            Some(black_box("session-1")),
                        )
                })
        })
    });
    g.bench_function("reload (read + parse + validate the sample)", |b| {
        b.iter(|| file::parse(&std::fs::read(black_box(&path)).unwrap()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
