//! `cvt` between the narrow floats of PTX 8.6 and later and wider types: fp4 (`.e2m1x2`), fp6
//! (`.e2m3x2`, `.e3m2x2`), the exponent-only scale `.ue8m0x2`, and (from PTX 9.1/9.2) fp8 with
//! `.bf16x2`. Which conversions exist, with which modifiers and from which PTX version, as ptxas 13.5
//! accepts them; each needs an architecture-specific target (`sm_100a` or later).

/// The fp4 and fp6 pair types, which have no infinity or NaN.
pub const FP4_FP6: [&str; 3] = [".e2m1x2", ".e2m3x2", ".e3m2x2"];

/// The operand count of a narrow-float conversion: a pair made from two f32 values takes both.
pub fn narrow_cvt_operands(dst: &str, src: &str) -> usize {
    if src == ".f32" && dst.ends_with("x2") {
        3
    } else {
        2
    }
}

/// The lowest PTX version of a narrow-float conversion, or why the form does not exist; None when
/// the conversion is none of these (`cvt.f32.f16`, or fp8 with f32 and `.f16x2`, which are older).
pub fn narrow_cvt(
    dst: &str,
    src: &str,
    rnd: Option<&str>,
    sat: bool,
    relu: bool,
) -> Option<Result<(u32, u32), String>> {
    let f4f6 = |t: &str| FP4_FP6.contains(&t);
    let f8 = |t: &str| matches!(t, ".e4m3x2" | ".e5m2x2");
    let half2 = |t: &str| matches!(t, ".f16x2" | ".bf16x2");
    // (version, roundings, .satfinite required / allowed / refused, .relu allowed)
    let (ptx, rounds, satfinite, relu_ok): ((u32, u32), &[&str], Option<bool>, bool) = match (dst, src) {
        (d, ".f32") if f4f6(d) => ((8, 6), &[".rn"], Some(true), true),
        (d, s) if f4f6(d) && half2(s) => ((9, 1), &[".rn"], Some(true), true),
        (d, ".bf16x2") if f8(d) => ((9, 1), &[".rn"], Some(true), true),
        (".f16x2", s) if f4f6(s) => ((8, 6), &[".rn"], Some(false), true),
        (".bf16x2", s) if f4f6(s) || f8(s) => ((9, 2), &[".rn"], None, true),
        (".ue8m0x2", ".f32" | ".bf16x2") => ((8, 6), &[".rz", ".rp"], None, false),
        (".bf16x2", ".ue8m0x2") => ((8, 6), &[".rn"], Some(false), false),
        (d, s) if f4f6(d) || f4f6(s) || d == ".ue8m0x2" || s == ".ue8m0x2" => {
            return Some(Err(format!("there is no `cvt{d}{s}`")))
        }
        _ => return None,
    };
    let why = if !rnd.is_some_and(|r| rounds.contains(&r)) {
        Some(format!("`cvt{dst}{src}` rounds with {}", rounds.join(" or ")))
    } else if satfinite.is_some_and(|need| need != sat) {
        Some(if sat {
            format!("`cvt{dst}{src}` takes no `.satfinite`")
        } else {
            format!("`cvt{dst}{src}` needs `.satfinite`")
        })
    } else if relu && !relu_ok {
        Some(format!("`cvt{dst}{src}` takes no `.relu`"))
    } else {
        None
    };
    Some(why.map_or(Ok(ptx), Err))
}

/// Every narrow-float conversion that exists, as the modifiers written after `cvt` (rounding,
/// `.satfinite`, `.relu`, destination and source types), with the PTX version it needs: what `ptx-jit
/// coverage` counts.
pub fn narrow_cvt_forms() -> Vec<(Vec<&'static str>, (u32, u32))> {
    const TYPES: [&str; 9] = [
        ".e2m1x2", ".e2m3x2", ".e3m2x2", ".ue8m0x2", ".e4m3x2", ".e5m2x2", ".f32", ".f16x2", ".bf16x2",
    ];
    let mut out = vec![];
    for dst in TYPES {
        for src in TYPES {
            for rnd in [".rn", ".rz", ".rp"] {
                for (sat, relu) in [(false, false), (true, false), (false, true), (true, true)] {
                    if let Some(Ok(ptx)) = narrow_cvt(dst, src, Some(rnd), sat, relu) {
                        let mut mods = vec![rnd];
                        mods.extend(sat.then_some(".satfinite"));
                        mods.extend(relu.then_some(".relu"));
                        mods.extend([dst, src]);
                        out.push((mods, ptx));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_versions() {
        assert_eq!(narrow_cvt(".e2m1x2", ".f32", Some(".rn"), true, true), Some(Ok((8, 6))));
        assert_eq!(
            narrow_cvt(".e3m2x2", ".bf16x2", Some(".rn"), true, false),
            Some(Ok((9, 1)))
        );
        assert_eq!(
            narrow_cvt(".bf16x2", ".e4m3x2", Some(".rn"), false, false),
            Some(Ok((9, 2)))
        );
        assert_eq!(
            narrow_cvt(".ue8m0x2", ".f32", Some(".rp"), true, false),
            Some(Ok((8, 6)))
        );
        assert_eq!(
            narrow_cvt(".ue8m0x2", ".f32", Some(".rz"), false, false),
            Some(Ok((8, 6)))
        );
        assert!(narrow_cvt(".e2m1x2", ".f32", Some(".rz"), true, false)
            .unwrap()
            .is_err());
        assert!(narrow_cvt(".e2m1x2", ".f32", Some(".rn"), false, false)
            .unwrap()
            .is_err());
        assert!(narrow_cvt(".f16x2", ".e2m3x2", Some(".rn"), true, false)
            .unwrap()
            .is_err());
        assert!(narrow_cvt(".ue8m0x2", ".f16x2", Some(".rz"), false, false)
            .unwrap()
            .is_err());
        assert!(narrow_cvt(".ue8m0x2", ".f32", Some(".rz"), false, true)
            .unwrap()
            .is_err());
        assert!(narrow_cvt(".f32", ".e2m1x2", Some(".rn"), false, false)
            .unwrap()
            .is_err());
        assert_eq!(narrow_cvt(".e4m3x2", ".f32", Some(".rn"), true, false), None);
        assert_eq!(narrow_cvt(".f32", ".f16", None, false, false), None);
        // fp4/fp6 from f32 (6, with and without .relu), from f16x2 and bf16x2 (12); fp8 from bf16x2
        // (4); to f16x2 (6) and bf16x2 (20: .satfinite too); scales from f32 and bf16x2 (8) and back (1).
        assert_eq!(narrow_cvt_forms().len(), 6 + 12 + 4 + 6 + 20 + 8 + 1);
    }
}
