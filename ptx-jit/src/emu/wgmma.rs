//! `wgmma.mma_async` (9.7.16) emulated per warp. The lowering makes it a warp collective (see
//! ptx-llvm's `lower/warpgroup.rs`): each lane's buffer holds a [`WgmmaHead`], then its A registers
//! (when A is in registers) and its D registers; each lane computes its own new D from the warp's
//! buffers and from shared memory.
//!
//! Layouts. Warp r of a warpgroup holds rows 16r..16r+15 of A (in registers) and of D, each lane the
//! elements `mma`'s m16n8k* fragments give it (`emu::mma::a_position`, `d_position`), D being N/8
//! such 16x8 tiles side by side. A matrix in shared memory is described by a 64-bit descriptor
//! (9.7.16.5.1.2.7) and made of core matrices: 8 rows of 16 bytes. The manual draws their
//! arrangement; in words (the canonical layouts CUTLASS's CuTe documents for these descriptors),
//! with "rows" along M or N and 16-byte "chunks" along K:
//! - K-major (the default; A is M x K row-major, B is K x N column-major), K's 32 bytes are two
//!   chunks. Without swizzling row `mn` of core matrix (mn/8, c) is 16 bytes at
//!   `(mn%8)*16 + (mn/8)*SBO + c*LBO`; with a 32/64/128-byte swizzle a row is that many bytes,
//!   `(mn%8)*span + (mn/8)*SBO + c*16` (the leading offset is not used).
//! - M/N-major (imm-trans 1, 16-bit types only): eight elements along M/N per chunk, K's rows 16
//!   bytes apart. Without swizzling `(mn/8)*SBO + (k%8)*16 + (k/8)*LBO`; with a swizzle of span S
//!   (W = S/16 chunks) `((mn/8)%W)*16 + (mn/8W)*LBO + (k%8)*S + (k/8)*SBO`.
//!
//! The swizzle then XORs the 16-byte chunk (bits 4..) of the address with bits 7.. of it, less the
//! descriptor's base offset: the pattern TMA writes (`runtime::tensor`), so a tile TMA loaded with
//! the same swizzle reads back in order. Arithmetic is `mma`'s (`emu::mma::Arith`), each element of D
//! computed exactly and rounded once; imm-scale -1 negates the products.

use crate::emu::mma::{a_position, d_position, per_reg, put_elem, Arith};
use ptx_front::isa::WgmmaForm;
use ptx_llvm::abi::{Env, WgmmaHead};

/// One matrix in shared memory, as its descriptor describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// Start address, leading and stride dimension byte offsets, in bytes.
    pub start: u64,
    pub lbo: u64,
    pub sbo: u64,
    /// The swizzle pattern's start, in 128-byte rows modulo 8.
    pub base: u64,
    /// Bits of the swizzle's XOR: 0 (none), 1, 2, 3 for the 32-, 64- and 128-byte swizzles (as a
    /// tensor map's swizzle codes count them).
    pub swizzle: u32,
}

impl Descriptor {
    pub fn decode(bits: u64) -> Descriptor {
        let field = |at: u32| (bits >> at & 0x3fff) << 4;
        Descriptor {
            start: field(0),
            lbo: field(16),
            sbo: field(32),
            base: bits >> 49 & 7,
            // The descriptor's codes: 1 is 128 bytes, 2 is 64, 3 is 32.
            swizzle: match bits >> 62 {
                0 => 0,
                code => 4 - code as u32,
            },
        }
    }

