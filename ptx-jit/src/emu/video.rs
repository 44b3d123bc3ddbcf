//! The scalar video instructions (`vadd`, `vsub`, `vabsdiff`, `vmin`, `vmax`, `vshl`, `vshr`, `vmad`,
//! `vset`), as the PTX ISA's pseudocode states them (9.7.18.1): selected bytes or halves extended to 33
//! bits, the operation in wider arithmetic, optional clamping, then a secondary operation or a merge
//! into the third operand.

use ptx_llvm::builtin::*;

/// The selected part of `x`, sign- or zero-extended (`partSelectSignExtend`).
fn part(x: u32, signed: bool, sel: u32) -> i128 {
    let (v, bits) = match sel {
        1..=4 => (x >> (8 * (sel - 1)) & 0xff, 8),
        5 | 6 => (x >> (16 * (sel - 5)) & 0xffff, 16),
        _ => (x, 32),
    };
    if signed {
        ((v as i128) << (128 - bits)) >> (128 - bits)
    } else {
        v as i128
    }
}

/// `optSaturate`: clamps to the destination's range, that of the merged part when there is one.
fn saturate(t: i128, signed: bool, dsel: u32) -> i128 {
    let bits = match dsel {
        1..=4 => 8,
        5 | 6 => 16,
        _ => 32,
    };
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    t.clamp(lo, hi)
}

/// `optSecondaryOp` or `optMerge` with the third operand.
fn finish(t: i128, c: i128, v: Video) -> u32 {
    let d = match v.op2 {
        1 => t + c,
        2 => t.min(c),
        3 => t.max(c),
        _ => t,
    };
    let (t, c) = (t as u32, c as u32);
    match v.dsel {
        1..=4 => {
            let at = 8 * (v.dsel - 1);
            (t & 0xff) << at | c & !(0xff << at)
        }
        5 | 6 => {
            let at = 16 * (v.dsel - 5);
            (t & 0xffff) << at | c & !(0xffff << at)
        }
        _ => d as u32,
    }
}

/// Called by JIT code (`ptx_llvm::builtin::VIDEO`).
pub extern "C" fn ptxjit_video(code: u32, a: u64, b: u64, c: u64) -> u64 {
    let v = Video::unpack(code);
    let (a, b, c) = (a as u32, b as u32, c as u32);
    let ta = part(a, v.a_signed, v.asel);
    let tb = part(b, v.b_signed && !matches!(v.op, VIDEO_SHL | VIDEO_SHR), v.bsel);
    if v.op == VIDEO_MAD {
        return mad(ta, tb, c, v) as u32 as u64;
    }
    let t = match v.op {
        VIDEO_ADD => ta + tb,
        VIDEO_SUB => ta - tb,
        VIDEO_ABSDIFF => (ta - tb).abs(),
        VIDEO_MIN => ta.min(tb),
        VIDEO_MAX => ta.max(tb),
        VIDEO_SHL | VIDEO_SHR => {
            let n = if v.wrap { tb & 31 } else { tb.min(32) };
            if v.op == VIDEO_SHL {
                ta << n
            } else {
                ta >> n
            }
        }
        _ => {
            let holds = match v.cmp {
                0 => ta == tb,
                1 => ta != tb,
                2 => ta < tb,
                3 => ta <= tb,
                4 => ta > tb,
                _ => ta >= tb,
            };
            // vset's result, and so its c and destination, are unsigned.
            return finish(holds as i128, c as i128, v) as u64;
        }
    };
    let t = if v.sat { saturate(t, v.d_signed, v.dsel) } else { t };
    let c = if v.d_signed { c as i32 as i128 } else { c as i128 };
    finish(t, c, v) as u64
}

