//! Which (sm_XX, PTX version) pairs LLVM 22's NVPTX backend accepts. LLVM aborts the process on an
//! impossible pair, so every request is validated here first.

use ptx_front::target::parse_sm;

/// The processors LLVM 22's NVPTX backend knows; their minimum PTX versions come from the ISA's target
/// table (`ptx_front::target::min_ptx`), never below the 3.2 LLVM emits at least.
const LLVM_SMS: &[u32] = &[
    20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121,
];

/// PTX versions LLVM 22 can emit, ×10.
pub const PTX_VERSIONS: &[u32] = &[
    32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74, 75, 76, 77, 78, 80, 81, 82, 83, 84, 85, 86, 87,
    88, 90,
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arch {
    pub sm: u32,
    pub suffix: Option<char>,
    /// PTX version ×10 (e.g. 78 for 7.8); `None` lets LLVM choose the minimum for the target.
    pub ptx: Option<u32>,
}

impl Arch {
    pub fn cpu(&self) -> String {
        format!("sm_{}{}", self.sm, self.suffix.map(String::from).unwrap_or_default())
    }
    pub fn features(&self) -> String {
        self.ptx.map(|p| format!("+ptx{p}")).unwrap_or_default()
    }
    pub fn min_ptx(&self) -> u32 {
        let (major, minor) = ptx_front::target::min_ptx(self.sm, self.suffix).unwrap_or((3, 2));
        (major * 10 + minor).max(32)
    }
}

/// Parses and validates `sm_XX[a|f]` with an optional `X.Y` PTX version.
pub fn validate(arch: &str, ptx: Option<&str>) -> Result<Arch, String> {
    let (sm, suffix) = parse_sm(arch).ok_or_else(|| format!("`{arch}` is not a target name (expected e.g. sm_90)"))?;
    if !LLVM_SMS.contains(&sm) {
        let known: Vec<String> = LLVM_SMS.iter().map(|s| format!("sm_{s}")).collect();
        return Err(format!(
            "LLVM's NVPTX backend does not know `{arch}`; known targets: {}",
            known.join(", ")
        ));
    }
    let suffix_ok = match suffix {
        None => true,
        Some('a') => sm == 90 || sm >= 100,
        Some('f') => sm >= 100,
        _ => false,
    };
    if !suffix_ok {
        return Err(format!(
            "`{arch}`: the `{}` variant does not exist for sm_{sm}",
            suffix.unwrap_or(' ')
        ));
    }
    let mut a = Arch { sm, suffix, ptx: None };
    if let Some(v) = ptx {
        let (maj, min) = v
            .split_once('.')
            .ok_or_else(|| format!("`{v}` is not a PTX version (expected e.g. 7.8)"))?;
        let n = maj
            .parse::<u32>()
            .ok()
            .zip(min.parse::<u32>().ok())
            .filter(|&(_, m)| m < 10)
            .map(|(a, b)| a * 10 + b);
        let n = n.ok_or_else(|| format!("`{v}` is not a PTX version (expected e.g. 7.8)"))?;
        if !PTX_VERSIONS.contains(&n) {
            return Err(format!("LLVM 22 cannot emit PTX {v}; it supports 3.2 to 9.0"));
        }
        if n < a.min_ptx() {
            return Err(format!(
                "{} needs PTX {}.{} or later, but PTX {v} was requested",
                a.cpu(),
                a.min_ptx() / 10,
                a.min_ptx() % 10
            ));
        }
        a.ptx = Some(n);
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_pairs() {
        assert_eq!(validate("sm_90", None).unwrap().cpu(), "sm_90");
        assert_eq!(validate("sm_80", Some("7.0")).unwrap().features(), "+ptx70");
        assert_eq!(validate("sm_90a", Some("8.0")).unwrap().cpu(), "sm_90a");
    }

    #[test]
    fn impossible_pairs_are_errors() {
        assert!(validate("sm_90", Some("7.0")).unwrap_err().contains("needs PTX 7.8"));
        assert!(validate("sm_91", None).unwrap_err().contains("does not know"));
        assert!(validate("sm_80a", None).is_err());
        assert!(validate("sm_80", Some("9.5")).unwrap_err().contains("3.2 to 9.0"));
        assert!(validate("gfx90a", None).is_err());
    }
}
