//! `ptx-jit explain`: explain a diagnostic code (P0201) or describe an instruction (add).

use super::*;

/// The arguments of `ptx-jit explain`.
#[derive(clap::Args)]
pub struct Explain {
    pub what: String,
}

pub fn explain(a: Explain) -> Result<ExitCode, ExitCode> {
    let Explain { what } = a;
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
