//! The forms of dense `wgmma.mma_async` (9.7.16.5.2) that exist, from the manual's shape and type
//! tables (9.7.16.2, 9.7.16.3): which element types go together, which N each family takes, and how
//! many operands and registers a form has. The ISA table's groups let every combination through; the
//! checker refuses the rest with this, and the CPU's emulation works from what it returns.

use super::mma::{bit_op_code, MmaBitOp, MmaType, Pack, Unpack};

/// One valid dense `wgmma.mma_async` form. M is always 64; K follows from the input type (32 bytes
/// of it: k16 for 16-bit, k8 for tf32, k32 for 8-bit, k256 for single bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgmmaForm {
    pub n: usize,
    pub k: usize,
    pub d: MmaType,
    pub a: MmaType,
    pub b: MmaType,
    pub satfinite: bool,
    /// `.and` (with `.popc`) for single bits.
    pub bit_op: Option<MmaBitOp>,
}

impl WgmmaForm {
    /// Registers of A a thread holds when A comes from registers.
    pub const A_REGS: usize = 4;

    /// Registers of D a thread holds: N/2 elements, two to a register for `.f16`.
    pub fn d_regs(&self) -> usize {
        if self.d == MmaType::F16 {
            self.n / 4
        } else {
            self.n / 2
        }
    }

    /// Floating-point forms take the immediate scales of A and B (`imm-scale-a`, `imm-scale-b`).
    pub fn scales(&self) -> bool {
        !matches!(self.d, MmaType::S32)
    }

    /// 16-bit forms take the immediate transposes too (`imm-trans-a` when A is in shared memory,
    /// `imm-trans-b`).
    pub fn transposes(&self) -> bool {
        matches!(self.a, MmaType::F16 | MmaType::Bf16)
    }

    /// The form as one word, which lowered code passes to the runtime (see `ptx_llvm::abi`).
    pub fn code(&self) -> u64 {
        Pack::default()
            .put(9, self.n as u64)
            .put(9, self.k as u64)
            .ty(self.d)
            .ty(self.a)
            .ty(self.b)
            .put(1, self.satfinite as u64)
            .put(2, bit_op_code(self.bit_op))
            .done()
    }

    /// The form [`WgmmaForm::code`] made `code` from; None for a word with a field out of range. The
    /// rules of which fields go together are not checked again: codes come from forms already checked.
    pub fn from_code(code: u64) -> Option<WgmmaForm> {
        let mut u = Unpack(code);
        let form = WgmmaForm {
            n: u.get(9) as usize,
            k: u.get(9) as usize,
            d: u.ty()?,
            a: u.ty()?,
            b: u.ty()?,
            satfinite: u.flag(),
            bit_op: u.bit_op()?,
        };
        (u.0 == 0).then_some(form)
    }

    /// Operands after D, A and B's descriptor: scale-d, then the scales and transposes the form takes.
    pub fn operands(&self, a_in_registers: bool) -> usize {
        let trans = if self.transposes() {
            1 + usize::from(!a_in_registers)
        } else {
            0
        };
        3 + 1 + if self.scales() { 2 + trans } else { 0 }
    }
}

/// N of the integer and single-bit families: 8 to 32 in steps of 8, then 48 to 256 in steps of 16.
fn integer_n(n: usize) -> bool {
    matches!(n, 8 | 16 | 24 | 32) || (48..=256).contains(&n) && n.is_multiple_of(16)
}

/// The form of a dense `wgmma.mma_async` from its modifiers in any order (`.mma_async`, `.sync`,
/// `.aligned`, the shape, `.satfinite`, the d/a/b types, `.and` and `.popc`), or why it is not one.
pub fn wgmma_form(mods: &[&str]) -> Result<WgmmaForm, String> {
    use MmaType::*;
    let mut dims = None;
    let mut types = Vec::new();
    let mut written = String::new();
    let (mut satfinite, mut popc, mut and) = (false, false, false);
    for &m in mods {
        match m {
            ".mma_async" | ".sync" | ".aligned" => {}
            ".satfinite" => satfinite = true,
            ".popc" => popc = true,
            ".and" => and = true,
            ".sp" => return Err("sparse `wgmma.mma_async.sp` is not a dense form".into()),
            _ => match (MmaType::parse(m), super::mma::shape(m)) {
                (Some(t), _) => {
                    types.push(t);
                    written.push_str(m);
                }
                (None, Some(s)) if dims.is_none() => dims = Some(s),
                _ => return Err(format!("`{m}` is not a modifier of `wgmma.mma_async`")),
            },
        }
    }
    let (m, n, k) = dims.ok_or("needs a shape such as `.m64n128k16`")?;
    let [d, a, b] = <[MmaType; 3]>::try_from(types).map_err(|_| "needs three types: d, a and b")?;
    if m != 64 || n == 0 || n > 256 || !n.is_multiple_of(8) {
        return Err(format!(
            "`.m{m}n{n}k{k}` is not a shape: M is 64 and N a multiple of 8 up to 256"
        ));
    }
    let ok = match k {
        16 if a == F16 => b == F16 && d.is_f16_or_f32(),
        16 if a == Bf16 => b == Bf16 && d == F32,
        8 => a == Tf32 && b == Tf32 && d == F32,
        32 if a.is_f8() => b.is_f8() && d.is_f16_or_f32(),
        32 if a.is_i8() => b.is_i8() && d == S32 && integer_n(n),
        256 => a == B1 && b == B1 && d == S32 && integer_n(n),
        _ => false,
    };
    if !ok {
        return Err(format!("`.m{m}n{n}k{k}` does not take the d, a, b types `{written}`"));
    }
    if satfinite && !a.is_i8() {
        return Err("`.satfinite` is for 8-bit integer inputs".into());
    }
    if (a == B1) != (and && popc) || (a != B1 && (and || popc)) {
        return Err("single-bit inputs need `.and.popc`, and only they take them".into());
    }
    Ok(WgmmaForm {
        n,
        k,
        d,
        a,
        b,
        satfinite,
        bit_op: and.then_some(MmaBitOp::And),
    })
}

