//! The ISA table: one declarative description per instruction form, written from the PTX ISA 8.5 manual
//! (chapter 9.7). The checker, the lowering and `ptx-jit explain` all read it; nothing else spells out
//! modifiers.
//!
//! One opcode token (the text before the first dot) may have several entries:
//!
//! - Entries with a `sub` prefix are sub-instructions that the manual documents separately, such as
//!   `cp.async.bulk.tensor` (opcode `cp`, `sub` = `.async .bulk .tensor`) or `mbarrier.arrive`. An
//!   instruction only considers entries whose `sub` is a prefix of its modifiers; longer prefixes first.
//! - Entries without a `sub` but with the same opcode are alternatives (`add` for integers and floats,
//!   `add` for the half-precision types, ...). They are tried in table order and the first one that accepts
//!   all modifiers wins.
//!
//! The first entry of each opcode is its *primary* entry: the one [`lookup`] returns and the one the
//! lowering was written against. Entries added for the rest of the manual come after it, so a form the
//! primary entry accepts always decodes to the primary entry. An extension entry's `ptx`/`sm` are the
//! lowest requirement of the features that lead to it; `reqs` lists what individual modifiers need beyond
//! that (see [`Decoded::requires`]).

use crate::types::Type;

/// What a group of modifiers means. Each group of an entry takes at most one modifier, except the `Type`
/// group, which takes as many as the entry's `types` range allows (`cvt` has two, `mma` four). An entry
/// may have several groups of one kind (`mma`'s two layouts, the destination and source priorities of
/// `createpolicy`); a modifier goes to the first group that lists it and is still empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum G {
    Type,
    Space,
    Round,
    Cmp,
    BoolOp,
    /// `.lo`/`.hi`/`.wide` of `mul`/`mad`, and single-flag forms such as `bfind.shiftamt`,
    /// `vmad.po`, `pmevent.mask`, `brx.idx`, `mbarrier.arrive.expect_tx`.
    Mode,
    Sat,
    Ftz,
    Approx,
    Vec,
    Cache,
    Uni,
    To,
    Sem,
    Scope,
    /// `.l`/`.r` direction and `.clamp`/`.wrap` mode of `shf`.
    Dir,
    Mode2,
    /// The operation of `atom`/`red` (and of other reducing or selecting instructions).
    Op,
    /// `.sync`/`.arrive`/`.aligned` of barriers.
    Sync,
    Cc,
    Size,
    /// Leading modifiers that name a sub-instruction (`cp.async.bulk`, `mbarrier.init`); never in a group,
    /// they are recorded from the entry's `sub` prefix.
    Sub,
    /// `.aligned` of warp- and warpgroup-wide instructions.
    Aligned,
    /// Matrix shape (`.m16n8k16`, `.m8n8`).
    Shape,
    /// Matrix layout (`.row`/`.col`).
    Layout,
    /// `wmma` fragment (`.a`, `.b`, `.c`, `.d`).
    Frag,
    /// `ldmatrix`/`stmatrix` matrix count (`.x1`, `.x2`, `.x4`).
    Num,
    Trans,
    /// Sparse `mma` (`.sp`, `.sp::ordered_metadata`).
    Sparse,
    /// `.popc` of single-bit matrix multiply.
    Popc,
    /// Texture and surface geometry (`.2d`, `.a1d`, `.cube`).
    Geom,
    /// Tensor dimensionality (`.1d` to `.5d`).
    Dim,
    /// Mipmap access of `tex` (`.base`, `.level`, `.grad`), `.level` of `txq`.
    Mip,
    /// `tld4` component.
    Comp,
    /// `txq`/`suq` attribute.
    Query,
    /// Surface out-of-bounds behaviour (`.trap`, `.clamp`, `.zero`).
    Clamp,
    /// Surface addressing (`.b` bytes, `.p` samples).
    Class,
    /// Completion mechanism of asynchronous copies (`.mbarrier::complete_tx::bytes`, `.bulk_group`).
    Completion,
    Multicast,
    /// Tensor load mode (`.tile`, `.im2col`, `.im2col_no_offs`).
    LoadMode,
    /// Source state space of copies whose destination is the `Space` group.
    SrcSpace,
    /// Proxy kind of `fence.proxy`/`membar.proxy`.
    Proxy,
    /// Cache eviction priority (`.L1::evict_last`, `.L2::evict_normal`).
    Evict,
    /// `.L2::cache_hint` (adds a cache-policy operand).
    Hint,
    /// `.L2::64B`, `.L2::128B`, `.L2::256B`.
    Prefetch,
    /// Cache level (`.L1`, `.L2`) of prefetches and cache maintenance.
    Level,
    /// `.nc` of `ld.global.nc`.
    Nc,
    Mmio,
    Relu,
    Nan,
    Xorsign,
    Abs,
    Oob,
    Noftz,
    /// `.acc::f32` of `multimem.ld_reduce`.
    AccPrec,
    /// `vmad` result scaling (`.shr7`, `.shr15`).
    Scale,
    /// `tensormap.replace` field.
    Field,
    /// The `.b1024` object size of `tensormap.replace`.
    Object,
    Parity,
    /// `.read` of `cp.async.bulk.wait_group`.
    Read,
    Noinc,
}