    /// The shared-window offset of the byte holding element (`mn`, `k`) of a matrix of `bits`-bit
    /// elements: `mn` is A's row or B's column; `major` says the matrix is M/N-major (transposed).
    pub fn offset(&self, mn: u64, k: u64, bits: u64, major: bool) -> u64 {
        let span = 16u64 << self.swizzle;
        let chunks = span / 16;
        let local = if !major {
            let byte = k * bits / 8;
            let (c, within) = (byte / 16, byte % 16);
            if self.swizzle == 0 {
                (mn % 8) * 16 + (mn / 8) * self.sbo + c * self.lbo + within
            } else {
                (mn % 8) * span + (mn / 8) * self.sbo + c * 16 + within
            }
        } else {
            let per = 128 / bits;
            let (group, within) = (mn / per, (mn % per) * bits / 8);
            if self.swizzle == 0 {
                group * self.sbo + (k % 8) * 16 + (k / 8) * self.lbo + within
            } else {
                (group % chunks) * 16 + (group / chunks) * self.lbo + (k % 8) * span + (k / 8) * self.sbo + within
            }
        };
        let addr = self.start + local;
        if self.swizzle == 0 {
            return addr;
        }
        let mask = (1u64 << self.swizzle) - 1;
        addr ^ (((addr >> 7).wrapping_sub(self.base) & mask) << 4)
    }
}

/// What went wrong in a warp's `wgmma`: the launch's fault.
type Failure = &'static str;

/// Element `k` of row `mn` of a matrix in shared memory, raw, or why it cannot be read.
///
/// # Safety
/// `shared` is the CTA's shared window of `window` bytes.
unsafe fn element(
    shared: *const u8,
    window: u64,
    d: &Descriptor,
    mn: u64,
    k: u64,
    bits: u64,
    major: bool,
) -> Result<u64, Failure> {
    let at = d.offset(mn, k, bits, major);
    let bytes = bits.div_ceil(8);
    if at + bytes > window {
        return Err(OUTSIDE);
    }
    let mut v = 0u64;
    // SAFETY: inside the window, checked above.
    unsafe { std::ptr::copy_nonoverlapping(shared.add(at as usize), &mut v as *mut u64 as *mut u8, bytes as usize) };
    Ok(if bits == 1 { v >> (k % 8) & 1 } else { v })
}

/// Lane `lane`'s new D words.
///
/// # Safety
/// `bufs` are the 32 lanes' buffers, laid out as `collective::Kind::Wgmma` describes, each holding
/// `form`'s registers; `shared` is the CTA's shared window of `head.window` bytes.
unsafe fn lane_d(
    form: &WgmmaForm,
    bufs: &[*const u32; 32],
    lane: usize,
    shared: *const u8,
) -> Result<Vec<u32>, Failure> {
    let head = unsafe { std::ptr::read(bufs[lane] as *const WgmmaHead) };
    let (flag, k) = (|f: u64| head.flags & f != 0, form.k);
    let a_words = if flag(WgmmaHead::A_REGS) { WgmmaForm::A_REGS } else { 0 };
    let regs = |l: usize| unsafe { bufs[l].add(2 * WgmmaHead::WORDS as usize) };
    let d_words = unsafe { std::slice::from_raw_parts(regs(lane).add(a_words), form.d_regs()) };
    let (a_bits, b_bits) = (form.a.bits() as u64, form.b.bits() as u64);
    let (a_desc, b_desc) = (Descriptor::decode(head.a_desc), Descriptor::decode(head.b_desc));
    let rank = head.rank as usize & 3;
    // This lane's two rows of A, g and g + 8 of its warp's 16.
    let g = lane >> 2;
    let row = |r: usize| -> Result<Vec<u64>, Failure> {
        if flag(WgmmaHead::A_REGS) {
            // Whichever lane holds (r, kk) in its A registers.
            let e = per_reg(form.a);
            let mut out = vec![0; k];
            for l in 0..32 {
                for i in 0..16 * k / 32 {
                    let (rr, kk) = a_position(e, l, i);
                    if rr == r {
                        let word = unsafe { *regs(l).add(i * a_bits as usize / 32) };
                        out[kk] = (word >> (i * a_bits as usize % 32)) as u64 & ((1u64 << a_bits) - 1);
                    }
                }
            }
            Ok(out)
        } else {
            let mn = (16 * rank + r) as u64;
            (0..k as u64)
                .map(|kk| unsafe { element(shared, head.window, &a_desc, mn, kk, a_bits, flag(WgmmaHead::TRANS_A)) })
                .collect()
        }
    };
    let rows = [row(g)?, row(g + 8)?];
    let arith = Arith {
        d: form.d,
        a: form.a,
        b: form.b,
        c: form.d,
        satfinite: form.satfinite,
        bit_op: form.bit_op,
        round: 0,
    };
    let negate = flag(WgmmaHead::NEGATE_A) != flag(WgmmaHead::NEGATE_B);
    let mut out = d_words.to_vec();
    let mut column = vec![0u64; k];
    let mut column_at = usize::MAX;
    for i in 0..form.n / 2 {
        let (r, c) = d_position(lane, i);
        if c != column_at {
            for (kk, v) in column.iter_mut().enumerate() {
                *v = unsafe {
                    element(
                        shared,
                        head.window,
                        &b_desc,
                        c as u64,
                        kk as u64,
                        b_bits,
                        flag(WgmmaHead::TRANS_B),
                    )?
                };
            }
            column_at = c;
        }
        let a = &rows[r / 8];
        let old = crate::emu::mma::get_elem(d_words, form.d.bits(), i);
        let acc = flag(WgmmaHead::SCALE_D).then_some(old);
        let v = arith.element(acc, k, negate, |kk| a[kk], |kk| column[kk]);
        put_elem(&mut out, form.d.bits(), i, v);
    }
    Ok(out)
}

