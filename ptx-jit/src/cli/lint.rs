//! `ptx-jit lint`: check PTX files and report every problem with rich diagnostics.

use super::*;

/// The arguments of `ptx-jit lint`.
#[derive(clap::Args)]
pub struct Lint {
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
    let (mut errors, mut warnings, mut unreadable) = (0, 0, 0);
    let mut all = vec![];
    for f in &files {
        // An unreadable file is reported where it comes and fails the run (exit 2), but the
        // files after it are still checked.
        let src = match read_text(f) {
            Ok(src) => src,
            Err(e) => {
                eprintln!("error: {e}");
                unreadable += 1;
                continue;
            }
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
        match format.as_str() {
            "json" => {
                let idx = ptx_front::span::LineIndex::new(&src);
                for d in &diags {
                    println!("{}", ptx_front::report::json(d, &name, &idx));
                }
            }
            "sarif" => {}
            _ => {
                // Past a few hundred, more rendered reports help nobody (each shows at most a
                // window of a long line, but a window per report); the machine formats keep
                // them all.
                const SHOWN: usize = 500;
                print_diags(&diags[..diags.len().min(SHOWN)], &name, &src);
                if diags.len() > SHOWN {
                    eprintln!(
                        "… {} more diagnostics in {name} not shown; `--format json` lists them all",
                        diags.len() - SHOWN
                    );
                }
            }
        }
        errors += diags.iter().filter(|d| d.is_error()).count();
        warnings += diags.iter().filter(|d| !d.is_error()).count();
        // Only SARIF is one document for all files; the other formats are printed already.
        if format == "sarif" {
            all.push((name, src, diags));
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
