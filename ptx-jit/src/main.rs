//! The `ptx-jit` command line: lint, compile, run, bench, explain.

use clap::{Parser, Subcommand};
use ptx_jit::cli::args::{self, Arg, ElemExt};
use ptx_jit::nvptx::{self, arch};
use ptx_jit::Diagnostic;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ptx-jit", version, about = "Lint, run and retarget NVIDIA PTX")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check PTX files and report every problem with rich diagnostics.
    Lint {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Accept instructions and directives outside any function and skip name resolution, for
        /// checking isolated examples.
        #[arg(long)]
        fragment: bool,
        /// human (rustc-style), json (one object per diagnostic per line) or sarif (SARIF 2.1.0).
        #[arg(long, value_parser = ["human", "json", "sarif"], default_value = "human")]
        format: String,
        /// Check against this target instead of the module's `.target` (e.g. sm_75).
        #[arg(long)]
        arch: Option<String>,
        /// Check against this PTX version instead of the module's `.version` (e.g. 6.5).
        #[arg(long = "ptx-version")]
        ptx_version: Option<String>,
        /// Report a warning code (after -A).
        #[arg(short = 'W', value_name = "CODE")]
        warn: Vec<String>,
        /// Turn a warning code into an error; `-D warnings` turns every warning into an error.
        #[arg(short = 'D', value_name = "CODE")]
        deny: Vec<String>,
        /// Silence a warning code.
        #[arg(short = 'A', value_name = "CODE")]
        allow: Vec<String>,
    },
    /// Print PTX in canonical form (one statement per line, exact float literals); parsing the output
    /// gives the same syntax tree.
    Fmt {
        file: PathBuf,
        #[arg(long)]
        fragment: bool,
    },
    /// Re-emit PTX through LLVM's NVPTX backend for a target (or print the LLVM IR).
    Compile {
        file: PathBuf,
        /// Target: sm_XX (or `host` with --emit llvm for the CPU flavour).
        #[arg(long)]
        arch: String,
        /// PTX version of the output, e.g. 7.8 (default: the minimum for the target).
        #[arg(long = "ptx-version")]
        ptx_version: Option<String>,
        /// Optimisation level 0-3.
        #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
        opt: u8,
        #[arg(short = 'o')]
        out: Option<PathBuf>,
        /// ptx, llvm (IR text after optimisation) or bc (LLVM bitcode).
        #[arg(long, value_parser = ["ptx", "llvm", "bc"], default_value = "ptx")]
        emit: String,
    },
    /// Run a kernel on the CPU and print its buffers afterwards.
    Run {
        file: PathBuf,
        #[arg(long)]
        kernel: String,
        /// X[,Y[,Z]]
        #[arg(long, default_value = "1")]
        grid: String,
        /// X[,Y[,Z]]
        #[arg(long, default_value = "1")]
        block: String,
        /// Dynamic shared memory in bytes.
        #[arg(long, default_value_t = 0)]
        shared: u64,
        /// Kernel arguments in order: `u32:7`, `f32[1,2,3]`, `f32*1024=1.5`, `u32*64=iota`.
        #[arg(long = "arg", allow_hyphen_values = true)]
        args: Vec<String>,
        /// Bounds-check every global, shared and local access (also PTXJIT_CHECKED=1); an
        /// out-of-bounds access fails the launch with the thread, block, PTX line and address.
        #[arg(long)]
        checked: bool,
        /// Run under sanitizers: memcheck, racecheck (racecheck=all), initcheck, synccheck, or all,
        /// comma-separated (also PTXJIT_SANITIZE). Exit status 1 if any finds something.
        #[arg(long)]
        sanitize: Option<String>,
    },
    /// Run an unmodified CUDA program on ptx-jit's libcuda.so.1 with sanitizers on, like
    /// compute-sanitizer: findings go to stderr (and, with --log, to a JSON file); exit status 1 if
    /// anything was found, else the program's own.
    Sanitize {
        /// memcheck, racecheck (racecheck=all), initcheck, synccheck or all, comma-separated.
        #[arg(long, default_value = "all")]
        tools: String,
        /// Also write every finding as one JSON object per line to this file.
        #[arg(long)]
        log: Option<PathBuf>,
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Measure parse throughput.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
    /// For every instruction section of the PTX ISA 8.5 manual: how many forms of the ISA table parse,
    /// check, lower for the host and lower for NVPTX (measured by compiling each form).
    Coverage {
        /// Print only the summary line.
        #[arg(long)]
        summary: bool,
        /// Instead of counts, list every checked form that a backend (`host` or `nvptx`) does not
        /// lower yet, with the reason.
        #[arg(long, value_parser = ["host", "nvptx"])]
        missing: Option<String>,
    },
    /// Explain a diagnostic code (P0201) or describe an instruction (add).
    Explain { what: String },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Per-file compile latency of `compile` (by phase) and of NVIDIA's ptxas on the same files, each
    /// file for its own `.target` unless --arch is given; medians over the files.
    Compile {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Path of ptxas (e.g. the venv's nvidia/cu13/bin/ptxas); without it only our phases are timed.
        #[arg(long)]
        ptxas: Option<PathBuf>,
        #[arg(long)]
        arch: Option<String>,
        #[arg(long, default_value_t = 3)]
        iters: u32,
        #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
        opt: u8,
        /// Also write every file's times as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// MB/s of parsing, and of parsing plus checking, single-threaded, over files or directories.
    Parse {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, default_value_t = 5)]
        iters: u32,
    },
}

