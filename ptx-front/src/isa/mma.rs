//! The forms of `mma.sync` (9.7.15.4.14) that exist: which shapes take which element types, layouts
//! and modifiers. The ISA table's groups let every combination through; the checker refuses the ones
//! ptxas refuses with this, and the CPU's emulation builds its fragment layouts on what it returns.

/// Element types of `mma` operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaType {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    F32,
    F64,
    S8,
    U8,
    S4,
    U4,
    B1,
    S32,
}

impl MmaType {
    /// Every type, in the order of their codes (`MmaType as u64`).
    pub const ALL: [MmaType; 13] = {
        use MmaType::*;
        [F16, Bf16, Tf32, E4m3, E5m2, F32, F64, S8, U8, S4, U4, B1, S32]
    };

    pub fn parse(s: &str) -> Option<MmaType> {
        use MmaType::*;
        Some(match s {
            ".f16" => F16,
            ".bf16" => Bf16,
            ".tf32" => Tf32,
            ".e4m3" => E4m3,
            ".e5m2" => E5m2,
            ".f32" => F32,
            ".f64" => F64,
            ".s8" => S8,
            ".u8" => U8,
            ".s4" => S4,
            ".u4" => U4,
            ".b1" => B1,
            ".s32" => S32,
            _ => return None,
        })
    }

    pub fn bits(self) -> usize {
        use MmaType::*;
        match self {
            B1 => 1,
            S4 | U4 => 4,
            S8 | U8 | E4m3 | E5m2 => 8,
            F16 | Bf16 => 16,
            Tf32 | F32 | S32 => 32,
            F64 => 64,
        }
    }

    pub fn is_i8(self) -> bool {
        matches!(self, MmaType::S8 | MmaType::U8)
    }

    pub fn is_i4(self) -> bool {
        matches!(self, MmaType::S4 | MmaType::U4)
    }

    pub fn is_f8(self) -> bool {
        matches!(self, MmaType::E4m3 | MmaType::E5m2)
    }

    pub fn is_f16_or_f32(self) -> bool {
        matches!(self, MmaType::F16 | MmaType::F32)
    }
}

/// The bit operation of single-bit `mma` (`.and`, `.xor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaBitOp {
    And,
    Xor,
}

/// Packs a form's fields into one `u64`, the code lowered code hands the runtime instead of the
/// modifiers' text (see `ptx_llvm::abi`); [`Unpack`] reads them back in the same order.
#[derive(Default)]
pub(super) struct Pack {
    word: u64,
    at: u32,
}

impl Pack {
    pub(super) fn put(mut self, bits: u32, v: u64) -> Pack {
        debug_assert!(v < 1 << bits, "{v} does not fit {bits} bits");
        self.word |= v << self.at;
        self.at += bits;
        self
    }
    pub(super) fn ty(self, t: MmaType) -> Pack {
        self.put(4, t as u64)
    }
    /// M, N and K (each at most 256), then the types of D, A, B and C.
    pub(super) fn shape_and_types(self, (m, n, k): (usize, usize, usize), types: [MmaType; 4]) -> Pack {
        let p = self.put(9, m as u64).put(9, n as u64).put(9, k as u64);
        types.into_iter().fold(p, Pack::ty)
    }
    pub(super) fn done(self) -> u64 {
        debug_assert!(self.at <= 64, "a form's code is 64 bits");
        self.word
    }
}

pub(super) struct Unpack(pub(super) u64);

impl Unpack {
    pub(super) fn get(&mut self, bits: u32) -> u64 {
        let v = self.0 & ((1 << bits) - 1);
        self.0 >>= bits;
        v
    }
    pub(super) fn flag(&mut self) -> bool {
        self.get(1) == 1
    }
    pub(super) fn ty(&mut self) -> Option<MmaType> {
        MmaType::ALL.get(self.get(4) as usize).copied()
    }
    /// What [`Pack::shape_and_types`] packed.
    pub(super) fn shape_and_types(&mut self) -> Option<((usize, usize, usize), [MmaType; 4])> {
        let shape = (self.get(9) as usize, self.get(9) as usize, self.get(9) as usize);
        Some((shape, [self.ty()?, self.ty()?, self.ty()?, self.ty()?]))
    }
    pub(super) fn bit_op(&mut self) -> Option<Option<MmaBitOp>> {
        match self.get(2) {
            0 => Some(None),
            1 => Some(Some(MmaBitOp::And)),
            2 => Some(Some(MmaBitOp::Xor)),
            _ => None,
        }
    }
}

