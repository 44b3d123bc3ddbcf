fn main() {
    let mut srcs = vec![];
    for e in std::fs::read_dir(std::env::args().nth(1).unwrap()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ptx") {
            srcs.push(std::fs::read_to_string(&p).unwrap());
        }
    }
    let total: usize = srcs.iter().map(|s| s.len()).sum();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let mut n = 0;
        for s in &srcs {
            n += ptx_front::lexer::lex(s).len();
        }
        let dt = t.elapsed().as_secs_f64();
        println!("lex {:.1} MB/s ({n} tokens)", total as f64 / dt / 1e6);
    }
}
