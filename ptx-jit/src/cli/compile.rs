//! `ptx-jit compile`: re-emit PTX through LLVM's NVPTX backend for a target (or print the LLVM IR).

use super::*;

/// The arguments of `ptx-jit compile`.
#[derive(clap::Args)]
pub struct Compile {
    pub file: PathBuf,
    /// Target: sm_XX (or `host` with --emit llvm for the CPU flavour).
    #[arg(long)]
    pub arch: String,
    /// PTX version of the output, e.g. 7.8 (default: the minimum for the target).
    #[arg(long = "ptx-version")]
    pub ptx_version: Option<String>,
    /// Optimisation level 0-3.
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt: u8,
    #[arg(short = 'o')]
    pub out: Option<PathBuf>,
    /// ptx, llvm (IR text after optimisation) or bc (LLVM bitcode).
    #[arg(long, value_parser = ["ptx", "llvm", "bc"], default_value = "ptx")]
    pub emit: String,
}

pub fn compile(a: Compile) -> Result<ExitCode, ExitCode> {
    let Compile {
        file,
        arch: target,
        ptx_version,
        opt,
        out,
        emit,
    } = a;
    let src = read(&file)?;
    let name = file.display().to_string();
    if target == "host" {
        if emit != "llvm" {
            eprintln!("error: `--arch host` only supports `--emit llvm`");
            return Err(ExitCode::from(2));
        }
        return host(&src, &name, opt, out);
    }
    let result = {
        let a = arch::validate(&target, ptx_version.as_deref()).map_err(|e| {
            eprintln!("error[P0402]: {e}");
            ExitCode::from(2)
        })?;
        let what = match emit.as_str() {
            "llvm" => nvptx::Emit::Llvm,
            "bc" => nvptx::Emit::Bc,
            _ => nvptx::Emit::Ptx,
        };
        crate::front(&src).and_then(|(m, _)| nvptx::emit_bytes(&m, &a, opt, what, &mut Default::default()))
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

/// `--arch host --emit llvm`: one module per kernel, as the JIT compiles them, written as each is
/// lowered (a module of hundreds of kernels never holds more than one kernel's IR).
fn host(src: &str, name: &str, opt: u8, out: Option<PathBuf>) -> Result<ExitCode, ExitCode> {
    use std::io::Write;
    let mut sink: Box<dyn Write> = match &out {
        Some(o) => Box::new(std::io::BufWriter::new(std::fs::File::create(o).map_err(|e| {
            eprintln!("error: cannot write {}: {e}", o.display());
            ExitCode::from(2)
        })?)),
        None => Box::new(std::io::stdout().lock()),
    };
    // A write error stops the lowering (no diagnostics come with it: it is reported below).
    let mut failed = None;
    let r = crate::front(src).and_then(|(m, _)| {
        crate::jit::host::host_ir_each(&m, opt > 0, &mut |text| {
            sink.write_all(text.as_bytes()).map_err(|e| {
                failed = Some(e);
                vec![]
            })
        })
    });
    if let (Err(d), None) = (&r, &failed) {
        print_diags(d, name, src);
        return Err(ExitCode::from(1));
    }
    if let Some(e) = failed.or_else(|| sink.flush().err()) {
        eprintln!("error: cannot write the IR: {e}");
        return Err(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