#[derive(Debug)]
pub struct Group {
    pub kind: G,
    pub values: &'static [&'static str],
    pub required: bool,
}

/// A requirement that one modifier value adds to its entry's base requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Req {
    pub value: &'static str,
    pub ptx: (u32, u32),
    pub sm: u32,
}

#[derive(Debug)]
pub struct OpSpec {
    /// The opcode token: the text before the first dot.
    pub name: &'static str,
    /// Leading modifiers that select this entry among those of the same opcode (`.async .bulk` for
    /// `cp.async.bulk`); empty for most entries.
    pub sub: &'static [&'static str],
    /// The manual section (a [`SECTIONS`] number).
    pub section: &'static str,
    pub summary: &'static str,
    pub groups: &'static [Group],
    /// Operand count, inclusive range.
    pub operands: (u8, u8),
    /// Operand shape for `explain`, in the manual's notation.
    pub syntax: &'static str,
    /// Minimum `.version` (major, minor) and `sm_XX` of the base form.
    pub ptx: (u32, u32),
    pub sm: u32,
    /// Needs an architecture-specific target (`sm_90a`), not just `sm` or later.
    pub arch: bool,
    /// How many `Type` modifiers the instruction takes, inclusive range (1 for most, 2 for `cvt`, 2 to 3
    /// for `cvt.pack`, 4 for `mma`).
    pub types: (u8, u8),
    /// Modifier values that raise the requirement above `ptx`/`sm`.
    pub reqs: &'static [Req],
}

impl OpSpec {
    /// The opcode with its `sub` prefix, as the manual writes it: `cp.async.bulk`, `mbarrier.arrive`.
    pub fn form(&self) -> String {
        let mut s = self.name.to_string();
        for m in self.sub {
            s.push_str(m);
        }
        s
    }

    /// Whether this is the first entry of its opcode (the one [`lookup`] returns).
    pub fn is_primary(&'static self) -> bool {
        decode::is_primary(self)
    }
}

/// An instruction section of chapter 9.7 of the PTX ISA 8.5 manual.
#[derive(Debug)]
pub struct Section {
    pub number: &'static str,
    /// The heading's text after the colon.
    pub title: &'static str,
    /// The forms (see [`OpSpec::form`]) of the entries that cover the section.
    pub opcodes: &'static [&'static str],
}

macro_rules! g {
    ($k:ident, $v:expr) => {
        Group {
            kind: G::$k,
            values: $v,
            required: false,
        }
    };
    ($k:ident, $v:expr, required) => {
        Group {
            kind: G::$k,
            values: $v,
            required: true,
        }
    };
}

macro_rules! r {
    ($v:literal, $maj:literal, $min:literal, $sm:literal) => {
        Req {
            value: $v,
            ptx: ($maj, $min),
            sm: $sm,
        }
    };
}

/// `op!(name [sub...], section, summary, syntax, (min, max operands), ptx (major, minor), sm N [arch],
/// types N [to M], [groups] [, reqs [...]])`.
macro_rules! op {
    (@arch) => {
        false
    };
    (@arch $a:ident) => {
        true
    };
    (@reqs) => {
        &[]
    };
    (@reqs $r:expr) => {
        $r
    };
    ($name:literal $([$($sub:literal),+])?, $sec:literal, $sum:literal, $syn:expr, ($lo:literal, $hi:literal),
     ptx ($pm:literal, $pn:literal), sm $sm:literal $($arch:ident)?, types $t0:literal $(to $t1:literal)?,
     [$($g:expr),* $(,)?] $(, reqs $reqs:expr)?) => {
        OpSpec {
            name: $name,
            sub: &[$($($sub),+)?],
            section: $sec,
            summary: $sum,
            syntax: $syn,
            operands: ($lo, $hi),
            ptx: ($pm, $pn),
            sm: $sm,
            arch: op!(@arch $($arch)?),
            types: ($t0, $t0 $(+ $t1 - $t0)?),
            groups: &[$($g),*],
            reqs: op!(@reqs $($reqs)?),
        }
    };
}

