//! `wmma.load`, `wmma.store` and `wmma.mma` on the host. The manual leaves the fragment layouts to
//! the implementation, so this one picks its own: element e of a fragment's matrix (row-major over its
//! logical rows and columns, whatever the memory layout) is slot `e % per` of lane `e / per`, where
//! `per` = elements / 32. Fragments whose registers hold more than `per` elements (the 16-bit A and B
//! of m16n16k16) repeat the first `per` slots. Load and store then need no other lane; `wmma.mma`
//! reads every lane's fragments.

use crate::emu::mma::{element_value, f16_bits};
use ptx_front::isa::{MmaType as Elem, WmmaForm};

/// A lane's fragment as 32-bit words: element slots packed from bit 0 (f64 takes two words).
struct Lane<'w> {
    words: &'w [u32],
    elem: Elem,
}

impl Lane<'_> {
    fn get(&self, slot: usize) -> u64 {
        let b = self.elem.bits();
        if b == 64 {
            return self.words[2 * slot] as u64 | (self.words[2 * slot + 1] as u64) << 32;
        }
        let per = 32 / b;
        (self.words[slot / per] >> ((slot % per) * b)) as u64 & ((1u64 << b) - 1)
    }
}

fn set(words: &mut [u32], elem: Elem, slot: usize, v: u64) {
    let b = elem.bits();
    if b == 64 {
        words[2 * slot] = v as u32;
        words[2 * slot + 1] = (v >> 32) as u32;
        return;
    }
    let per = 32 / b;
    let (w, sh) = (slot / per, (slot % per) * b);
    let mask = (((1u64 << b) - 1) as u32) << sh;
    words[w] = words[w] & !mask | ((v as u32) << sh) & mask;
}

/// A load or store: the element type and where element (r, c) of the fragment's matrix is in memory.
struct Access {
    elem: Elem,
    rows: usize,
    cols: usize,
    row_major: bool,
}

impl Access {
    fn new(f: &WmmaForm) -> Access {
        let (rows, cols) = f.dims(f.frag);
        Access {
            elem: f.a,
            rows,
            cols,
            row_major: f.row_major,
        }
    }
    fn offset(&self, e: usize, stride: usize) -> usize {
        // Without a stride, rows (or columns) are packed.
        let stride = match stride {
            0 if self.row_major => self.cols,
            0 => self.rows,
            s => s,
        };
        let (r, c) = (e / self.cols, e % self.cols);
        if self.row_major {
            r * stride + c
        } else {
            c * stride + r
        }
    }
}

/// `wmma.load` for one lane into `out` (its registers as words). None for forms not supported.
///
/// # Safety
/// `p` must be readable for the whole matrix at `stride` (in elements), as the instruction demands.
pub unsafe fn load_lane(form: &WmmaForm, lane: usize, p: u64, stride: u64, out: &mut [u32]) -> Option<()> {
    let a = Access::new(form);
    let per = a.rows * a.cols / 32;
    let slots = out.len() * 32 / a.elem.bits();
    if slots < per {
        return None;
    }
    let bytes = a.elem.bits() / 8;
    for j in 0..slots {
        let e = lane * per + j % per;
        let at = p as usize + a.offset(e, stride as usize) * bytes;
        let v = unsafe {
            match bytes {
                1 => *(at as *const u8) as u64,
                2 => (at as *const u16).read_unaligned() as u64,
                4 => (at as *const u32).read_unaligned() as u64,
                _ => (at as *const u64).read_unaligned(),
            }
        };
        set(out, a.elem, j, v);
    }
    Some(())
}

