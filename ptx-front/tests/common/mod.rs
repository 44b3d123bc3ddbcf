//! What the property tests over real PTX share.

use std::path::{Path, PathBuf};

/// Every `.ptx` file under `dir`, recursively, sorted.
pub fn ptx_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .flat_map(|p| if p.is_dir() { ptx_files_under(&p) } else { vec![p] })
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}
