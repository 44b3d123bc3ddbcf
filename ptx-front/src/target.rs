//! The module header: `.version`, `.target` and `.address_size`, read into numbers.

use crate::ast::{Module, ModuleDirective};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub version: (u32, u32),
    /// The `sm_XX` number (90 for `sm_90a`); 0 when no `.target` is given.
    pub sm: u32,
    /// Architecture suffix: `a` or `f` for `sm_90a`/`sm_100f`.
    pub suffix: Option<char>,
    pub address_bits: u32,
    pub map_f64_to_f32: bool,
}

/// `sm_90a` → (90, Some('a')); `compute_75` also accepted.
pub fn parse_sm(s: &str) -> Option<(u32, Option<char>)> {
    let rest = s.strip_prefix("sm_").or_else(|| s.strip_prefix("compute_"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n = digits.parse().ok()?;
    match &rest[digits.len()..] {
        "" => Some((n, None)),
        "a" => Some((n, Some('a'))),
        "f" => Some((n, Some('f'))),
        _ => None,
    }
}

impl Target {
    pub fn of(m: &Module<'_>) -> Target {
        let mut t = Target {
            version: (0, 0),
            sm: 0,
            suffix: None,
            address_bits: 64,
            map_f64_to_f32: false,
        };
        for d in &m.directives {
            match d {
                ModuleDirective::Version { major, minor, .. } => t.version = (*major, *minor),
                ModuleDirective::Target { targets, .. } => {
                    for n in targets {
                        if let Some((sm, suf)) = parse_sm(n.text) {
                            t.sm = sm;
                            t.suffix = suf;
                        } else if n.text == "map_f64_to_f32" {
                            t.map_f64_to_f32 = true;
                        }
                    }
                }
                ModuleDirective::AddressSize { bits, .. } => t.address_bits = *bits,
            }
        }
        // Before PTX 2.3 there was no .address_size and addresses were 32-bit.
        if !m
            .directives
            .iter()
            .any(|d| matches!(d, ModuleDirective::AddressSize { .. }))
            && t.version < (2, 3)
        {
            t.address_bits = 32;
        }
        t
    }
}
