//! `ptx-jit fmt`: print PTX in canonical form (one statement per line, exact float literals).

use super::*;

/// The arguments of `ptx-jit fmt`.
#[derive(clap::Args)]
pub struct Fmt {
    pub file: PathBuf,
    #[arg(long)]
    pub fragment: bool,
}

pub fn fmt(a: Fmt) -> Result<ExitCode, ExitCode> {
    let Fmt { file, fragment } = a;
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
