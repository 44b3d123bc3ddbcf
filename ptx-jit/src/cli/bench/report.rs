//! `--report DIR`: one self-contained HTML page (inline CSS and SVG, nothing loaded from elsewhere) with `bench kernel`'s tables and plots: where the JIT's time goes, the time of every
//! launch, and the tiers beside each other and beside a peer. A short script on the page marks on
//! `<body data-plots=…>` how many plots the browser laid out, which the report's browser test reads.

use super::kernel::{Phase, Results};
use super::program::ProgramRun;
use crate::runtime::counters::Space;
use std::fmt::Write as _;

/// Colours of the phases and series, in order: Okabe and Ito's eight (told apart by colour-blind
/// readers), then five darker ones, so that every phase of a stage has its own.
const PALETTE: [&str; 13] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999", "#332288", "#882255",
    "#117733", "#44AA99", "#AA4499",
];

const WIDTH: f64 = 760.0;

/// Text made safe for HTML and SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step for about `ticks` divisions of `0..max` (1, 2 or 5 times a power of ten).
fn step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(1e-12);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// A number as an axis or bar label: three significant digits below 1, two decimals below 100,
/// none above, and no trailing zeros.
fn num(x: f64) -> String {
    let s = if x == 0.0 || x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        let digits = (2 - x.abs().log10().floor() as i32).clamp(3, 12) as usize;
        format!("{x:.digits$}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Horizontal stacked bars, one per row, each segment one named part, with a legend of the parts.
fn stacked(title: &str, unit: &str, rows: &[(String, Vec<(String, f64)>)]) -> String {
    let mut names: Vec<&str> = vec![];
    for (_, parts) in rows {
        for (n, _) in parts {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    let colour = |n: &str| PALETTE[names.iter().position(|m| *m == n).unwrap_or(0) % PALETTE.len()];
    let max = rows
        .iter()
        .map(|(_, p)| p.iter().map(|(_, v)| v).sum::<f64>())
        .fold(0.0, f64::max);
    let (left, right, bar, gap) = (110.0, 90.0, 26.0, 12.0);
    let legend_rows = names.len().div_ceil(5) as f64;
    let height = 30.0 + rows.len() as f64 * (bar + gap) + 30.0 + legend_rows * 20.0;
    let scale = (WIDTH - left - right) / max.max(1e-12);
    let mut s = svg_open(title, height);
    for (i, (label, parts)) in rows.iter().enumerate() {
        let y = 30.0 + i as f64 * (bar + gap);
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + bar * 0.65,
            esc(label)
        );
        let mut x = left;
        for (name, v) in parts {
            let w = v * scale;
            let _ = write!(
                s,
                r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{bar}" fill="{}"><title>{}: {} {unit}</title></rect>"#,
                colour(name),
                esc(name),
                num(*v)
            );
            x += w;
        }
        let total: f64 = parts.iter().map(|(_, v)| v).sum();
        let _ = write!(
            s,
            r#"<text x="{:.2}" y="{}">{} {unit}</text>"#,
            x + 6.0,
            y + bar * 0.65,
            num(total)
        );
    }
    let y0 = 30.0 + rows.len() as f64 * (bar + gap) + 10.0;
    for (i, n) in names.iter().enumerate() {
        let (x, y) = (left + (i % 5) as f64 * 120.0, y0 + (i / 5) as f64 * 20.0);
        let _ = write!(
            s,
            r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            colour(n),
            x + 16.0,
            y + 10.0,
            esc(n)
        );
    }
    s + "</svg>"
}

/// Horizontal bars with an optional ± interval each, grouped under headings.
fn bars(title: &str, unit: &str, rows: &[(String, f64, Option<f64>)]) -> String {
    let max = rows.iter().map(|(_, v, e)| v + e.unwrap_or(0.0)).fold(0.0, f64::max);
    let (left, right, bar, gap) = (200.0, 170.0, 22.0, 10.0);
    let height = 30.0 + rows.len() as f64 * (bar + gap) + 10.0;
    let scale = (WIDTH - left - right) / max.max(1e-12);
    let mut s = svg_open(title, height);
    for (i, (label, v, e)) in rows.iter().enumerate() {
        let y = 30.0 + i as f64 * (bar + gap);
        let w = v * scale;
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{left}" y="{y}" width="{w:.2}" height="{bar}" fill="{}"/>"#,
            left - 8.0,
            y + bar * 0.7,
            esc(label),
            PALETTE[i % PALETTE.len()]
        );
        if let Some(e) = e {
            let (a, b, m) = (left + (v - e) * scale, left + (v + e) * scale, y + bar / 2.0);
            let _ = write!(
                s,
                r#"<path d="M{a:.2} {m}H{b:.2}M{a:.2} {}V{}M{b:.2} {}V{}" stroke="black" fill="none"/>"#,
                m - 6.0,
                m + 6.0,
                m - 6.0,
                m + 6.0
            );
        }
        let label = match e {
            Some(e) => format!("{} ± {} {unit}", num(*v), num(*e)),
            None => format!("{} {unit}", num(*v)),
        };
        let _ = write!(
            s,
            r#"<text x="{:.2}" y="{}">{}</text>"#,
            left + (v + e.unwrap_or(0.0)) * scale + 6.0,
            y + bar * 0.7,
            esc(&label)
        );
    }
    s + "</svg>"
}

/// Samples against their index, one series per name, with axes.
fn series(title: &str, unit: &str, all: &[(&str, &[f64])]) -> String {
    let (left, right, top, bottom, height) = (70.0, 20.0, 30.0, 40.0, 320.0);
    let n = all.iter().map(|(_, s)| s.len()).max().unwrap_or(0).max(2);
    let max = all.iter().flat_map(|(_, s)| s.iter().copied()).fold(0.0, f64::max);
    let dy = step(max, 5.0);
    let ymax = (max / dy).ceil().max(1.0) * dy;
    let (w, h) = (WIDTH - left - right, height - top - bottom - 20.0);
    let px = |i: usize| left + w * i as f64 / (n - 1) as f64;
    let py = |v: f64| top + h * (1.0 - v / ymax);
    let mut s = svg_open(title, height);
    let mut y = 0.0;
    while y <= ymax + dy / 2.0 {
        let _ = write!(
            s,
            r##"<path d="M{left} {:.2}H{}" stroke="#ddd"/><text x="{}" y="{:.2}" text-anchor="end">{}</text>"##,
            py(y),
            left + w,
            left - 6.0,
            py(y) + 4.0,
            num(y)
        );
        y += dy;
    }
    let _ = write!(
        s,
        r#"<path d="M{left} {top}V{:.2}H{}" stroke="black" fill="none"/><text x="{}" y="{}" text-anchor="middle">launch (after warm-up)</text><text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">{unit}</text>"#,
        top + h,
        left + w,
        left + w / 2.0,
        top + h + 30.0,
        top + h / 2.0,
        top + h / 2.0
    );
    for (k, (name, samples)) in all.iter().enumerate() {
        let c = PALETTE[k % PALETTE.len()];
        let d: Vec<String> = samples
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{}{:.2} {:.2}", if i == 0 { "M" } else { "L" }, px(i), py(v)))
            .collect();
        let _ = write!(
            s,
            r#"<path d="{}" stroke="{c}" fill="none" stroke-width="1.2"/><rect x="{}" y="{}" width="12" height="12" fill="{c}"/><text x="{}" y="{}">{}</text>"#,
            d.join(""),
            left + 10.0 + k as f64 * 130.0,
            height - 18.0,
            left + 26.0 + k as f64 * 130.0,
            height - 8.0,
            esc(name)
        );
    }
    s + "</svg>"
}

fn svg_open(title: &str, height: f64) -> String {
    format!(
        r#"<figure><figcaption>{}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{}" font-family="sans-serif" font-size="12">"#,
        esc(title),
        esc(title)
    )
}

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s + "</table>"
}

/// The page of one `bench kernel` run.
pub fn kernel_page(r: &Results) -> String {
    let stages = super::kernel::stages(r);
    let of = |stage: &str| -> Vec<&Phase> { r.phases.iter().filter(|p| p.stage == stage).collect() };
    let mut body = String::new();
    let [g, b] = [r.grid, r.block];
    let _ = write!(
        body,
        "<h1>{}</h1><p>{} · grid {}×{}×{}, block {}×{}×{} · {} · disk cache {}</p>",
        esc(&r.kernel),
        esc(&r.file),
        g[0],
        g[1],
        g[2],
        b[0],
        b[1],
        b[2],
        esc(&r.cpu),
        if r.disk_cache { "on" } else { "off" }
    );
    // Where the JIT's time goes.
    let rows: Vec<(String, Vec<(String, f64)>)> = stages
        .iter()
        .map(|s| {
            (
                s.to_string(),
                of(s).iter().map(|p| (p.name.clone(), p.summary.median)).collect(),
            )
        })
        .collect();
    body.push_str("<h2>The JIT, phase by phase</h2>");
    body.push_str(&stacked(
        &format!(
            "Median time of each phase over {} fresh compiles",
            r.first_launches.len()
        ),
        "ms",
        &rows,
    ));
    let phase_rows: Vec<Vec<String>> = r
        .phases
        .iter()
        .map(|p| {
            let s = &p.summary;
            vec![
                p.stage.to_string(),
                p.name.clone(),
                num(s.median),
                num(s.min),
                num(s.max),
                format!("{:.1}%", 100.0 * s.median / r.stage_ms(p.stage).max(1e-12)),
            ]
        })
        .collect();
    body.push_str(&table(
        &["stage", "phase", "median ms", "min ms", "max ms", "share of stage"],
        &phase_rows,
    ));
    if let Some(f) = r.first_launches.first() {
        let walls: Vec<f64> = r.first_launches.iter().map(|f| f.wall_ms).collect();
        let jits: Vec<f64> = r.first_launches.iter().map(|f| f.jit_ms).collect();
        if let (Some(w), Some(j)) = (super::stats::Summary::of(&walls), super::stats::Summary::of(&jits)) {
            let _ = write!(
                body,
                "<p>First launch after a load ({} tier): {} ms median, of which {} ms compiling.</p>",
                f.tier,
                num(w.median),
                num(j.median)
            );
        }
    }
    // Launches.
    if !r.steady.is_empty() {
        body.push_str("<h2>Steady state</h2>");
        let all: Vec<(&str, &[f64])> = r.steady.iter().map(|s| (s.tier, s.samples_ms.as_slice())).collect();
        body.push_str(&series("Time of every launch", "ms", &all));
        let rows: Vec<Vec<String>> = r
            .steady
            .iter()
            .map(|s| {
                let m = &s.summary;
                vec![
                    s.tier.to_string(),
                    m.n.to_string(),
                    num(m.min),
                    num(m.median),
                    num(m.max),
                    format!("{} ± {}", num(m.mean), num(m.ci95)),
                    s.stopped_by.to_string(),
                ]
            })
            .collect();
        body.push_str(&table(
            &[
                "tier",
                "launches",
                "min ms",
                "median ms",
                "max ms",
                "mean ± 95% CI",
                "stopped by",
            ],
            &rows,
        ));
    }
    // Tiers and peers.
    let mut compile: Vec<(String, f64, Option<f64>)> = ["quick", "optimised"]
        .iter()
        .filter(|s| stages.contains(s))
        .map(|s| (format!("{s} tier"), r.jit_ms(s), None))
        .collect();
    compile.extend(r.peers.iter().map(|p| (p.peer.to_string(), p.summary.median, None)));
    body.push_str("<h2>Tiers and peers</h2>");
    body.push_str(&bars(
        "Compile time, the kernel's preparation included (median)",
        "ms",
        &compile,
    ));
    if !r.steady.is_empty() {
        let launch: Vec<(String, f64, Option<f64>)> = r
            .steady
            .iter()
            .map(|s| (format!("{} tier", s.tier), s.summary.mean, Some(s.summary.ci95)))
            .collect();
        body.push_str(&bars("Time per launch (mean, 95% interval)", "ms", &launch));
    }
    if let Some(c) = &r.counters {
        counters_section(&mut body, c);
    }
    page(&format!("ptx-jit bench: {}", r.kernel), &body)
}

/// The counters of one launch: the instruction mix as a plot, the rest as tables.
fn counters_section(body: &mut String, c: &super::counters::Report) {
    let _ = write!(
        body,
        "<h2>Counters of one launch</h2><p>{} CTAs, {} warps: {} thread instructions in {} warp instructions \
         ({:.2} active lanes of 32); {} warp-level branches, {} divergent; {} barriers passed by threads, {} by \
         warps. The counting launch took {} ms.{}</p>",
        c.ctas,
        c.warps,
        c.thread_instructions,
        c.warp_instructions,
        c.active_lanes,
        c.branches,
        c.divergent_branches,
        c.barriers,
        c.warp_barriers,
        num(c.launch_ms),
        if c.truncated {
            " Some CTAs' accesses were too many to trace all."
        } else {
            ""
        }
    );
    let mix: Vec<(String, f64, Option<f64>)> = c
        .classes
        .iter()
        .filter(|k| k.thread_instructions > 0)
        .map(|k| (k.class.to_string(), k.thread_instructions as f64, None))
        .collect();
    body.push_str(&bars("Thread instructions by class", "", &mix));
    let rows: Vec<Vec<String>> = c
        .spaces
        .iter()
        .filter(|s| s.accesses > 0)
        .map(|s| {
            vec![
                s.space.to_string(),
                s.accesses.to_string(),
                s.bytes.to_string(),
                s.requests.to_string(),
                if s.kind == Space::Global {
                    format!("{} ({:.2} per request)", s.sectors, s.sectors_per_request)
                } else {
                    String::new()
                },
                if s.kind == Space::Shared {
                    format!("{} of {} wavefronts", s.bank_conflicts, s.wavefronts)
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "space",
            "accesses",
            "bytes",
            "warp requests",
            "32-byte sectors",
            "bank conflicts",
        ],
        &rows,
    ));
}

/// The page of one `bench program` run.
pub fn program_page(r: &ProgramRun) -> String {
    let mut body = String::new();
    let status = r
        .exit_code
        .map_or("killed by a signal".to_string(), |c| format!("exit {c}"));
    let _ = write!(
        body,
        "<h1>{}</h1><p>{} ms wall · {status} · {} process(es) on ptx-jit</p>",
        esc(&r.command.join(" ")),
        num(r.wall_ms),
        r.processes
    );
    body.push_str("<h2>Kernels</h2>");
    let rows: Vec<(String, Vec<(String, f64)>)> = r
        .kernels
        .iter()
        .take(30)
        .map(|k| {
            (
                r.label(k),
                vec![("JIT".to_string(), k.jit_ms), ("run".to_string(), k.exec_ms)],
            )
        })
        .collect();
    body.push_str(&stacked(
        "JIT and run time per kernel (the 30 longest runs)",
        "ms",
        &rows,
    ));
    let table_rows: Vec<Vec<String>> = r
        .kernels
        .iter()
        .map(|k| {
            vec![
                r.label(k),
                k.launches.to_string(),
                num(k.jit_ms),
                num(k.exec_ms),
                format!("{:.1}%", 100.0 * k.exec_ms / r.wall_ms.max(1e-9)),
            ]
        })
        .collect();
    body.push_str(&table(
        &["kernel", "launches", "JIT ms", "run ms", "share of wall"],
        &table_rows,
    ));
    if !r.modules.is_empty() {
        body.push_str("<h2>Modules</h2>");
        let loads: Vec<(String, f64, Option<f64>)> = r
            .modules
            .iter()
            .enumerate()
            .map(|(i, m)| (format!("module {} ({} kernels)", i + 1, m.kernels), m.load_ms, None))
            .collect();
        body.push_str(&bars("Load time", "ms", &loads));
        let rows: Vec<Vec<String>> = r
            .modules
            .iter()
            .enumerate()
            .map(|(i, m)| {
                vec![
                    (i + 1).to_string(),
                    m.bytes.to_string(),
                    m.kernels.to_string(),
                    num(m.load_ms),
                    r.cache_hits(&m.id).to_string(),
                ]
            })
            .collect();
        body.push_str(&table(
            &["module", "PTX bytes", "kernels", "load ms", "cache hits"],
            &rows,
        ));
    }
    page(&format!("ptx-jit bench: {}", r.command.join(" ")), &body)
}

fn page(title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 820px; color: #222; }}
figure {{ margin: 1em 0; }} figcaption {{ font-weight: bold; margin-bottom: .3em; }}
table {{ border-collapse: collapse; margin: 1em 0; }} td, th {{ padding: 2px 10px; border-bottom: 1px solid #ddd; text-align: right; }}
td:first-child, th:first-child, td:nth-child(2), th:nth-child(2) {{ text-align: left; }}
</style></head>
<body>
{body}
<script>
addEventListener("load", () => {{
  const laid = [...document.querySelectorAll("figure svg")].filter(s => s.getBBox().width > 0);
  document.body.dataset.plots = laid.length;
}});
</script>
</body></html>
"#,
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_labels_are_round() {
        assert_eq!(step(9.3, 5.0), 2.0);
        assert_eq!(step(0.042, 5.0), 0.01);
        assert_eq!(step(1000.0, 5.0), 200.0);
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(0.00125), "0.00125");
        assert_eq!(num(0.0000312), "0.0000312");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(250.0), "250");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