pub(super) fn bit_op_code(op: Option<MmaBitOp>) -> u64 {
    match op {
        None => 0,
        Some(MmaBitOp::And) => 1,
        Some(MmaBitOp::Xor) => 2,
    }
}

/// One valid `mma.sync` form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaForm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub d: MmaType,
    pub a: MmaType,
    pub b: MmaType,
    pub c: MmaType,
    pub a_row: bool,
    pub b_row: bool,
    pub satfinite: bool,
    pub bit_op: Option<MmaBitOp>,
    /// The f64 rounding mode, `.rn`/`.rz`/`.rm`/`.rp` as 0..3 (`.rn` when none is written).
    pub round: u8,
}

impl MmaForm {
    /// The form as one word, which lowered code passes to the runtime (see `ptx_llvm::abi`).
    pub fn code(&self) -> u64 {
        Pack::default()
            .shape_and_types((self.m, self.n, self.k), [self.d, self.a, self.b, self.c])
            .put(1, self.a_row as u64)
            .put(1, self.b_row as u64)
            .put(1, self.satfinite as u64)
            .put(2, bit_op_code(self.bit_op))
            .put(2, self.round as u64)
            .done()
    }

    /// The form [`MmaForm::code`] made `code` from; None for a word with a field out of range. The
    /// rules of which fields go together are not checked again: codes come from forms already checked.
    pub fn from_code(code: u64) -> Option<MmaForm> {
        let mut u = Unpack(code);
        let ((m, n, k), [d, a, b, c]) = u.shape_and_types()?;
        let form = MmaForm {
            m,
            n,
            k,
            d,
            a,
            b,
            c,
            a_row: u.flag(),
            b_row: u.flag(),
            satfinite: u.flag(),
            bit_op: u.bit_op()?,
            round: u.get(2) as u8,
        };
        (u.0 == 0).then_some(form)
    }
}

