//! `ptx-jit run`: run a kernel on the CPU and print its buffers afterwards.

use super::*;

/// A kernel and its launch, as `run` and `bench kernel` take them.
#[derive(clap::Args)]
pub struct KernelArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// X[,Y[,Z]]
    #[arg(long, default_value = "1")]
    pub grid: String,
    /// X[,Y[,Z]]
    #[arg(long, default_value = "1")]
    pub block: String,
    /// Dynamic shared memory in bytes.
    #[arg(long, default_value_t = 0)]
    pub shared: u64,
    /// Kernel arguments in order: `u32:7`, `f32[1,2,3]`, `f32*1024=1.5`, `u32*64=iota`.
    #[arg(long = "arg", allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// [`KernelArgs`] read: the launch's shape and its arguments.
pub struct Request {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<Arg>,
}

impl KernelArgs {
    pub fn request(&self) -> Result<Request, String> {
        Ok(Request {
            grid: dims(&self.grid)?,
            block: dims(&self.block)?,
            args: self.args.iter().map(|a| Arg::parse(a)).collect::<Result<_, _>>()?,
        })
    }

    /// The kernel's index in `module`, or an error that lists the kernels there are.
    pub fn find(&self, module: &crate::HostModule) -> Result<usize, String> {
        module.find(&self.kernel).ok_or_else(|| {
            let names: Vec<_> = module.kernel_names().collect();
            format!(
                "no kernel `{}` in {} (kernels: {})",
                self.kernel,
                self.file.display(),
                names.join(", ")
            )
        })
    }
}

/// A launch's memory: the buffers the arguments name (registered as device memory) and the
/// parameter buffer that points at them. The buffers stay where they are while this lives.
pub struct Buffers {
    pub bufs: Vec<args::DeviceBuffer>,
    pub params: Vec<u8>,
}

impl Buffers {
    pub fn new(k: &crate::KernelInfo, args: &[Arg]) -> Result<Buffers, String> {
        let mut bufs: Vec<args::DeviceBuffer> = args
            .iter()
            .map(|a| args::DeviceBuffer::from_bytes(if let Arg::Buffer(_, b) = a { b } else { &[] }))
            .collect();
        let params = args::param_buffer(k, args, &mut bufs)?;
        for b in &bufs {
            crate::memory_map::register(b.as_ptr() as u64, b.len() as u64);
        }
        Ok(Buffers { bufs, params })
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        for b in &self.bufs {
            crate::memory_map::unregister(b.as_ptr() as u64);
        }
    }
}

/// The arguments of `ptx-jit run`.
#[derive(clap::Args)]
pub struct Run {
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// Bounds-check every global, shared and local access (also PTXJIT_CHECKED=1); an
    /// out-of-bounds access fails the launch with the thread, block, PTX line and address.
    #[arg(long)]
    pub checked: bool,
    /// Run under sanitizers: memcheck, racecheck (racecheck=all), initcheck, synccheck, or all,
    /// comma-separated (also PTXJIT_SANITIZE). Exit status 1 if any finds something.
    #[arg(long)]
    pub sanitize: Option<String>,
}

pub fn run(a: Run) -> Result<ExitCode, ExitCode> {
    let Run {
        kernel: what,
        checked,
        sanitize,
    } = a;
    let (file, kernel) = (&what.file, &what.kernel);
    let src = read(file)?;
    let usage = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let tools = match &sanitize {
        Some(t) => crate::runtime::sanitize::Tools::parse(t).map_err(usage)?,
        None => crate::runtime::sanitize::Tools::from_env(),
    };
    let Request {
        grid,
        block,
        args: parsed,
    } = what.request().map_err(usage)?;
    let t0 = std::time::Instant::now();
    let checked = checked || tools.any() || crate::checked_from_env();
    let options = crate::Options {
        checked,
        ..crate::jit::host::options()
    };
    let failed = |d: &[crate::Diagnostic]| {
        print_diags(d, &file.display().to_string(), &src);
        ExitCode::from(1)
    };
    // Lazy unless `CUDA_MODULE_LOADING=EAGER`, as a driver loads: a large module costs the kernel run.
    let module = crate::load_as(&src, options, crate::Loading::from_env()).map_err(|d| failed(&d))?;
    let k = module.prepare(what.find(&module).map_err(usage)?).map_err(failed)?;
    let buffers = Buffers::new(&k.info, &parsed).map_err(usage)?;
    // The kernel compiles on first use; count that as compilation, not as the run.
    k.entry().map_err(|e| usage(e.to_string()))?;
    let compile = t0.elapsed();
    let t = std::time::Instant::now();
    let launch = crate::Launch {
        sanitize: tools,
        ..crate::Launch::new(grid, block, what.shared, &buffers.params)
    };
    crate::launch(k, &launch).map_err(|e| {
        eprintln!("error: {e}");
        // A bad launch request is a usage error; a kernel that fails is the program's.
        match e {
            crate::LaunchError::InvalidConfig(_) | crate::LaunchError::InvalidArgs(_) => ExitCode::from(2),
            _ => ExitCode::from(1),
        }
    })?;
    let dt = t.elapsed();
    for (i, (a, b)) in parsed.iter().zip(&buffers.bufs).enumerate() {
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
    if crate::runtime::sanitize::total() > 0 {
        eprintln!("sanitizer: {} finding(s)", crate::runtime::sanitize::total());
        return Err(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