/// `wmma.store` of one lane's fragment.
///
/// # Safety
/// `p` must be writable for the whole matrix at `stride`.
pub unsafe fn store_lane(form: &WmmaForm, lane: usize, p: u64, stride: u64, regs: &[u32]) -> Option<()> {
    let a = Access::new(form);
    let per = a.rows * a.cols / 32;
    let bytes = a.elem.bits() / 8;
    let l = Lane {
        words: regs,
        elem: a.elem,
    };
    for j in 0..per {
        let at = p as usize + a.offset(lane * per + j, stride as usize) * bytes;
        let v = l.get(j);
        unsafe {
            match bytes {
                1 => *(at as *mut u8) = v as u8,
                2 => (at as *mut u16).write_unaligned(v as u16),
                4 => (at as *mut u32).write_unaligned(v as u32),
                _ => (at as *mut u64).write_unaligned(v),
            }
        }
    }
    Some(())
}

/// `wmma.mma` for one lane: its D words from every lane's A, B and C words.
pub fn mma_lane(form: &WmmaForm, frags: &[[&[u32]; 3]; 32], lane: usize, d_words: usize) -> Vec<u32> {
    let (dt, at, bt, ct) = (form.d, form.a, form.b, form.c);
    let satfinite = form.satfinite;
    let (m, n, k) = (form.m, form.n, form.k);
    let elem = |f: usize, t: Elem, rows_cols: (usize, usize), r: usize, c: usize| -> f64 {
        let per = rows_cols.0 * rows_cols.1 / 32;
        let e = r * rows_cols.1 + c;
        Lane {
            words: frags[e / per][f],
            elem: t,
        }
        .value_at(e % per)
    };
    let per = m * n / 32;
    let mut out = vec![0u32; d_words];
    for j in 0..per {
        let e = lane * per + j;
        let (r, c) = (e / n, e % n);
        let acc = elem(2, ct, (m, n), r, c);
        let v = if matches!(dt, Elem::S32) {
            let sum: i64 = (0..k)
                .map(|kk| (elem(0, at, (m, k), r, kk) * elem(1, bt, (k, n), kk, c)) as i64)
                .sum::<i64>()
                + acc as i64;
            let w = if satfinite {
                sum.clamp(i32::MIN as i64, i32::MAX as i64)
            } else {
                sum as i32 as i64
            };
            w as u32 as u64
        } else if dt == Elem::F64 {
            (0..k)
                .fold(acc, |s, kk| {
                    elem(0, at, (m, k), r, kk).mul_add(elem(1, bt, (k, n), kk, c), s)
                })
                .to_bits()
        } else {
            // Products of the 16-bit and tf32 formats are exact in f64; the sum is rounded once more
            // into the result type.
            let sum = (0..k)
                .map(|kk| elem(0, at, (m, k), r, kk) * elem(1, bt, (k, n), kk, c))
                .sum::<f64>()
                + acc;
            match dt {
                Elem::F16 => f16_bits(sum),
                _ => {
                    let f = sum as f32;
                    (if f.is_nan() { 0x7fff_ffff } else { f.to_bits() }) as u64
                }
            }
        };
        set(&mut out, dt, j, v);
    }
    out
}