pub(super) fn shape(s: &str) -> Option<(usize, usize, usize)> {
    let rest = s.strip_prefix(".m")?;
    let (m, rest) = rest.split_once('n')?;
    let (n, k) = rest.split_once('k')?;
    Some((m.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
}

/// The form of a dense `mma` from its modifiers in written order (`.sync`, `.aligned`, the shape, the
/// layouts, `.satfinite`, the d/a/b/c types, a rounding mode for f64, `.xor`/`.and` and `.popc` for
/// b1), or why it is not one. Sparse `mma.sp` forms are not dense forms.
pub fn mma_form(mods: &[&str]) -> Result<MmaForm, String> {
    use MmaType::*;
    let mut dims = None;
    let mut layouts = Vec::new();
    let mut types = Vec::new();
    let mut written = String::new();
    let (mut satfinite, mut popc) = (false, false);
    let mut bit_op = None;
    let mut round = None;
    for &m in mods {
        match m {
            ".sync" | ".aligned" => {}
            ".row" => layouts.push(true),
            ".col" => layouts.push(false),
            ".satfinite" => satfinite = true,
            ".popc" => popc = true,
            ".and" => bit_op = Some(MmaBitOp::And),
            ".xor" => bit_op = Some(MmaBitOp::Xor),
            ".rn" => round = Some(0),
            ".rz" => round = Some(1),
            ".rm" => round = Some(2),
            ".rp" => round = Some(3),
            _ => match (MmaType::parse(m), shape(m)) {
                (Some(t), _) => {
                    types.push(t);
                    written.push_str(m);
                }
                (None, Some(s)) if dims.is_none() => dims = Some(s),
                _ => return Err(format!("`{m}` is not a modifier of a dense `mma`")),
            },
        }
    }
    let (m, n, k) = dims.ok_or("needs a shape such as `.m16n8k16`")?;
    let [d, a, b, c] = <[MmaType; 4]>::try_from(types).map_err(|_| "needs four types: d, a, b and c")?;
    let [a_row, b_row] = <[bool; 2]>::try_from(layouts).map_err(|_| "needs two layouts (`.row.col`)")?;
    let ok_types = match (m, n, k) {
        _ if a == F64 => [d, b, c] == [F64; 3] && n == 8 && matches!((m, k), (8, 4) | (16, 4) | (16, 8) | (16, 16)),
        (8, 8, 4) => a == F16 && b == F16 && d.is_f16_or_f32() && c.is_f16_or_f32() && !(c == F32 && d == F16),
        (16, 8, 8) | (16, 8, 16) if matches!(a, F16 | Bf16) => {
            b == a
                && (if a == F16 {
                    d.is_f16_or_f32() && c.is_f16_or_f32()
                } else {
                    d == F32 && c == F32
                })
                && (k == 16 || d == c)
        }
        (16, 8, 4) | (16, 8, 8) if a == Tf32 => b == a && d == F32 && c == F32,
        (16, 8, 32) if a.is_f8() => b.is_f8() && d == F32 && c == F32,
        (8, 8, 16) | (16, 8, 16) | (16, 8, 32) if a.is_i8() => b.is_i8() && d == S32 && c == S32,
        (8, 8, 32) | (16, 8, 32) | (16, 8, 64) if a.is_i4() => b.is_i4() && d == S32 && c == S32,
        (8, 8, 128) | (16, 8, 128) | (16, 8, 256) => a == B1 && b == B1 && d == S32 && c == S32,
        _ => false,
    };
    if !ok_types {
        return Err(format!(
            "`.m{m}n{n}k{k}` does not take the d, a, b, c types `{written}`"
        ));
    }
    let quad_pair = (m, n, k) == (8, 8, 4) && a == F16;
    if !quad_pair && (!a_row || b_row) {
        return Err("only `.m8n8k4` with `.f16` inputs takes layouts other than `.row.col`".into());
    }
    if satfinite && !(a.is_i8() || a.is_i4()) {
        return Err("`.satfinite` is for integer inputs".into());
    }
    if round.is_some() && a != F64 {
        return Err("a rounding mode is for `.f64` only".into());
    }
    if (a == B1) != (popc && bit_op.is_some()) || (a != B1 && (bit_op.is_some() || popc)) {
        return Err("single-bit inputs need `.popc` and `.and` or `.xor`, and only they take them".into());
    }
    Ok(MmaForm {
        m,
        n,
        k,
        d,
        a,
        b,
        c,
        a_row,
        b_row,
        satfinite,
        bit_op,
        round: round.unwrap_or(0),
    })
}

/// Every valid dense `mma` form (`.sync.aligned` first), each optional modifier once on top of its
/// form: every shape/type combination with `.row.col`, and the other layouts of `.m8n8k4` with f16,
/// `.and` for single bits, `.satfinite` for integers, each rounding mode for f64. What `ptx-jit
/// coverage` counts, rather than every combination of the table's groups.
pub fn mma_forms() -> Vec<Vec<&'static str>> {
    const SHAPES: [&str; 11] = [
        ".m8n8k4",
        ".m16n8k4",
        ".m16n8k8",
        ".m16n8k16",
        ".m16n8k32",
        ".m16n8k64",
        ".m8n8k16",
        ".m8n8k32",
        ".m8n8k128",
        ".m16n8k128",
        ".m16n8k256",
    ];
    const TYPES: [&str; 13] = [
        ".f16", ".bf16", ".tf32", ".e4m3", ".e5m2", ".f32", ".f64", ".s8", ".u8", ".s4", ".u4", ".b1", ".s32",
    ];
    let mut out = vec![];
    for shape in SHAPES {
        for d in TYPES {
            for a in TYPES {
                for b in TYPES {
                    for c in TYPES {
                        let mut base = vec![".sync", ".aligned", shape, ".row", ".col", d, a, b, c];
                        if a == ".b1" {
                            base.extend([".xor", ".popc"]);
                        }
                        if mma_form(&base).is_err() {
                            continue;
                        }
                        let with = |extra: &'static str| {
                            let mut m = base.clone();
                            m.push(extra);
                            m
                        };
                        let mut variants = vec![base.clone()];
                        match a {
                            ".b1" => {
                                variants.push(base.iter().map(|&m| if m == ".xor" { ".and" } else { m }).collect())
                            }
                            ".f64" => variants.extend([".rn", ".rz", ".rm", ".rp"].map(with)),
                            _ => variants.push(with(".satfinite")),
                        }
                        if shape == ".m8n8k4" && a == ".f16" {
                            for layouts in [[".row", ".row"], [".col", ".col"], [".col", ".row"]] {
                                let mut m = base.clone();
                                m[3..5].copy_from_slice(&layouts);
                                variants.push(m);
                            }
                        }
                        out.extend(variants.into_iter().filter(|m| mma_form(m).is_ok()));
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
    fn every_form_survives_its_code() {
        for mods in mma_forms() {
            let f = mma_form(&mods).unwrap();
            assert_eq!(MmaForm::from_code(f.code()), Some(f), "{}", mods.concat());
        }
        assert_eq!(MmaForm::from_code(u64::MAX), None);
    }

    #[test]
    fn valid_and_invalid_forms() {
        let form = |s: &str| {
            let mods: Vec<String> = s.split('.').map(|m| format!(".{m}")).collect();
            mma_form(&mods.iter().map(String::as_str).collect::<Vec<_>>())
        };
        assert!(form("sync.aligned.m16n8k16.row.col.f32.f16.f16.f32").is_ok());
        assert!(form("sync.aligned.m8n8k4.col.row.f16.f16.f16.f16").is_ok());
        assert!(form("sync.aligned.m16n8k8.row.col.rz.f64.f64.f64.f64").is_ok());
        assert!(form("sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc").is_ok());
        assert!(form("sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32").is_ok());
        for bad in [
            "sync.aligned.m16n8k16.col.col.f32.f16.f16.f32", // only .row.col outside m8n8k4.f16
            "sync.aligned.m16n8k8.row.col.f32.f16.f16.f16",  // m16n8k8: dtype = ctype
            "sync.aligned.m8n8k4.row.col.f16.f16.f16.f32",   // m8n8k4: f32 C needs f32 D
            "sync.aligned.m16n8k16.row.col.f16.bf16.bf16.f32", // bf16 accumulates in f32
            "sync.aligned.m16n8k16.row.col.satfinite.f32.f16.f16.f32",
            "sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.rn", // rounding only for f64
            "sync.aligned.m8n8k128.row.col.s32.b1.b1.s32",      // b1 needs .xor/.and .popc
            "sync.aligned.m8n8k16.row.col.s32.s8.s8.s32.popc",
            "sync.aligned.m16n8k12.row.col.f32.f16.f16.f32",
            "sync.aligned.m16n8k16.row.col.f32.f16.f16",
            "sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.f32",
            "sync.aligned.m16n8k16.row.f32.f16.f16.f32",
            "sync.aligned.m16n8k16.m16n8k16.row.col.f32.f16.f16.f32",
            "sync.aligned.m8n8k32.row.col.s32.s8.s8.s32", // 8-bit needs k16/k32
            "sync.aligned.m16n8k32.row.col.f32.e4m3.s8.f32",
            "sync.aligned.m16n8k4.row.col.f32.f16.f16.f32",
            "sync.aligned.m8n8k4.row.col.f32.tf32.tf32.f32",
            "sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.bogus",
        ] {
            assert!(form(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_forms_are_the_manuals() {
        let forms = mma_forms();
        // f64: 4 shapes; f16: m8n8k4 3 d/c pairs, m16n8k8 2, m16n8k16 4; bf16: 2; tf32: 2; f8: 4 a/b
        // pairs; i8: 3 shapes x 4 a/b pairs; i4: the same; b1: 3 shapes.
        let plain = forms
            .iter()
            .filter(|m| m[3..5] == [".row", ".col"] && (m.len() == 9 || m.ends_with(&[".xor", ".popc"])));
        assert_eq!(plain.count(), 4 + 3 + 2 + 4 + 2 + 2 + 4 + 12 + 12 + 3);
        // Then each rounding of f64, .satfinite of the 24 integer forms, .and of b1, and three more
        // layouts of the three f16 m8n8k4 forms.
        assert_eq!(forms.len(), 48 + 4 * 4 + 24 + 3 + 3 * 3);
    }
}
