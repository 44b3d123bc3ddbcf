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

/// (sm, PTX version that introduced the target), from the `.target` directive's notes in the PTX ISA
/// manuals (8.5 for sm_10 to sm_90a, later manuals for the newer targets).
pub const SM_MIN_PTX: &[(u32, (u32, u32))] = &[
    (10, (1, 0)),
    (11, (1, 0)),
    (12, (1, 2)),
    (13, (1, 2)),
    (20, (2, 0)),
    (21, (2, 0)),
    (30, (3, 0)),
    (32, (4, 0)),
    (35, (3, 1)),
    (37, (4, 1)),
    (50, (4, 0)),
    (52, (4, 1)),
    (53, (4, 2)),
    (60, (5, 0)),
    (61, (5, 0)),
    (62, (5, 0)),
    (70, (6, 0)),
    (72, (6, 1)),
    (75, (6, 3)),
    (80, (7, 0)),
    (86, (7, 1)),
    (87, (7, 4)),
    (88, (9, 0)),
    (89, (7, 8)),
    (90, (7, 8)),
    (100, (8, 6)),
    (101, (8, 6)),
    (103, (8, 8)),
    (110, (9, 0)),
    (120, (8, 7)),
    (121, (8, 8)),
];

/// The first PTX version with this target (`sm_90a` needs 8.0, the `f` family targets 8.8); `None` for
/// a target the manuals do not name.
pub fn min_ptx(sm: u32, suffix: Option<char>) -> Option<(u32, u32)> {
    let base = SM_MIN_PTX.iter().find(|(s, _)| *s == sm).map(|&(_, v)| v)?;
    Some(match (sm, suffix) {
        (90, Some('a')) => (8, 0),
        (_, Some('f')) => base.max((8, 8)),
        _ => base,
    })
}