/// A file's text, or why it has none: an I/O error, or the place of its first byte that is not UTF-8.
fn read_text(p: &PathBuf) -> Result<String, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
        // The valid prefix is UTF-8, so its characters can be counted.
        let column = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
        let byte = e.as_bytes()[valid.len()];
        format!(
            "cannot read {}: not UTF-8 text (byte 0x{byte:02X} at line {line}, column {column})",
            p.display()
        )
    })
}

fn read(p: &PathBuf) -> Result<String, ExitCode> {
    read_text(p).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

/// The `.ptx` files of directories (sorted) and the files named.
fn ptx_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ExitCode> {
    let mut files = vec![];
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(p)
                .map_err(|e| {
                    eprintln!("error: cannot read {}: {e}", p.display());
                    ExitCode::from(2)
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
                .collect();
            v.sort();
            files.extend(v);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

fn print_diags(diags: &[Diagnostic], file: &str, src: &str) {
    let color = std::io::stderr().is_terminal();
    Diagnostic::render_each(diags, file, src, color, |r| eprint!("{r}"));
}

fn dims(s: &str) -> Result<[u32; 3], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>().map_err(|_| format!("`{s}` is not X[,Y[,Z]]")))
        .collect::<Result<_, _>>()?;
    if v.is_empty() || v.len() > 3 {
        return Err(format!("`{s}` is not X[,Y[,Z]]"));
    }
    Ok([v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1)])
}

fn main() -> ExitCode {
    // Like other Unix tools, stop quietly when the reader of our output goes away (`| head`).
    // SAFETY: restoring the default disposition of a signal at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match run(cli.cmd) {
        Ok(c) | Err(c) => c,
    }
}

