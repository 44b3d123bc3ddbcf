//! Corpus scan for development: parses and checks every .ptx file in the given directories, checks that
//! the printer round-trips it, and prints the most frequent error kinds.
//! `cargo run --release -p ptx-front --example scan -- DIR…`
fn main() {
    let mut files = 0;
    let mut bad = 0;
    let mut trip = 0;
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for dir in std::env::args().skip(1) {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "ptx") {
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let src = String::from_utf8_lossy(&bytes);
            files += 1;
            let (m, d) = ptx_front::parse_and_check(&src);
            let errs: Vec<_> = d.iter().filter(|d| d.is_error()).collect();
            if !errs.is_empty() {
                bad += 1;
                for e in &errs {
                    *counts
                        .entry(format!(
                            "{:?} {}",
                            e.code,
                            e.message.split('`').nth(1).unwrap_or(&e.message)
                        ))
                        .or_default() += 1;
                }
                if bad <= 5 {
                    println!("{}: {}", p.display(), errs[0].one_line("f", &src));
                }
            }
            let printed = ptx_front::print(&m);
            let (m2, d2) = ptx_front::parse(&printed);
            if ptx_front::printer::shape(&m) != ptx_front::printer::shape(&m2) || (errs.is_empty() && !d2.is_empty()) {
                trip += 1;
                if trip <= 3 {
                    println!("round trip differs: {}", p.display());
                    std::fs::write("/tmp/trip.ptx", &printed).unwrap();
                }
            }
        }
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (k, n) in v.iter().take(40) {
        println!("{n:6} {k}");
    }
    println!("{bad}/{files} files with errors, {trip} that do not round-trip");
}