/// The valid dense forms `ptx-jit coverage` counts (`.mma_async.sync.aligned` first): every type combination at
/// its family's smallest and largest N, with `.satfinite` for the integer ones; and every N of
/// `.f32.f16.f16`. Counting every N of every combination would add five hundred kernels that test
/// nothing more.
pub fn wgmma_forms() -> Vec<Vec<&'static str>> {
    const TYPES: [&str; 10] = [
        ".f16", ".bf16", ".tf32", ".e4m3", ".e5m2", ".f32", ".s8", ".u8", ".b1", ".s32",
    ];
    let mut out: Vec<Vec<&'static str>> = vec![];
    let mut push = |shape: &'static str, tail: &[&'static str]| {
        let mut m = vec![".mma_async", ".sync", ".aligned", shape];
        m.extend_from_slice(tail);
        if wgmma_form(&m).is_ok() && !out.contains(&m) {
            out.push(m);
        }
    };
    for &shape in super::table::WGMMA_SHAPES.iter().filter(|s| s.ends_with("k16")) {
        push(shape, &[".f32", ".f16", ".f16"]);
    }
    for &shape in super::table::WGMMA_SHAPES {
        let n = super::mma::shape(shape).map_or(0, |(_, n, _)| n);
        if n != 8 && n != 256 {
            continue;
        }
        for d in TYPES {
            for a in TYPES {
                for b in TYPES {
                    push(shape, &[d, a, b]);
                    push(shape, &[d, a, b, ".satfinite"]);
                    push(shape, &[d, a, b, ".and", ".popc"]);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(s: &str) -> Result<WgmmaForm, String> {
        let mods: Vec<String> = s.split('.').map(|m| format!(".{m}")).collect();
        wgmma_form(&mods.iter().map(String::as_str).collect::<Vec<_>>())
    }

    #[test]
    fn valid_and_invalid_forms() {
        for good in [
            "mma_async.sync.aligned.m64n128k16.f32.f16.f16",
            "mma_async.sync.aligned.m64n72k16.f16.f16.f16",
            "mma_async.sync.aligned.m64n120k16.f32.bf16.bf16",
            "mma_async.sync.aligned.m64n16k8.f32.tf32.tf32",
            "mma_async.sync.aligned.m64n8k32.f16.e4m3.e5m2",
            "mma_async.sync.aligned.m64n8k32.s32.s8.s8.satfinite",
            "mma_async.sync.aligned.m64n256k32.s32.u8.s8",
            "mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc",
        ] {
            assert!(form(good).is_ok(), "{good}: {:?}", form(good));
        }
        for bad in [
            "mma_async.sync.aligned.m64n128k16.f16.bf16.bf16", // bf16 accumulates in f32
            "mma_async.sync.aligned.m64n40k32.s32.s8.s8",      // integer N: 8..32, then steps of 16
            "mma_async.sync.aligned.m64n40k256.s32.b1.b1.and.popc",
            "mma_async.sync.aligned.m64n8k16.f32.f16.bf16",
            "mma_async.sync.aligned.m64n8k8.f16.tf32.tf32",
            "mma_async.sync.aligned.m64n8k32.s32.e4m3.s8",
            "mma_async.sync.aligned.m64n8k16.f32.f16.f16.satfinite",
            "mma_async.sync.aligned.m64n8k256.s32.b1.b1",
            "mma_async.sync.aligned.m64n8k32.s32.s8.s8.popc",
            "mma_async.sync.aligned.m64n264k16.f32.f16.f16",
            "mma_async.sync.aligned.m64n12k16.f32.f16.f16",
            "mma_async.sync.aligned.m32n8k16.f32.f16.f16",
            "mma_async.sync.aligned.m64n8k16.f32.f16",
            "mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16",
        ] {
            assert!(form(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_form_survives_its_code() {
        for mods in wgmma_forms() {
            let f = wgmma_form(&mods).unwrap();
            assert_eq!(WgmmaForm::from_code(f.code()), Some(f), "{}", mods.concat());
        }
        assert_eq!(WgmmaForm::from_code(u64::MAX), None);
    }

    #[test]
    fn registers_and_operands() {
        let f = form("mma_async.sync.aligned.m64n72k16.f16.f16.f16").unwrap();
        assert_eq!((f.d_regs(), f.operands(false), f.operands(true)), (18, 8, 7));
        let f = form("mma_async.sync.aligned.m64n16k8.f32.tf32.tf32").unwrap();
        assert_eq!((f.d_regs(), f.operands(false), f.operands(true)), (8, 6, 6));
        let f = form("mma_async.sync.aligned.m64n8k32.s32.u8.u8").unwrap();
        assert_eq!((f.d_regs(), f.operands(false)), (4, 4));
    }

    #[test]
    fn the_counted_forms() {
        let forms = wgmma_forms();
        // 32 N of f32.f16.f16; then at n8 and n256: f16.f16.f16, bf16, tf32 (3), fp8 (8), s8/u8
        // with and without .satfinite (8), b1 (1), each at two N (minus f32.f16.f16's, counted).
        assert_eq!(forms.len(), 32 + 2 * (1 + 1 + 1 + 8 + 8 + 1));
    }
}
