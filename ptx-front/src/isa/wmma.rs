//! The `wmma` forms (9.7.15.3) the CPU's emulation runs: `wmma.load`, `wmma.store` and `wmma.mma`
//! with shapes whose fragments split evenly over a warp, and the element types of the 16-bit,
//! tf32, f64 and 8-bit integer families (the sub-byte `.s4`, `.u4` and `.b1` forms are not run).

use super::mma::{shape, MmaType, Pack, Unpack};

/// Which part of `wmma` an instruction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WmmaOp {
    Load,
    Store,
    Mma,
}

/// The matrix a loaded or stored fragment holds (`.d` is stored as C's shape and type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WmmaFrag {
    A,
    B,
    C,
}

/// One `wmma` form. For a load or store, `a` is the element type and `frag` the matrix; for
/// `wmma.mma`, `d`, `a`, `b` and `c` are the four types (`.dtype.ctype` forms have f16 inputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WmmaForm {
    pub op: WmmaOp,
    pub frag: WmmaFrag,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub d: MmaType,
    pub a: MmaType,
    pub b: MmaType,
    pub c: MmaType,
    /// A load or store's memory layout is row-major (`.row`).
    pub row_major: bool,
    pub satfinite: bool,
}

impl WmmaForm {
    /// Rows and columns of a fragment's matrix.
    pub fn dims(&self, f: WmmaFrag) -> (usize, usize) {
        match f {
            WmmaFrag::A => (self.m, self.k),
            WmmaFrag::B => (self.k, self.n),
            WmmaFrag::C => (self.m, self.n),
        }
    }

    /// The form as one word, which lowered code passes to the runtime (see `ptx_llvm::abi`).
    pub fn code(&self) -> u64 {
        Pack::default()
            .put(2, self.op as u64)
            .put(2, self.frag as u64)
            .shape_and_types((self.m, self.n, self.k), [self.d, self.a, self.b, self.c])
            .put(1, self.row_major as u64)
            .put(1, self.satfinite as u64)
            .done()
    }

    /// The form [`WmmaForm::code`] made `code` from; None for a word with a field out of range. The
    /// rules of which fields go together are not checked again: codes come from forms already checked.
    pub fn from_code(code: u64) -> Option<WmmaForm> {
        let mut u = Unpack(code);
        let op = [WmmaOp::Load, WmmaOp::Store, WmmaOp::Mma]
            .get(u.get(2) as usize)
            .copied()?;
        let frag = [WmmaFrag::A, WmmaFrag::B, WmmaFrag::C]
            .get(u.get(2) as usize)
            .copied()?;
        let ((m, n, k), [d, a, b, c]) = u.shape_and_types()?;
        let form = WmmaForm {
            op,
            frag,
            m,
            n,
            k,
            d,
            a,
            b,
            c,
            row_major: u.flag(),
            satfinite: u.flag(),
        };
        let runs = [form.d, form.a, form.b, form.c].iter().all(|t| runs(*t));
        (u.0 == 0 && runs).then_some(form)
    }
}

/// Element types the CPU's `wmma` runs.
fn runs(t: MmaType) -> bool {
    !matches!(
        t,
        MmaType::S4 | MmaType::U4 | MmaType::B1 | MmaType::E4m3 | MmaType::E5m2
    )
}