/// `ptx-jit sanitize -- PROGRAM ARGS…`: the program runs on the libcuda.so.1 beside this binary,
/// with `PTXJIT_SANITIZE` and a JSON log whose lines are the findings.
fn sanitize_program(tools: &str, log: Option<PathBuf>, command: &[String]) -> Result<ExitCode, ExitCode> {
    let usage = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    ptx_jit::runtime::sanitize::Tools::parse(tools).map_err(usage)?;
    let exe = std::env::current_exe().map_err(|e| usage(format!("cannot find ptx-jit's own path: {e}")))?;
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    if !dir.join("libcuda.so.1").exists() {
        return Err(usage(format!(
            "no libcuda.so.1 beside {} (run `make build`)",
            exe.display()
        )));
    }
    let temp = std::env::temp_dir().join(format!("ptx-jit-sanitize-{}.jsonl", std::process::id()));
    let log_path = log.clone().unwrap_or_else(|| temp.clone());
    let _ = std::fs::remove_file(&log_path);
    let library_path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(p) if !p.is_empty() => {
            let mut v = dir.clone().into_os_string();
            v.push(":");
            v.push(p);
            v
        }
        _ => dir.clone().into_os_string(),
    };
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("LD_LIBRARY_PATH", library_path)
        .env("PTXJIT_SANITIZE", tools)
        .env("PTXJIT_SANITIZE_LOG", &log_path)
        .status()
        .map_err(|e| usage(format!("cannot run `{}`: {e}", command[0])))?;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let found = text.lines().filter(|l| l.contains("\"severity\":\"error\"")).count();
    let warnings = text.lines().count() - found;
    if log.is_none() {
        let _ = std::fs::remove_file(&temp);
    }
    eprintln!("ptx-jit sanitize: {found} error(s), {warnings} warning(s) ({tools})");
    if found > 0 {
        return Err(ExitCode::from(1));
    }
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(c) => Err(ExitCode::from(c.clamp(1, 255) as u8)),
        None => Err(ExitCode::from(1)),
    }
}

