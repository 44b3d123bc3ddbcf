//! Corpus scan for development: parses and checks every .ptx file in the given directories and prints
//! the most frequent error kinds. `cargo run --release -p ptx-front --example scan -- DIR…`
fn main() {
    let mut files = 0;
    let mut bad = 0;
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for dir in std::env::args().skip(1) {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().map_or(true, |x| x != "ptx") {
                continue;
            }
            let src = std::fs::read_to_string(&p).unwrap();
            files += 1;
            let (_, d) = ptx_front::parse_and_check(&src);
            let errs: Vec<_> = d.iter().filter(|d| d.is_error()).collect();
            if !errs.is_empty() {
                bad += 1;
                for e in &errs {
                    *counts
                        .entry(format!("{:?} {}", e.code, e.message.split('`').nth(1).unwrap_or("")))
                        .or_default() += 1;
                }
                if bad <= 3 {
                    println!("{}: {}", p.display(), errs[0].one_line("f", &src));
                }
            }
        }
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (k, n) in v.iter().take(40) {
        println!("{n:6} {k}");
    }
    println!("{bad}/{files} files with errors");
}