/// The scalar video instructions that share one syntax (9.7.18.1.1).
macro_rules! video {
    ($name:literal, $sec:literal, $sum:literal) => {
        op!($name, $sec, $sum, concat!($name, ".dtype.atype.btype{.sat}{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};  .op2 = { .add, .min, .max }"),
            (3, 4), ptx (2, 0), sm 20, types 3,
            [g!(Type, VIDEO, required), g!(Sat, &[".sat"]), g!(Op, &[".add", ".min", ".max"])])
    };
}

/// The SIMD video instructions that share one syntax (9.7.18.2.1, 9.7.18.2.3).
macro_rules! simd {
    ($name:literal, $sec:literal, $sum:literal) => {
        op!($name, $sec, $sum, concat!($name, ".dtype.atype.btype{.sat} d{.mask}, a{.asel}, b{.bsel}, c; ", $name, ".dtype.atype.btype.add d{.mask}, a{.asel}, b{.bsel}, c;"),
            (4, 4), ptx (3, 0), sm 30, types 3,
            [g!(Type, VIDEO, required), g!(Sat, &[".sat"]), g!(Op, &[".add"])])
    };
}

// The table (`table`), decoding an instruction against it (`decode`), the manual's sections with the
// descriptions `ptx-jit explain` prints (`sections`), the forms of `mma` and `wgmma` that exist (`mma`,
// `wgmma`), the `wmma` forms the CPU runs (`wmma`), the narrow-float conversions (`narrow`) and the
// video instructions' part selectors (`video`).
mod decode;
mod mma;
mod narrow;
mod sections;
mod table;
mod video;
mod wgmma;
mod wmma;

pub use decode::*;
pub use mma::*;
pub use narrow::*;
pub use sections::*;
pub use table::TABLE;
pub use video::*;
pub use wgmma::*;
pub use wmma::*;

/// The types `cvt.pack` takes, as written after `.pack.sat`: to 16 bits from two `.s32` values, or to 8,
/// 4 or 2 bits into the low bits of a `.b32` (ptxas refuses every other combination).
pub const CVT_PACK_TYPES: [&[&str]; 8] = [
    &[".u16", ".s32"],
    &[".s16", ".s32"],
    &[".u8", ".s32", ".b32"],
    &[".s8", ".s32", ".b32"],
    &[".u4", ".s32", ".b32"],
    &[".s4", ".s32", ".b32"],
    &[".u2", ".s32", ".b32"],
    &[".s2", ".s32", ".b32"],
];

/// The dimensions a tensor instruction names (`.2d`: 2), 1 without.
pub fn tensor_dims(d: &Decoded) -> usize {
    d.get(G::Dim).and_then(|m| m.get(1..2)?.parse().ok()).unwrap_or(1)
}

/// The operations and element types of `cp.reduce.async.bulk` into `dst` (ptxas 13.5): into `.global`,
/// adds of half-precision values need `.noftz` and their min and max take none; into another CTA's
/// `.shared::cluster`, only 32-bit integers and 64-bit adds and bit operations' `.b32`.
pub fn bulk_reduce_takes(dst: &str, op: &str, ty: &str, noftz: bool) -> bool {
    let half = matches!(ty, ".f16" | ".bf16");
    if dst == ".shared::cluster" {
        return !noftz
            && match op {
                ".add" => matches!(ty, ".u32" | ".s32" | ".u64"),
                ".min" | ".max" => matches!(ty, ".u32" | ".s32"),
                ".inc" | ".dec" => ty == ".u32",
                _ => ty == ".b32",
            };
    }
    noftz == (half && op == ".add")
        && match op {
            ".add" => matches!(ty, ".u32" | ".s32" | ".u64" | ".f32" | ".f64") || half,
            ".min" | ".max" => matches!(ty, ".u32" | ".s32" | ".u64" | ".s64") || half,
            ".inc" | ".dec" => ty == ".u32",
            ".and" | ".or" | ".xor" => matches!(ty, ".b32" | ".b64"),
            _ => false,
        }
}

/// The operations and element types of `sured` (the manual, 9.7.12.3, and ptxas 13.5): byte-addressed
/// (`.b`) adds take .u32 .u64 .s32, min/max .u32 .u64 .s32 .s64, and/or .b32; sample-addressed (`.p`)
/// data is .b32, or .b64 for min/max.
pub fn sured_takes(class: &str, op: &str, ty: &str) -> bool {
    match (class, op) {
        (".b", ".add") => matches!(ty, ".u32" | ".u64" | ".s32"),
        (".b", ".min" | ".max") => matches!(ty, ".u32" | ".u64" | ".s32" | ".s64"),
        (".p", ".min" | ".max") => matches!(ty, ".b32" | ".b64"),
        (_, _) => ty == ".b32",
    }
}

#[cfg(test)]
mod tests;