fn run(cmd: Cmd) -> Result<ExitCode, ExitCode> {
    match cmd {
        Cmd::Lint {
            files,
            fragment,
            format,
            arch,
            ptx_version,
            warn,
            deny,
            allow,
        } => {
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
                opts.sm = Some(
                    ptx_front::target::parse_sm(a)
                        .ok_or_else(|| usage(format!("`{a}` is not a target such as sm_75")))?,
                );
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
        Cmd::Coverage {
            missing: Some(backend), ..
        } => {
            for (section, form, why) in ptx_jit::cli::coverage::missing(backend == "host") {
                println!("{section:<12} {form:<48} {why}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Coverage { summary, .. } => {
            let rows = ptx_jit::cli::coverage::report();
            let mut total = ptx_jit::cli::coverage::Row::default();
            let (mut s_checked, mut s_host, mut s_nvptx) = (0, 0, 0);
            if !summary {
                println!(
                    "{:<12} {:<50} {:>6} {:>6} {:>7} {:>6} {:>6}",
                    "section", "instruction", "forms", "parsed", "checked", "host", "nvptx"
                );
            }
            for r in &rows {
                if !summary {
                    println!(
                        "{:<12} {:<50} {:>6} {:>6} {:>7} {:>6} {:>6}",
                        r.number, r.title, r.forms, r.parsed, r.checked, r.host, r.nvptx
                    );
                }
                total.forms += r.forms;
                total.parsed += r.parsed;
                total.checked += r.checked;
                total.host += r.host;
                total.nvptx += r.nvptx;
                s_checked += usize::from(r.checked > 0);
                s_host += usize::from(r.host > 0);
                s_nvptx += usize::from(r.nvptx > 0);
            }
            println!(
                "{} sections, {} forms: {} parsed, {} checked, {} lowered for the host, {} for NVPTX; sections with at least one form checked {s_checked}, host {s_host}, NVPTX {s_nvptx}",
                rows.len(), total.forms, total.parsed, total.checked, total.host, total.nvptx
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Fmt { file, fragment } => {
            let src = read(&file)?;
            let (m, diags) = if fragment {
                ptx_front::parse_fragment(&src)
            } else {
                ptx_front::parse(&src)
            };
            if !diags.is_empty() {
                // Printing a partly parsed file would silently drop the broken statements.
                print_diags(&diags, &file.display().to_string(), &src);
                return Err(ExitCode::from(1));
            }
            print!("{}", ptx_front::print(&m));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Compile {
            file,
            arch: target,
            ptx_version,
            opt,
            out,
            emit,
        } => {
            let src = read(&file)?;
            let name = file.display().to_string();
            let result = if target == "host" {
                if emit != "llvm" {
                    eprintln!("error: `--arch host` only supports `--emit llvm`");
                    return Err(ExitCode::from(2));
                }
                ptx_jit::front(&src)
                    .and_then(|(m, _)| ptx_jit::jit::host::host_ir(&m, opt > 0))
                    .map(String::into_bytes)
            } else {
                let a = arch::validate(&target, ptx_version.as_deref()).map_err(|e| {
                    eprintln!("error[P0402]: {e}");
                    ExitCode::from(2)
                })?;
                let what = match emit.as_str() {
                    "llvm" => nvptx::Emit::Llvm,
                    "bc" => nvptx::Emit::Bc,
                    _ => nvptx::Emit::Ptx,
                };
                ptx_jit::front(&src).and_then(|(m, _)| nvptx::emit_bytes(&m, &a, opt, what, &mut Default::default()))
            };
            match result {
                Ok(text) => {
                    match out {
                        Some(o) => std::fs::write(&o, text).map_err(|e| {
                            eprintln!("error: cannot write {}: {e}", o.display());
                            ExitCode::from(2)
                        })?,
                        None => {
                            use std::io::Write;
                            let _ = std::io::stdout().write_all(&text);
                        }
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(d) => {
                    print_diags(&d, &name, &src);
                    Err(ExitCode::from(1))
                }
            }
        }
        Cmd::Run {
            file,
            kernel,
            grid,
            block,
            shared,
            args: raw,
            checked,
            sanitize,
        } => {
            let src = read(&file)?;
            let usage = |e: String| {
                eprintln!("error: {e}");
                ExitCode::from(2)
            };
            let tools = match &sanitize {
                Some(t) => ptx_jit::runtime::sanitize::Tools::parse(t).map_err(usage)?,
                None => ptx_jit::runtime::sanitize::Tools::from_env(),
            };
            let (grid, block) = (dims(&grid).map_err(usage)?, dims(&block).map_err(usage)?);
            let parsed: Vec<Arg> = raw
                .iter()
                .map(|a| Arg::parse(a))
                .collect::<Result<_, _>>()
                .map_err(usage)?;
            let t0 = std::time::Instant::now();
            let checked = checked || tools.any() || ptx_jit::checked_from_env();
            let module = ptx_jit::load_with(&src, checked).map_err(|d| {
                print_diags(&d, &file.display().to_string(), &src);
                ExitCode::from(1)
            })?;
            let k = module.kernel(&kernel).ok_or_else(|| {
                let names: Vec<_> = module.kernels.iter().map(|k| k.info.name.as_str()).collect();
                usage(format!(
                    "no kernel `{kernel}` in {} (kernels: {})",
                    file.display(),
                    names.join(", ")
                ))
            })?;
            let mut bufs: Vec<Vec<u8>> = parsed
                .iter()
                .map(|a| if let Arg::Buffer(_, b) = a { b.clone() } else { vec![] })
                .collect();
            let params = args::param_buffer(&k.info, &parsed, &mut bufs).map_err(usage)?;
            for b in &bufs {
                ptx_jit::memory_map::register(b.as_ptr() as u64, b.len() as u64);
            }
            // The kernel compiles on first use; count that as compilation, not as the run.
            k.entry().map_err(|e| usage(e.to_string()))?;
            let compile = t0.elapsed();
            let t = std::time::Instant::now();
            let launch = ptx_jit::Launch {
                sanitize: tools,
                ..ptx_jit::Launch::new(grid, block, shared, &params)
            };
            ptx_jit::launch(k, &launch).map_err(|e| {
                eprintln!("error: {e}");
                // A bad launch request is a usage error; a kernel that fails is the program's.
                match e {
                    ptx_jit::LaunchError::InvalidConfig(_) | ptx_jit::LaunchError::InvalidArgs(_) => ExitCode::from(2),
                    _ => ExitCode::from(1),
                }
            })?;
            let dt = t.elapsed();
            for (i, (a, b)) in parsed.iter().zip(&bufs).enumerate() {
                if let Arg::Buffer(e, _) = a {
                    let n = b.len() / e.size();
                    let shown: Vec<String> = b.chunks(e.size()).take(16).map(|c| e.format(c)).collect();
                    let more = if n > 16 {
                        format!(", … ({n} elements)")
                    } else {
                        String::new()
                    };
                    println!("arg{i} {e:?}[{n}] = [{}{more}]", shown.join(", "));
                }
            }
            eprintln!(
                "compiled in {:.1} ms; ran {kernel} over {}x{}x{} blocks of {}x{}x{} in {:.3} ms",
                compile.as_secs_f64() * 1e3,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                dt.as_secs_f64() * 1e3
            );
            if ptx_jit::runtime::sanitize::total() > 0 {
                eprintln!("sanitizer: {} finding(s)", ptx_jit::runtime::sanitize::total());
                return Err(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sanitize { tools, log, command } => sanitize_program(&tools, log, &command),
        Cmd::Bench {
            what:
                BenchCmd::Compile {
                    paths,
                    ptxas,
                    arch,
                    iters,
                    opt,
                    json,
                },
        } => {
            let files = ptx_files(&paths)?;
            let rows = ptx_jit::cli::bench::compile_latency(&files, arch.as_deref(), ptxas.as_deref(), iters, opt);
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            let med = |f: &dyn Fn(&ptx_jit::cli::bench::FileTimes) -> f64| {
                ptx_jit::cli::bench::median(rows.iter().map(f).collect())
            };
            println!(
                "{} of {} files compiled; medians over files, best of {iters} runs each, -O{opt}, single thread",
                rows.len(),
                files.len()
            );
            println!("  parse     {:8.3} ms", med(&|r| ms(r.parse)));
            println!("  check     {:8.3} ms", med(&|r| ms(r.check)));
            println!("  validate  {:8.3} ms", med(&|r| ms(r.phases.validate)));
            println!("  lower     {:8.3} ms", med(&|r| ms(r.phases.lower)));
            println!("  optimise  {:8.3} ms", med(&|r| ms(r.phases.optimise)));
            println!("  codegen   {:8.3} ms", med(&|r| ms(r.phases.codegen)));
            println!("  recheck   {:8.3} ms", med(&|r| ms(r.phases.recheck)));
            println!(
                "  total     {:8.3} ms (ptx-jit compile, PTX to PTX)",
                med(&|r| ms(r.ours()))
            );
            let with: Vec<_> = rows.iter().filter(|r| r.ptxas.is_some()).collect();
            if !with.is_empty() {
                let p = |r: &&ptx_jit::cli::bench::FileTimes| ms(r.ptxas.unwrap_or_default());
                let ours: Vec<f64> = with.iter().map(|r| ms(r.ours())).collect();
                let theirs: Vec<f64> = with.iter().map(p).collect();
                let ratio: Vec<f64> = with.iter().map(|r| ms(r.ours()) / p(r).max(1e-6)).collect();
                println!(
                    "on the {} files ptxas accepts: ptx-jit {:.3} ms, ptxas {:.3} ms (PTX to SASS, process included); per-file ratio ptx-jit/ptxas median {:.3}",
                    with.len(),
                    ptx_jit::cli::bench::median(ours),
                    ptx_jit::cli::bench::median(theirs),
                    ptx_jit::cli::bench::median(ratio)
                );
            }
            if let Some(j) = json {
                let v: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "file": r.file.display().to_string(), "arch": r.arch,
                            "parse_ms": ms(r.parse), "check_ms": ms(r.check), "validate_ms": ms(r.phases.validate),
                            "lower_ms": ms(r.phases.lower), "optimise_ms": ms(r.phases.optimise),
                            "codegen_ms": ms(r.phases.codegen), "recheck_ms": ms(r.phases.recheck),
                            "total_ms": ms(r.ours()), "ptxas_ms": r.ptxas.map(ms),
                        })
                    })
                    .collect();
                std::fs::write(&j, serde_json::to_string_pretty(&v).unwrap_or_default()).map_err(|e| {
                    eprintln!("error: cannot write {}: {e}", j.display());
                    ExitCode::from(2)
                })?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            what: BenchCmd::Parse { paths, iters },
        } => {
            let files = ptx_files(&paths)?;
            let texts: Vec<String> = files.iter().map(read).collect::<Result<_, _>>()?;
            let bytes: usize = texts.iter().map(String::len).sum();
            let time = |f: &dyn Fn(&str)| {
                let mut best = f64::MAX;
                for _ in 0..iters.max(1) {
                    let t = std::time::Instant::now();
                    texts.iter().for_each(|s| f(s));
                    best = best.min(t.elapsed().as_secs_f64());
                }
                bytes as f64 / 1e6 / best
            };
            // The median of per-file rates, as other parsers' benchmarks report it.
            let median = |f: &dyn Fn(&str)| {
                let mut rates: Vec<f64> = texts
                    .iter()
                    .map(|s| {
                        let mut best = f64::MAX;
                        for _ in 0..iters.max(1) {
                            let t = std::time::Instant::now();
                            f(s);
                            best = best.min(t.elapsed().as_secs_f64());
                        }
                        s.len() as f64 / 1e6 / best.max(1e-9)
                    })
                    .collect();
                rates.sort_by(f64::total_cmp);
                rates.get(rates.len() / 2).copied().unwrap_or(0.0)
            };
            let parse_only = |s: &str| {
                std::hint::black_box(ptx_front::parse(s));
            };
            let errors_only = ptx_front::check::Options {
                no_lints: true,
                ..Default::default()
            };
            let parse_check = |s: &str| {
                std::hint::black_box(ptx_front::parse_and_check_with(s, &errors_only));
            };
            let lint = |s: &str| {
                std::hint::black_box(ptx_front::parse_and_check(s));
            };
            let (parse, check, linted) = (time(&parse_only), time(&parse_check), time(&lint));
            let (parse_med, check_med, lint_med) = (median(&parse_only), median(&parse_check), median(&lint));
            let rejected = |f: &dyn Fn(&str) -> bool| texts.iter().filter(|s| f(s)).count();
            let syntax = rejected(&|s| !ptx_front::parse(s).1.is_empty());
            let any = rejected(&|s| ptx_front::parse_and_check(s).1.iter().any(|d| d.is_error()));
            println!(
                "{} files, {:.1} MB; best of {iters}, single thread",
                files.len(),
                bytes as f64 / 1e6
            );
            println!("                  all files   median file");
            println!("parse:           {parse:7.1} MB/s  {parse_med:7.1} MB/s");
            println!("parse + check:   {check:7.1} MB/s  {check_med:7.1} MB/s   (errors)");
            println!(
                "lint:            {linted:7.1} MB/s  {lint_med:7.1} MB/s   (errors and warnings, as `ptx-jit lint`)"
            );
            println!("rejected: {syntax} with syntax errors, {any} with any error");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Explain { what } => {
            if let Some(c) = ptx_front::Code::parse(&what) {
                println!("{}: {}\n\n{}", c.as_str(), c.title(), c.explanation());
                Ok(ExitCode::SUCCESS)
            } else if let Some(s) = ptx_front::isa::lookup(what.trim_start_matches('.')) {
                print!("{}", ptx_front::isa::describe(s));
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("error: `{what}` is neither a diagnostic code (P0201) nor an instruction ptx-jit knows");
                Err(ExitCode::from(2))
            }
        }
    }
}