/// The form of a `wmma` instruction from its sub-operation (`.load`, `.store`, `.mma`) and its
/// modifiers in written order, or why the CPU does not run it. Modifiers that do not change the
/// emulation (`.sync`, `.aligned`, a state space, mma's layouts: fragments are kept in logical order)
/// are passed over.
pub fn wmma_form(sub: &str, mods: &[&str]) -> Result<WmmaForm, String> {
    use MmaType::*;
    let op = match sub {
        ".load" => WmmaOp::Load,
        ".store" => WmmaOp::Store,
        ".mma" => WmmaOp::Mma,
        _ => return Err(format!("`wmma{sub}` is not a `wmma` operation")),
    };
    let mut types = Vec::new();
    let (mut frag, mut dims) = (None, None);
    let (mut row_major, mut satfinite) = (false, false);
    for &m in mods {
        match m {
            ".a" => frag = Some(WmmaFrag::A),
            ".b" => frag = Some(WmmaFrag::B),
            ".c" | ".d" => frag = Some(WmmaFrag::C),
            ".row" => row_major = true,
            ".satfinite" => satfinite = true,
            _ => match (MmaType::parse(m), shape(m)) {
                (Some(S4 | U4 | B1), _) => return Err("sub-byte `wmma` forms are not run on the CPU yet".into()),
                (Some(E4m3 | E5m2), _) => return Err(format!("`wmma` has no `{m}` form")),
                (Some(t), _) => types.push(t),
                (None, Some(s)) if dims.is_none() => dims = Some(s),
                _ => {}
            },
        }
    }
    let (m, n, k) = dims.ok_or("needs a shape such as `.m16n16k16`")?;
    if [m * n, m * k, k * n].iter().any(|e| e % 32 != 0) {
        return Err(format!("`.m{m}n{n}k{k}` does not split evenly over a warp"));
    }
    let (d, a, b, c) = match (op, types.as_slice()) {
        (WmmaOp::Mma, [d, c]) => (*d, F16, F16, *c),
        (WmmaOp::Mma, [d, a, b, c]) => (*d, *a, *b, *c),
        (WmmaOp::Mma, _) => return Err("`wmma.mma` needs two or four types".into()),
        // A load's or store's element type is the last one written.
        (_, [.., t]) => (*t, *t, *t, *t),
        (_, []) => return Err("needs an element type".into()),
    };
    let frag = match op {
        WmmaOp::Mma => WmmaFrag::C,
        _ => frag.ok_or("needs a fragment (`.a`, `.b`, `.c` or `.d`)")?,
    };
    Ok(WmmaForm {
        op,
        frag,
        m,
        n,
        k,
        d,
        a,
        b,
        c,
        row_major,
        satfinite,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(sub: &str, s: &str) -> Result<WmmaForm, String> {
        let mods: Vec<String> = s.split('.').map(|m| format!(".{m}")).collect();
        wmma_form(sub, &mods.iter().map(String::as_str).collect::<Vec<_>>())
    }

    #[test]
    fn forms_and_codes() {
        let load = form(".load", "a.sync.aligned.row.m16n16k16.global.f16").unwrap();
        assert_eq!(
            (load.frag, load.dims(load.frag), load.a, load.row_major),
            (WmmaFrag::A, (16, 16), MmaType::F16, true)
        );
        let store = form(".store", "d.sync.aligned.col.m32n8k16.f32").unwrap();
        assert_eq!(
            (store.frag, store.dims(store.frag), store.row_major),
            (WmmaFrag::C, (32, 8), false)
        );
        let mma = form(".mma", "sync.aligned.row.col.m16n16k16.f32.f16").unwrap();
        assert_eq!(
            (mma.d, mma.a, mma.b, mma.c),
            (MmaType::F32, MmaType::F16, MmaType::F16, MmaType::F16)
        );
        let int = form(".mma", "sync.aligned.row.col.m16n16k16.s32.s8.u8.s32.satfinite").unwrap();
        assert_eq!((int.a, int.b, int.satfinite), (MmaType::S8, MmaType::U8, true));
        for f in [load, store, mma, int] {
            assert_eq!(WmmaForm::from_code(f.code()), Some(f));
        }
        assert_eq!(WmmaForm::from_code(u64::MAX), None);
    }

    #[test]
    fn forms_the_cpu_does_not_run() {
        assert!(form(".mma", "sync.aligned.row.col.m8n8k32.s32.s4.s4.s32").is_err());
        assert!(form(".load", "a.sync.aligned.row.m8n8k128.b1").is_err());
        assert!(form(".mma", "sync.aligned.row.col.m16n16k16.f32").is_err());
        assert!(form(".load", "sync.aligned.row.m16n16k16.f16").is_err());
        assert!(form(".load", "a.sync.aligned.row.m4n4k4.f16").is_err());
    }
}
