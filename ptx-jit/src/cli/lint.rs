//! `ptx-jit lint`: check PTX files and report every problem with rich diagnostics.

use super::*;

/// The arguments of `ptx-jit lint`.
#[derive(clap::Args)]
pub struct Lint {
    /// Files, or folders whose `.ptx` files (at any depth) are checked. Files are checked in parallel;
    /// reports come in the order given.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Accept instructions and directives outside any function and skip name resolution, for
    /// checking isolated examples.
    #[arg(long)]
    pub fragment: bool,
    /// human (rustc-style), json (one object per diagnostic per line) or sarif (SARIF 2.1.0).
    #[arg(long, value_parser = ["human", "json", "sarif"], default_value = "human")]
    pub format: String,
    /// Check against this target instead of the module's `.target` (e.g. sm_75).
    #[arg(long)]
    pub arch: Option<String>,
    /// Check against this PTX version instead of the module's `.version` (e.g. 6.5).
    #[arg(long = "ptx-version")]
    pub ptx_version: Option<String>,
    /// Report a warning code (after -A).
    #[arg(short = 'W', value_name = "CODE")]
    pub warn: Vec<String>,
    /// Turn a warning code into an error; `-D warnings` turns every warning into an error.
    #[arg(short = 'D', value_name = "CODE")]
    pub deny: Vec<String>,
    /// Silence a warning code.
    #[arg(short = 'A', value_name = "CODE")]
    pub allow: Vec<String>,
}

pub fn lint(a: Lint) -> Result<ExitCode, ExitCode> {
    let Lint {
        files,
        fragment,
        format,
        arch,
        ptx_version,
        warn,
        deny,
        allow,
    } = a;
    let usage = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(2)
    };
    let code = |c: &String| {
        ptx_front::Code::parse(c)
            .ok_or_else(|| usage(format!("`{c}` is not a diagnostic code (see `ptx-jit explain P0201`)")))
    };
    let deny_all = deny.iter().any(|d| d == "warnings");
    let deny: Vec<_> = deny
        .iter()
        .filter(|d| *d != "warnings")
        .map(code)
        .collect::<Result<_, _>>()?;
    let warn: Vec<_> = warn.iter().map(code).collect::<Result<_, _>>()?;
    let allow: Vec<_> = allow.iter().map(code).collect::<Result<_, _>>()?;
    let mut opts = ptx_front::check::Options {
        fragment,
        ..Default::default()
    };
    if let Some(a) = &arch {
        opts.sm =
            Some(ptx_front::target::parse_sm(a).ok_or_else(|| usage(format!("`{a}` is not a target such as sm_75")))?);
    }
    if let Some(v) = &ptx_version {
        let parsed = v
            .split_once('.')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
        opts.version = Some(parsed.ok_or_else(|| usage(format!("`{v}` is not a PTX version such as 7.8")))?);
    }
    let files = expand(&files);
    let color = std::io::stderr().is_terminal();
    let check = |f: &PathBuf| -> Checked {
        // An unreadable file is reported where it comes and fails the run (exit 2), but the
        // files after it are still checked.
        let src = match read_text(f) {
            Ok(src) => src,
            Err(e) => return Checked::Unreadable(e),
        };
        let (_, diags) = ptx_front::parse_and_check_with(&src, &opts);
        let diags: Vec<Diagnostic> = diags
            .into_iter()
            .filter(|d| d.is_error() || !allow.contains(&d.code) || warn.contains(&d.code))
            .map(|mut d| {
                if !d.is_error() && (deny_all || deny.contains(&d.code)) {
                    d.severity = ptx_front::Severity::Error;
                }
                d
            })
            .collect();
        let name = f.display().to_string();
        let (mut out, mut err) = (String::new(), String::new());
        match format.as_str() {
            "json" => {
                let idx = ptx_front::span::LineIndex::new(&src);
                for d in &diags {
                    out.push_str(&ptx_front::report::json(d, &name, &idx).to_string());
                    out.push('\n');
                }
            }
            "sarif" => {}
            _ => {
                // Past a few hundred, more rendered reports help nobody (each shows at most a
                // window of a long line, but a window per report); the machine formats keep
                // them all.
                const SHOWN: usize = 500;
                Diagnostic::render_each(&diags[..diags.len().min(SHOWN)], &name, &src, color, |r| {
                    err.push_str(r)
                });
                if diags.len() > SHOWN {
                    err.push_str(&format!(
                        "… {} more diagnostics in {name} not shown; `--format json` lists them all\n",
                        diags.len() - SHOWN
                    ));
                }
            }
        }
        // Only SARIF is one document for all files; the other formats are printed as they come.
        let sarif = (format == "sarif").then_some((name, src));
        Checked::Done { diags, out, err, sarif }
    };
    let checked: Vec<Checked> = {
        use rayon::prelude::*;
        files.par_iter().map(check).collect()
    };
    let (mut errors, mut warnings, mut unreadable) = (0, 0, 0);
    let mut all = vec![];
    for c in checked {
        match c {
            Checked::Unreadable(e) => {
                eprintln!("error: {e}");
                unreadable += 1;
            }
            Checked::Done { diags, out, err, sarif } => {
                print!("{out}");
                eprint!("{err}");
                errors += diags.iter().filter(|d| d.is_error()).count();
                warnings += diags.iter().filter(|d| !d.is_error()).count();
                if let Some((name, src)) = sarif {
                    all.push((name, src, diags));
                }
            }
        }
    }
    if format == "sarif" {
        println!("{:#}", ptx_front::report::sarif(&all));
    }
    if format == "human" && errors + warnings > 0 {
        eprintln!(
            "{errors} error(s), {warnings} warning(s) in {} file(s)",
            files.len() - unreadable
        );
    }
    if unreadable > 0 {
        eprintln!("error: {unreadable} of {} file(s) could not be read", files.len());
        return Err(ExitCode::from(2));
    }
    Ok(ExitCode::from(u8::from(errors > 0)))
}

/// One file's result: its diagnostics, rendered for stdout and stderr.
enum Checked {
    Unreadable(String),
    Done {
        diags: Vec<Diagnostic>,
        out: String,
        err: String,
        /// Name and text, kept for the one SARIF document.
        sarif: Option<(String, String)>,
    },
}

/// The files to check: each path given, with folders replaced by the `.ptx` files beneath them
/// (sorted, so runs agree). A folder that cannot be read stays, to be reported as unreadable.
fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if p.extension().is_some_and(|e| e == "ptx") {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = vec![];
    for p in paths {
        let mut found = vec![];
        if p.is_dir() && walk(p, &mut found).is_ok() {
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    out
}