/// Why a warp's `wgmma` ended its launch, with the thread's environment and the instruction's
/// place, for the runtime to record; `address`: a matrix outside shared memory (an illegal
/// address), else an instruction the warp may not run.
pub struct Failed {
    pub env: *const Env,
    pub site: u32,
    pub why: &'static str,
    pub address: bool,
}

const OUTSIDE: Failure = "wgmma.mma_async read a matrix outside the CTA's shared memory (check its descriptor)";

/// `collective::Kind::Wgmma` for lane `lane` of a warp whose lanes `members` arrived: computes its D and
/// writes it over the old.
///
/// # Safety
/// `bufs` points at 32 lane buffer addresses laid out as `ptx_llvm::collective::Kind::Wgmma` describes.
pub unsafe fn lane(bufs: *const u64, lane: u32, members: u32) -> Result<(), Failed> {
    let head = unsafe { std::ptr::read(*bufs.add(lane as usize) as *const WgmmaHead) };
    let fail = |why| Failed {
        env: head.env as *const Env,
        site: head.site as u32,
        why,
        address: why == OUTSIDE,
    };
    // The lanes' buffers are read whole: a lane that has exited left none.
    if members != u32::MAX {
        return Err(fail(
            "ran wgmma.mma_async in a warp whose lanes have not all reached it (it needs all 32)",
        ));
    }
    let lane = lane as usize;
    let bufs: [*const u32; 32] = std::array::from_fn(|l| unsafe { *bufs.add(l) as *const u32 });
    let form = WgmmaForm::from_code(head.form);
    // SAFETY: generated code passes its thread's environment.
    let shared = unsafe { (*(head.env as *const Env)).shared } as *const u8;
    let result = match form {
        Some(form) => unsafe { lane_d(&form, &bufs, lane, shared) },
        None => Err("ran a wgmma.mma_async form the emulation does not know"),
    };
    let d = result.map_err(fail)?;
    let a_words = if head.flags & WgmmaHead::A_REGS != 0 {
        WgmmaForm::A_REGS
    } else {
        0
    };
    let at = 2 * WgmmaHead::WORDS as usize + a_words;
    unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), (bufs[lane] as *mut u32).add(at), d.len()) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptx_front::isa::wgmma_form;

    /// Runs one `wgmma` for a whole warpgroup, from logical matrices of raw elements: A (64 x K,
    /// by row) in registers when `a_desc` is None, else in shared memory where its descriptor puts
    /// each element (as is B, K x N by row, at `b_desc`); `d` holds each thread's D words. Returns the
    /// new D words, or the first failure.
    fn warpgroup(
        text: &str,
        flags: u64,
        a: &[Vec<u64>],
        a_desc: Option<u64>,
        b: &[Vec<u64>],
        b_desc: u64,
        d: &[Vec<u32>],
    ) -> Result<Vec<Vec<u32>>, Failure> {
        let mods: Vec<String> = text.split('.').map(|m| format!(".{m}")).collect();
        let form = wgmma_form(&mods.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        let (a_bits, b_bits) = (form.a.bits() as u64, form.b.bits() as u64);
        let mut shared = vec![0u8; 32768];
        let mut place = |desc: u64, mn: usize, k: usize, bits: u64, major: bool, v: u64| {
            let at = Descriptor::decode(desc).offset(mn as u64, k as u64, bits, major) as usize;
            if bits == 1 {
                shared[at] |= (v as u8 & 1) << (k % 8);
            } else {
                shared[at..at + bits as usize / 8].copy_from_slice(&v.to_le_bytes()[..bits as usize / 8]);
            }
        };
        for (k, row) in b.iter().enumerate() {
            for (n, &v) in row.iter().enumerate() {
                place(b_desc, n, k, b_bits, flags & WgmmaHead::TRANS_B != 0, v);
            }
        }
        if let Some(desc) = a_desc {
            for (m, row) in a.iter().enumerate() {
                for (k, &v) in row.iter().enumerate() {
                    place(desc, m, k, a_bits, flags & WgmmaHead::TRANS_A != 0, v);
                }
            }
        }
        let a_words = if a_desc.is_none() { WgmmaForm::A_REGS } else { 0 };
        let flags = flags | if a_desc.is_none() { WgmmaHead::A_REGS } else { 0 };
        let mut out = vec![];
        for rank in 0..4 {
            let mut bufs: Vec<Vec<u32>> = (0..32)
                .map(|l| {
                    let head = [
                        form.code(),
                        0,
                        a_desc.unwrap_or(0),
                        b_desc,
                        shared.len() as u64,
                        flags,
                        rank,
                        0,
                    ];
                    let mut w: Vec<u32> = head.iter().flat_map(|&x| [x as u32, (x >> 32) as u32]).collect();
                    let mut regs = vec![0u32; a_words];
                    if a_desc.is_none() {
                        for i in 0..16 * form.k / 32 {
                            let (r, kk) = a_position(per_reg(form.a), l, i);
                            put_elem(&mut regs, a_bits as usize, i, a[16 * rank as usize + r][kk]);
                        }
                    }
                    w.extend(regs);
                    w.extend(&d[32 * rank as usize + l]);
                    w
                })
                .collect();
            let ptrs: [*const u32; 32] = std::array::from_fn(|l| bufs[l].as_mut_ptr() as *const u32);
            for l in 0..32 {
                out.push(unsafe { lane_d(&form, &ptrs, l, shared.as_ptr()) }?);
            }
        }
        Ok(out)
    }

    /// Element `i` of thread `t`'s D: its row and column.
    fn d_at(t: usize, i: usize) -> (usize, usize) {
        let (r, c) = d_position(t % 32, i);
        (16 * (t / 32) + r, c)
    }

    #[test]
    fn single_bits_from_registers_accumulate() {
        // m64n8k256.b1: A in registers, B K-major without swizzle (core matrices 128 bytes apart
        // along N, the second 16-byte chunk of K 128 bytes on).
        let a: Vec<Vec<u64>> = (0..64)
            .map(|m| (0..256).map(|k| ((m * 7 + k * 3) % 5 == 0) as u64).collect())
            .collect();
        let b: Vec<Vec<u64>> = (0..256)
            .map(|k| (0..8).map(|n| ((n * 5 + k) % 3 != 0) as u64).collect())
            .collect();
        let b_desc = (1024 >> 4) | (128 >> 4) << 16 | (256u64 >> 4) << 32;
        let d: Vec<Vec<u32>> = (0..128).map(|t| vec![t as u32; 4]).collect();
        let text = "mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc";
        let out = warpgroup(text, WgmmaHead::SCALE_D, &a, None, &b, b_desc, &d).unwrap();
        for (t, words) in out.iter().enumerate() {
            for (i, &w) in words.iter().enumerate() {
                let (m, n) = d_at(t, i);
                let popc = (0..256).filter(|&k| a[m][k] & b[k][n] == 1).count() as u32;
                assert_eq!(w, t as u32 + popc, "thread {t} element {i}");
            }
        }
    }

    #[test]
    fn mixed_sign_bytes_without_accumulator() {
        // u8 x s8 from shared memory (128-byte swizzle), scale-d false: the old D is not read.
        let a: Vec<Vec<u64>> = (0..64)
            .map(|m| (0..32).map(|k| ((m * 31 + k * 17) % 256) as u64).collect())
            .collect();
        let b: Vec<Vec<u64>> = (0..32)
            .map(|k| (0..16).map(|n| ((n * 13 + k * 7) % 256) as u64).collect())
            .collect();
        let sw128 = 1u64 << 62;
        let a_desc = sw128 | (1024u64 >> 4) << 32;
        let b_desc = sw128 | (8192 >> 4) | (1024u64 >> 4) << 32;
        let d: Vec<Vec<u32>> = vec![vec![0xdead; 8]; 128];
        let text = "mma_async.sync.aligned.m64n16k32.s32.u8.s8";
        let out = warpgroup(text, 0, &a, Some(a_desc), &b, b_desc, &d).unwrap();
        for (t, words) in out.iter().enumerate() {
            for (i, &w) in words.iter().enumerate() {
                let (m, n) = d_at(t, i);
                let want: i64 = (0..32).map(|k| a[m][k] as i64 * b[k][n] as u8 as i8 as i64).sum();
                assert_eq!(w as i32 as i64, want, "thread {t} element {i}");
            }
        }
    }

    #[test]
    fn half_results_pack_two_to_a_register_and_scales_negate() {
        // f16 D, A K-major and B N-major, both negated (the product keeps its sign), D accumulated.
        let h = |v: f64| half::f16::from_f64(v).to_bits() as u64;
        let a: Vec<Vec<u64>> = (0..64)
            .map(|m| (0..16).map(|k| h(((m + 2 * k) % 5) as f64 - 2.0)).collect())
            .collect();
        let b: Vec<Vec<u64>> = (0..16)
            .map(|k| (0..16).map(|n| h(((3 * n + k) % 7) as f64 - 3.0)).collect())
            .collect();
        let a_desc = (128u64 >> 4) << 16 | (256u64 >> 4) << 32;
        let b_desc = (4096 >> 4) | (1024u64 >> 4) << 16 | (256u64 >> 4) << 32;
        let one = (h(1.0) | h(1.0) << 16) as u32;
        let d: Vec<Vec<u32>> = vec![vec![one; 4]; 128];
        let flags = WgmmaHead::SCALE_D | WgmmaHead::NEGATE_A | WgmmaHead::NEGATE_B | WgmmaHead::TRANS_B;
        let text = "mma_async.sync.aligned.m64n16k16.f16.f16.f16";
        let out = warpgroup(text, flags, &a, Some(a_desc), &b, b_desc, &d).unwrap();
        let value = |raw: u64| half::f16::from_bits(raw as u16).to_f64();
        for (t, words) in out.iter().enumerate() {
            for i in 0..8 {
                let (m, n) = d_at(t, i);
                let want = 1.0 + (0..16).map(|k| value(a[m][k]) * value(b[k][n])).sum::<f64>();
                let got = value(crate::emu::mma::get_elem(words, 16, i));
                assert_eq!(got, want, "thread {t} element {i}");
            }
        }
    }

    #[test]
    fn a_matrix_past_the_shared_window_fails() {
        // A's stride between 8-row groups puts its last rows at 7 * 16368 bytes, past 32 KiB.
        let a_desc = (16368u64 >> 4) << 32;
        let d = vec![vec![0u32; 4]; 128];
        let text = "mma_async.sync.aligned.m64n8k8.f32.tf32.tf32";
        let run = || {
            let mods: Vec<String> = text.split('.').map(|m| format!(".{m}")).collect();
            let form = wgmma_form(&mods.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
            let shared = vec![0u8; 32768];
            let head = [form.code(), 0, a_desc, 0, shared.len() as u64, 0, 3, 0];
            let mut bufs: Vec<Vec<u32>> = (0..32)
                .map(|_| {
                    let mut w: Vec<u32> = head.iter().flat_map(|&x| [x as u32, (x >> 32) as u32]).collect();
                    w.extend(&d[0]);
                    w
                })
                .collect();
            let ptrs: [*const u32; 32] = std::array::from_fn(|l| bufs[l].as_mut_ptr() as *const u32);
            unsafe { lane_d(&form, &ptrs, 0, shared.as_ptr()) }
        };
        assert!(run().unwrap_err().contains("outside the CTA's shared memory"));
    }

    #[test]
    fn descriptor_fields() {
        // start 0x400, LBO 16, SBO 1024, base 0, 128-byte swizzle.
        let bits = (0x400 >> 4) | (1 << 16) | (64u64 << 32) | (1u64 << 62);
        let d = Descriptor::decode(bits);
        assert_eq!(
            d,
            Descriptor {
                start: 0x400,
                lbo: 16,
                sbo: 1024,
                base: 0,
                swizzle: 3
            }
        );
        assert_eq!(Descriptor::decode(3u64 << 62 | 5 << 49).swizzle, 1);
        assert_eq!(Descriptor::decode(3u64 << 62 | 5 << 49).base, 5);
    }

    #[test]
    fn k_major_offsets() {
        let plain = Descriptor {
            start: 0,
            lbo: 128,
            sbo: 256,
            base: 0,
            swizzle: 0,
        };
        // f16: row 9 (core matrix row 1, second group of 8 rows), k 10 (second chunk, byte 4).
        assert_eq!(plain.offset(9, 10, 16, false), 16 + 256 + 128 + 4);
        let sw128 = Descriptor {
            swizzle: 3,
            sbo: 1024,
            ..plain
        };
        // Row 3 of a 128-byte swizzle: chunk c lands at chunk c ^ 3.
        assert_eq!(sw128.offset(3, 0, 16, false), 3 * 128 + (3 << 4));
        assert_eq!(sw128.offset(3, 8, 16, false), 3 * 128 + ((1 ^ 3) << 4));
        // A start 32 bytes on (the next k-block) moves into chunks 2 and 3 before the XOR.
        let next = Descriptor { start: 32, ..sw128 };
        assert_eq!(next.offset(5, 0, 16, false), 5 * 128 + ((2 ^ 5) << 4));
        // The base offset shifts the pattern: rows counted from a pattern starting 2 rows in.
        let shifted = Descriptor {
            start: 256,
            base: 2,
            ..sw128
        };
        assert_eq!(shifted.offset(1, 0, 16, false), 256 + 128 + (1 << 4));
    }

    #[test]
    fn mn_major_offsets() {
        let plain = Descriptor {
            start: 0,
            lbo: 512,
            sbo: 128,
            base: 0,
            swizzle: 0,
        };
        // f16, M-major: mn 11 is element 3 of the second chunk group (SBO), k 9 is row 1 of the
        // second 8-row group (LBO).
        assert_eq!(plain.offset(11, 9, 16, true), 128 + 16 + 512 + 6);
        let sw64 = Descriptor {
            lbo: 2048,
            sbo: 512,
            swizzle: 2,
            ..plain
        };
        // 64-byte rows of 32 elements: mn 40 is chunk 1 of the second atom (LBO); k 3 is row 3.
        let local = 16 + 2048 + 3 * 64;
        assert_eq!(sw64.offset(40, 3, 16, true), local ^ (((local >> 7) & 3) << 4));
    }
}
