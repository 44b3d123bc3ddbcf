//! The front end's throughput, stage by stage (`ptx_front::STAGES`, as `ptx-jit bench parse` measures
//! them), over the test kernels and, when present, the shared nvcc corpus.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn corpus() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../../shared/corpus/nvcc");
    let dir = if shared.is_dir() {
        shared
    } else {
        root.join("../tests/ptx")
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    files.sort();
    files.truncate(64);
    files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

fn bench(c: &mut Criterion) {
    let texts = corpus();
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut g = c.benchmark_group("front");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    for (name, stage) in ptx_front::STAGES {
        g.bench_function(name, |b| b.iter(|| texts.iter().for_each(|t| stage(t))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