/// `vmad`: (±a·b ± c) with `.po`, optionally scaled and clamped, in 128-bit arithmetic.
fn mad(ta: i128, tb: i128, c: u32, v: Video) -> i128 {
    let (na, nb, nc) = (v.neg & 1 != 0, v.neg & 2 != 0, v.neg & 4 != 0);
    let signed = v.a_signed || v.b_signed || (na ^ nb) || nc;
    let mut t = ta.wrapping_mul(tb);
    let mut c = c;
    let lsb = if v.po {
        1
    } else if na ^ nb {
        t = !t;
        1
    } else if nc {
        c = !c;
        1
    } else {
        0
    };
    let c = if signed { c as i32 as i128 } else { c as i128 };
    let t = t.wrapping_add(c).wrapping_add(lsb);
    let r = match v.scale {
        1 => (t >> 7) as i64 as i128,
        2 => (t >> 15) as i64 as i128,
        _ => t,
    };
    match (v.sat, signed) {
        (false, _) => r,
        (true, true) => r.clamp(i32::MIN as i128, i32::MAX as i128),
        (true, false) => r.clamp(0, u32::MAX as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: Video, a: u32, b: u32, c: u32) -> u32 {
        ptxjit_video(v.pack(), a as u64, b as u64, c as u64) as u32
    }

    #[test]
    fn shifts_clamp_or_wrap_then_add() {
        // vshr.u32.u32.u32.clamp.add: (a >> 16) + c, and a >> 32 is 0 when clamped.
        let v = Video {
            op: VIDEO_SHR,
            op2: 1,
            ..Default::default()
        };
        assert_eq!(run(v, 0x8e2d_a590, 16, 0x248a_9f70), 0x248b_2d9d);
        assert_eq!(run(v, 0x8e2d_a590, 32, 0x248a_9f70), 0x248a_9f70);
        assert_eq!(run(v, 0x8e2d_a590, 40, 0), 0);
        // .wrap takes the amount mod 32; a signed a shifts in its sign.
        let w = Video {
            op: VIDEO_SHR,
            wrap: true,
            a_signed: true,
            ..Default::default()
        };
        assert_eq!(run(w, 0x8000_0000, 33, 0), 0xc000_0000);
        // vshl.u32.u32.u32.sat.clamp saturates what spills past 32 bits.
        let s = Video {
            op: VIDEO_SHL,
            sat: true,
            ..Default::default()
        };
        assert_eq!(run(s, 0x8000_0001, 1, 0), 0xffff_ffff);
    }

    #[test]
    fn parts_saturation_and_merge() {
        // vadd.s32.u32.s32.sat d.h1, a.b2, b.h0, c: 0x2d + (s16)0xa590 = -23107, inside s16; merged into
        // c's upper half.
        let v = Video {
            op: VIDEO_ADD,
            d_signed: true,
            b_signed: true,
            sat: true,
            asel: 3,
            bsel: 5,
            dsel: 6,
            ..Default::default()
        };
        assert_eq!(
            run(v, 0x8e2d_a590, 0x0000_a590, 0x1234_5678),
            ((0x2d - 0x5a70i32) as u32 & 0xffff) << 16 | 0x5678
        );
        // Saturated to the merged byte's range: 200 + 100 clamps to 255 (unsigned) in byte 1.
        let b = Video {
            op: VIDEO_ADD,
            sat: true,
            asel: 1,
            bsel: 1,
            dsel: 2,
            ..Default::default()
        };
        assert_eq!(run(b, 200, 100, 0xaaaa_aaaa), 0xaaaa_ffaa);
        // vabsdiff and vmin with a secondary max against c.
        let d = Video {
            op: VIDEO_ABSDIFF,
            a_signed: true,
            b_signed: true,
            ..Default::default()
        };
        assert_eq!(run(d, -5i32 as u32, 7, 0), 12);
        let m = Video {
            op: VIDEO_MIN,
            d_signed: true,
            a_signed: true,
            b_signed: true,
            op2: 3,
            ..Default::default()
        };
        assert_eq!(run(m, -5i32 as u32, 7, -9i32 as u32), -5i32 as u32);
    }

    #[test]
    fn vmad_negation_scale_and_clamp() {
        // vmad.s32.s32.s32 d, -a, b, c = c - a*b.
        let v = Video {
            op: VIDEO_MAD,
            d_signed: true,
            a_signed: true,
            b_signed: true,
            neg: 1,
            ..Default::default()
        };
        assert_eq!(run(v, 6, 7, 100), 58);
        // .po adds one; .shr7 scales the sum.
        let p = Video {
            op: VIDEO_MAD,
            po: true,
            scale: 1,
            ..Default::default()
        };
        assert_eq!(run(p, 128, 2, 127), (128 * 2 + 127 + 1) >> 7);
        // .sat clamps an unsigned product that does not fit.
        let s = Video {
            op: VIDEO_MAD,
            sat: true,
            ..Default::default()
        };
        assert_eq!(run(s, 0x10000, 0x10000, 5), u32::MAX);
    }

    #[test]
    fn vset_compares_then_adds() {
        let v = Video {
            op: VIDEO_SET,
            a_signed: true,
            cmp: 2,
            op2: 1,
            ..Default::default()
        };
        assert_eq!(run(v, -1i32 as u32, 0, 41), 42);
        let u = Video {
            op: VIDEO_SET,
            cmp: 2,
            ..Default::default()
        };
        assert_eq!(run(u, -1i32 as u32, 0, 0), 0);
    }
}