impl Lane<'_> {
    fn value_at(&self, slot: usize) -> f64 {
        element_value(self.elem, self.get(slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptx_front::isa::wmma_form;

    /// The form of `wmma` written as one text after the opcode (`.load.a.sync…`).
    fn form(text: &str) -> WmmaForm {
        let mut mods: Vec<String> = text.split('.').skip(1).map(|m| format!(".{m}")).collect();
        let sub = mods.remove(0);
        wmma_form(&sub, &mods.iter().map(String::as_str).collect::<Vec<_>>()).unwrap()
    }

    /// Loads A, B and C of m16n16k16 (f16 in, f32 accumulate) into 32 lanes, multiplies, stores D, and
    /// compares with a plain triple loop.
    #[test]
    fn m16n16k16_f16_round_trip() {
        let (m, n, k) = (16usize, 16usize, 16usize);
        let a: Vec<u16> = (0..m * k).map(|i| f16_bits((i % 7) as f64 - 3.0) as u16).collect();
        let b: Vec<u16> = (0..k * n).map(|i| f16_bits((i % 5) as f64 * 0.5) as u16).collect();
        let c: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
        let ta = form(".load.a.sync.aligned.row.m16n16k16.f16");
        let tb = form(".load.b.sync.aligned.col.m16n16k16.f16");
        let tc = form(".load.c.sync.aligned.row.m16n16k16.f32");
        let tm = form(".mma.sync.aligned.row.col.m16n16k16.f32.f32");
        let td = form(".store.d.sync.aligned.row.m16n16k16.f32");
        // B in column-major order with stride k.
        let b_col: Vec<u16> = (0..k * n).map(|i| b[(i % k) * n + i / k]).collect();
        let mut fa = vec![[0u32; 8]; 32];
        let mut fb = vec![[0u32; 8]; 32];
        let mut fc = vec![[0u32; 8]; 32];
        for l in 0..32 {
            unsafe {
                load_lane(&ta, l, a.as_ptr() as u64, k as u64, &mut fa[l]).unwrap();
                load_lane(&tb, l, b_col.as_ptr() as u64, k as u64, &mut fb[l]).unwrap();
                load_lane(&tc, l, c.as_ptr() as u64, n as u64, &mut fc[l]).unwrap();
            }
        }
        let frags: [[&[u32]; 3]; 32] = std::array::from_fn(|l| [&fa[l][..], &fb[l][..], &fc[l][..]]);
        let mut d = vec![0f32; m * n];
        for l in 0..32 {
            let dl = mma_lane(&tm, &frags, l, 8);
            unsafe { store_lane(&td, l, d.as_mut_ptr() as u64, n as u64, &dl).unwrap() };
        }
        for r in 0..m {
            for col in 0..n {
                let want: f64 = (0..k)
                    .map(|kk| {
                        element_value(Elem::F16, a[r * k + kk] as u64)
                            * element_value(Elem::F16, b[kk * n + col] as u64)
                    })
                    .sum::<f64>()
                    + c[r * n + col] as f64;
                assert_eq!(d[r * n + col], want as f32, "D[{r}][{col}]");
            }
        }
    }

    #[test]
    fn integer_and_double_forms() {
        // m8n8k4 f64: D = A·B + C on small integers (exact).
        let (m, n, k) = (8usize, 8usize, 4usize);
        let a: Vec<f64> = (0..m * k).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i % 3) as f64).collect();
        let c: Vec<f64> = vec![1.0; m * n];
        let mut fa = vec![[0u32; 2]; 32];
        let mut fb = vec![[0u32; 2]; 32];
        let mut fc = vec![[0u32; 4]; 32];
        for l in 0..32 {
            unsafe {
                load_lane(
                    &form(".load.a.sync.aligned.row.m8n8k4.f64"),
                    l,
                    a.as_ptr() as u64,
                    k as u64,
                    &mut fa[l],
                )
                .unwrap();
                load_lane(
                    &form(".load.b.sync.aligned.row.m8n8k4.f64"),
                    l,
                    b.as_ptr() as u64,
                    n as u64,
                    &mut fb[l],
                )
                .unwrap();
                load_lane(
                    &form(".load.c.sync.aligned.row.m8n8k4.f64"),
                    l,
                    c.as_ptr() as u64,
                    n as u64,
                    &mut fc[l],
                )
                .unwrap();
            }
        }
        let frags: [[&[u32]; 3]; 32] = std::array::from_fn(|l| [&fa[l][..], &fb[l][..], &fc[l][..]]);
        let mut d = vec![0f64; m * n];
        for l in 0..32 {
            let dl = mma_lane(
                &form(".mma.sync.aligned.row.row.m8n8k4.rn.f64.f64.f64.f64"),
                &frags,
                l,
                4,
            );
            unsafe {
                store_lane(
                    &form(".store.d.sync.aligned.row.m8n8k4.f64"),
                    l,
                    d.as_mut_ptr() as u64,
                    n as u64,
                    &dl,
                )
                .unwrap()
            };
        }
        for r in 0..m {
            for col in 0..n {
                let want: f64 = (0..k).map(|kk| a[r * k + kk] * b[kk * n + col]).sum::<f64>() + 1.0;
                assert_eq!(d[r * n + col], want);
            }
        }
    }
}
