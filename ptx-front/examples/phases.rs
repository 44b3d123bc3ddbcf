//! Development timing of the front end's phases over a directory: outline (lazy loading's index),
//! parse, check, check with lints.
fn main() {
    let mut srcs = vec![];
    for e in std::fs::read_dir(std::env::args().nth(1).unwrap()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ptx") {
            srcs.push(std::fs::read_to_string(&p).unwrap());
        }
    }
    let mb: f64 = srcs.iter().map(|s| s.len()).sum::<usize>() as f64 / 1e6;
    let mods: Vec<_> = srcs.iter().map(|s| ptx_front::parse(s).0).collect();
    let time = |name: &str, f: &dyn Fn()| {
        let mut dt = f64::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            f();
            dt = dt.min(t.elapsed().as_secs_f64());
        }
        println!("{name:12} {:6.3} s  {:7.1} MB/s", dt, mb / dt);
    };
    time("outline", &|| {
        srcs.iter()
            .for_each(|s| drop(std::hint::black_box(ptx_front::outline::Outline::new(s))))
    });
    time("parse", &|| {
        srcs.iter()
            .for_each(|s| drop(std::hint::black_box(ptx_front::parse(s))))
    });
    let errors_only = ptx_front::check::Options {
        no_lints: true,
        ..Default::default()
    };
    time("check", &|| {
        mods.iter()
            .for_each(|m| drop(std::hint::black_box(ptx_front::check::check_with(m, &errors_only))))
    });
    // The lints read the checker's IR of each function, so they are timed with the checks.
    time("check+lints", &|| {
        mods.iter()
            .for_each(|m| drop(std::hint::black_box(ptx_front::check::check(m))))
    });
}
