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
    pub fn is_primary(&self) -> bool {
        entries(self.name).first().is_some_and(|s| std::ptr::eq(*s, self))
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

const INT: &[&str] = &[".u16", ".u32", ".u64", ".s16", ".s32", ".s64"];
const ARITH: &[&str] = &[".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"];
const FLOAT: &[&str] = &[".f32", ".f64"];
const BITS: &[&str] = &[".pred", ".b16", ".b32", ".b64"];
const SHIFT: &[&str] = &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64"];
const ANY: &[&str] = &[
    ".pred", ".b8", ".b16", ".b32", ".b64", ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32", ".s64", ".f32",
    ".f64",
];
const MEMTY: &[&str] = &[
    ".b8", ".b16", ".b32", ".b64", ".b128", ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32", ".s64", ".f32",
    ".f64",
];
const CVTTY: &[&str] = &[
    ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32", ".s64", ".f16", ".bf16", ".f16x2", ".bf16x2", ".f32", ".f64",
];
const CVTTY_EXT: &[&str] = &[
    ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32", ".s64", ".f16", ".bf16", ".f16x2", ".bf16x2", ".tf32",
    ".f32", ".f64", ".e4m3x2", ".e5m2x2",
];
const ATOMTY: &[&str] = &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f32", ".f64"];
const ATOMTY_EXT: &[&str] = &[
    ".b16", ".b32", ".b64", ".b128", ".u32", ".u64", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32",
    ".f64",
];
const ATOMOP: &[&str] = &[
    ".and", ".or", ".xor", ".cas", ".exch", ".add", ".inc", ".dec", ".min", ".max",
];
const REDOP: &[&str] = &[".and", ".or", ".xor", ".add", ".inc", ".dec", ".min", ".max"];
const CARRYTY: &[&str] = &[".u32", ".s32", ".u64", ".s64"];
const ROUND: &[&str] = &[".rn", ".rz", ".rm", ".rp"];
const CVT_ROUND: &[&str] = &[".rn", ".rz", ".rm", ".rp", ".rni", ".rzi", ".rmi", ".rpi"];
const CMP: &[&str] = &[
    ".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".lo", ".ls", ".hi", ".hs", ".equ", ".neu", ".ltu", ".leu", ".gtu",
    ".geu", ".num", ".nan",
];
/// The comparisons of the half-precision `set`/`setp` (no unsigned-integer ones).
const HCMP: &[&str] = &[
    ".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".equ", ".neu", ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan",
];
const SPACES: &[&str] = &[
    ".global",
    ".shared",
    ".shared::cta",
    ".local",
    ".const",
    ".param",
    ".param::entry",
    ".param::func",
];
const LD_SPACES: &[&str] = &[
    ".global",
    ".shared",
    ".shared::cta",
    ".shared::cluster",
    ".local",
    ".const",
    ".param",
    ".param::entry",
    ".param::func",
];
const ST_SPACES: &[&str] = &[
    ".global",
    ".shared",
    ".shared::cta",
    ".shared::cluster",
    ".local",
    ".param",
    ".param::func",
];
const HALF: &[&str] = &[".f16", ".f16x2", ".bf16", ".bf16x2"];
const SCOPES: &[&str] = &[".cta", ".cluster", ".gpu", ".sys"];
const SHARED_CTA: &[&str] = &[".shared", ".shared::cta"];
const SHARED_ANY: &[&str] = &[".shared", ".shared::cta", ".shared::cluster"];
const EVICT_L1: &[&str] = &[
    ".L1::evict_normal",
    ".L1::evict_unchanged",
    ".L1::evict_first",
    ".L1::evict_last",
    ".L1::no_allocate",
];
const EVICT_L2: &[&str] = &[
    ".L2::evict_last",
    ".L2::evict_normal",
    ".L2::evict_first",
    ".L2::evict_unchanged",
];
const HINT: &[&str] = &[".L2::cache_hint"];
const PREFETCH: &[&str] = &[".L2::64B", ".L2::128B", ".L2::256B"];
const DIMS: &[&str] = &[".1d", ".2d", ".3d", ".4d", ".5d"];
const TX: &[&str] = &[".mbarrier::complete_tx::bytes"];
const VIDEO: &[&str] = &[".u32", ".s32"];
const VCMP: &[&str] = &[".eq", ".ne", ".lt", ".le", ".gt", ".ge"];
const MMA_SHAPES: &[&str] = &[
    ".m8n8k4",
    ".m16n8k4",
    ".m16n8k8",
    ".m16n8k16",
    ".m16n8k32",
    ".m8n8k16",
    ".m8n8k32",
    ".m16n8k64",
    ".m8n8k128",
    ".m16n8k128",
    ".m16n8k256",
];
const MMA_TYPES: &[&str] = &[
    ".f16", ".f32", ".f64", ".bf16", ".tf32", ".e4m3", ".e5m2", ".s32", ".s8", ".u8", ".s4", ".u4", ".b1",
];
const WMMA_SHAPES: &[&str] = &[
    ".m16n16k16",
    ".m8n32k16",
    ".m32n8k16",
    ".m16n16k8",
    ".m8n8k4",
    ".m8n8k32",
    ".m8n8k128",
];
const WMMA_REQS: &[Req] = &[
    r!(".m8n32k16", 6, 1, 70),
    r!(".m32n8k16", 6, 1, 70),
    r!(".s8", 6, 3, 72),
    r!(".u8", 6, 3, 72),
    r!(".s32", 6, 3, 72),
    r!(".m8n8k32", 6, 3, 75),
    r!(".m8n8k128", 6, 3, 75),
    r!(".s4", 6, 3, 75),
    r!(".u4", 6, 3, 75),
    r!(".b1", 6, 3, 75),
    r!(".m16n16k8", 7, 0, 80),
    r!(".m8n8k4", 7, 0, 80),
    r!(".bf16", 7, 0, 80),
    r!(".tf32", 7, 0, 80),
    r!(".f64", 7, 0, 80),
    r!(".shared::cta", 7, 8, 70),
];
const WMMA_MMA_REQS: &[Req] = &[
    r!(".m8n32k16", 6, 1, 70),
    r!(".m32n8k16", 6, 1, 70),
    r!(".s8", 6, 3, 72),
    r!(".u8", 6, 3, 72),
    r!(".s32", 6, 3, 72),
    r!(".m8n8k32", 6, 3, 75),
    r!(".m8n8k128", 6, 3, 75),
    r!(".s4", 6, 3, 75),
    r!(".u4", 6, 3, 75),
    r!(".b1", 6, 3, 75),
    r!(".m16n16k8", 7, 0, 80),
    r!(".m8n8k4", 7, 0, 80),
    r!(".bf16", 7, 0, 80),
    r!(".tf32", 7, 0, 80),
    r!(".f64", 7, 0, 80),
    r!(".and", 7, 1, 80),
];
const WMMA_STORE_REQS: &[Req] = &[
    r!(".m8n32k16", 6, 1, 70),
    r!(".m32n8k16", 6, 1, 70),
    r!(".s32", 6, 3, 72),
    r!(".m8n8k32", 6, 3, 75),
    r!(".m8n8k128", 6, 3, 75),
    r!(".m16n16k8", 7, 0, 80),
    r!(".m8n8k4", 7, 0, 80),
    r!(".f64", 7, 0, 80),
    r!(".shared::cta", 7, 8, 70),
];
const BF16_78: &[Req] = &[r!(".bf16", 7, 8, 90), r!(".bf16x2", 7, 8, 90)];
const BF16_70: &[Req] = &[r!(".bf16", 7, 0, 80), r!(".bf16x2", 7, 0, 80)];
const XORSIGN: &[Req] = &[r!(".xorsign", 7, 2, 86), r!(".abs", 7, 2, 86)];

const WGMMA_SHAPES: &[&str] = &[
    ".m64n8k16",
    ".m64n16k16",
    ".m64n24k16",
    ".m64n32k16",
    ".m64n40k16",
    ".m64n48k16",
    ".m64n56k16",
    ".m64n64k16",
    ".m64n72k16",
    ".m64n80k16",
    ".m64n88k16",
    ".m64n96k16",
    ".m64n104k16",
    ".m64n112k16",
    ".m64n120k16",
    ".m64n128k16",
    ".m64n136k16",
    ".m64n144k16",
    ".m64n152k16",
    ".m64n160k16",
    ".m64n168k16",
    ".m64n176k16",
    ".m64n184k16",
    ".m64n192k16",
    ".m64n200k16",
    ".m64n208k16",
    ".m64n216k16",
    ".m64n224k16",
    ".m64n232k16",
    ".m64n240k16",
    ".m64n248k16",
    ".m64n256k16",
    ".m64n8k8",
    ".m64n16k8",
    ".m64n24k8",
    ".m64n32k8",
    ".m64n40k8",
    ".m64n48k8",
    ".m64n56k8",
    ".m64n64k8",
    ".m64n72k8",
    ".m64n80k8",
    ".m64n88k8",
    ".m64n96k8",
    ".m64n104k8",
    ".m64n112k8",
    ".m64n120k8",
    ".m64n128k8",
    ".m64n136k8",
    ".m64n144k8",
    ".m64n152k8",
    ".m64n160k8",
    ".m64n168k8",
    ".m64n176k8",
    ".m64n184k8",
    ".m64n192k8",
    ".m64n200k8",
    ".m64n208k8",
    ".m64n216k8",
    ".m64n224k8",
    ".m64n232k8",
    ".m64n240k8",
    ".m64n248k8",
    ".m64n256k8",
    ".m64n8k32",
    ".m64n16k32",
    ".m64n24k32",
    ".m64n32k32",
    ".m64n40k32",
    ".m64n48k32",
    ".m64n56k32",
    ".m64n64k32",
    ".m64n72k32",
    ".m64n80k32",
    ".m64n88k32",
    ".m64n96k32",
    ".m64n104k32",
    ".m64n112k32",
    ".m64n120k32",
    ".m64n128k32",
    ".m64n136k32",
    ".m64n144k32",
    ".m64n152k32",
    ".m64n160k32",
    ".m64n168k32",
    ".m64n176k32",
    ".m64n184k32",
    ".m64n192k32",
    ".m64n200k32",
    ".m64n208k32",
    ".m64n216k32",
    ".m64n224k32",
    ".m64n232k32",
    ".m64n240k32",
    ".m64n248k32",
    ".m64n256k32",
    ".m64n8k256",
    ".m64n16k256",
    ".m64n24k256",
    ".m64n32k256",
    ".m64n48k256",
    ".m64n64k256",
    ".m64n80k256",
    ".m64n96k256",
    ".m64n112k256",
    ".m64n128k256",
    ".m64n144k256",
    ".m64n160k256",
    ".m64n176k256",
    ".m64n192k256",
    ".m64n208k256",
    ".m64n224k256",
    ".m64n240k256",
    ".m64n256k256",
];
const WGMMA_SP_SHAPES: &[&str] = &[
    ".m64n8k32",
    ".m64n16k32",
    ".m64n24k32",
    ".m64n32k32",
    ".m64n40k32",
    ".m64n48k32",
    ".m64n56k32",
    ".m64n64k32",
    ".m64n72k32",
    ".m64n80k32",
    ".m64n88k32",
    ".m64n96k32",
    ".m64n104k32",
    ".m64n112k32",
    ".m64n120k32",
    ".m64n128k32",
    ".m64n136k32",
    ".m64n144k32",
    ".m64n152k32",
    ".m64n160k32",
    ".m64n168k32",
    ".m64n176k32",
    ".m64n184k32",
    ".m64n192k32",
    ".m64n200k32",
    ".m64n208k32",
    ".m64n216k32",
    ".m64n224k32",
    ".m64n232k32",
    ".m64n240k32",
    ".m64n248k32",
    ".m64n256k32",
    ".m64n8k16",
    ".m64n16k16",
    ".m64n24k16",
    ".m64n32k16",
    ".m64n40k16",
    ".m64n48k16",
    ".m64n56k16",
    ".m64n64k16",
    ".m64n72k16",
    ".m64n80k16",
    ".m64n88k16",
    ".m64n96k16",
    ".m64n104k16",
    ".m64n112k16",
    ".m64n120k16",
    ".m64n128k16",
    ".m64n136k16",
    ".m64n144k16",
    ".m64n152k16",
    ".m64n160k16",
    ".m64n168k16",
    ".m64n176k16",
    ".m64n184k16",
    ".m64n192k16",
    ".m64n200k16",
    ".m64n208k16",
    ".m64n216k16",
    ".m64n224k16",
    ".m64n232k16",
    ".m64n240k16",
    ".m64n248k16",
    ".m64n256k16",
    ".m64n8k64",
    ".m64n16k64",
    ".m64n24k64",
    ".m64n32k64",
    ".m64n40k64",
    ".m64n48k64",
    ".m64n56k64",
    ".m64n64k64",
    ".m64n72k64",
    ".m64n80k64",
    ".m64n88k64",
    ".m64n96k64",
    ".m64n104k64",
    ".m64n112k64",
    ".m64n120k64",
    ".m64n128k64",
    ".m64n136k64",
    ".m64n144k64",
    ".m64n152k64",
    ".m64n160k64",
    ".m64n168k64",
    ".m64n176k64",
    ".m64n184k64",
    ".m64n192k64",
    ".m64n200k64",
    ".m64n208k64",
    ".m64n216k64",
    ".m64n224k64",
    ".m64n232k64",
    ".m64n240k64",
    ".m64n248k64",
    ".m64n256k64",
];

pub static TABLE: &[OpSpec] = &[
    // ---- Primary entries: the forms the checker and the lowering were first written against. ----
    op!("add", "9.7.1.1", "Add two values.", "add{.sat}{.rnd}{.ftz}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Sat, &[".sat"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Cc, &[".cc"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("sub", "9.7.1.2", "Subtract one value from another.", "sub{.sat}{.rnd}{.ftz}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Sat, &[".sat"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Cc, &[".cc"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("mul", "9.7.1.3", "Multiply two values; integers keep the low, high or whole (wide) product.", "mul{.hi,.lo,.wide}{.rnd}{.ftz}{.sat}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Mode, &[".lo", ".hi", ".wide"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("mad", "9.7.1.4", "Multiply two values and add a third.", "mad{.hi,.lo,.wide}{.rnd}{.ftz}{.sat}.type d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Mode, &[".lo", ".hi", ".wide"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"]), g!(Cc, &[".cc"])],
        reqs &[r!(".f64", 1, 0, 13), r!(".cc", 3, 0, 20)]),
    op!("addc", "9.7.2.2", "Add with carry-in (and optional carry-out).", "addc{.cc}.type d, a, b;", (3, 3), ptx (1, 2), sm 10, types 1,
        [g!(Type, CARRYTY, required), g!(Cc, &[".cc"])],
        reqs &[r!(".u64", 4, 3, 20), r!(".s64", 4, 3, 20)]),
    op!("subc", "9.7.2.4", "Subtract with borrow-in (and optional borrow-out).", "subc{.cc}.type d, a, b;", (3, 3), ptx (1, 2), sm 10, types 1,
        [g!(Type, CARRYTY, required), g!(Cc, &[".cc"])],
        reqs &[r!(".u64", 4, 3, 20), r!(".s64", 4, 3, 20)]),
    // ptxas knows no `madc` without a half: `.lo` or `.hi` is required in practice.
    op!("madc", "9.7.2.6", "Multiply, then add with carry-in (and optional carry-out).", "madc{.hi,.lo}{.cc}.type d, a, b, c;", (4, 4), ptx (3, 0), sm 20, types 1,
        [g!(Type, CARRYTY, required), g!(Mode, &[".lo", ".hi"], required), g!(Cc, &[".cc"])],
        reqs &[r!(".u64", 4, 3, 20), r!(".s64", 4, 3, 20)]),
    op!("fma", "9.7.3.6", "Fused multiply-add with a single rounding.", "fma.rnd{.ftz}{.sat}.type d, a, b, c;", (4, 4), ptx (1, 4), sm 20, types 1,
        [g!(Type, FLOAT, required), g!(Round, ROUND, required), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])],
        reqs &[r!(".f32", 2, 0, 20)]),
    op!("copysign", "9.7.3.2", "Copy the sign bit of a into b.", "copysign.type d, a, b;", (3, 3), ptx (2, 0), sm 20, types 1,
        [g!(Type, FLOAT, required)]),
    op!("div", "9.7.1.8", "Divide one value by another.", "div{.approx,.full,.rnd}{.ftz}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Round, ROUND), g!(Approx, &[".approx", ".full"]), g!(Ftz, &[".ftz"])],
        reqs &[r!(".approx", 1, 4, 10), r!(".full", 1, 4, 10), r!(".rz", 1, 4, 20), r!(".rm", 1, 4, 20), r!(".rp", 1, 4, 20), r!(".f64", 1, 0, 13)]),
    op!("rem", "9.7.1.9", "Remainder of integer division.", "rem.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, INT, required)]),
    op!("min", "9.7.1.12", "Minimum of two values.", "min{.ftz}{.NaN}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("max", "9.7.1.13", "Maximum of two values.", "max{.ftz}{.NaN}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("neg", "9.7.1.11", "Arithmetic negation.", "neg{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".s16", ".s32", ".s64", ".f32", ".f64"], required), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("abs", "9.7.1.10", "Absolute value.", "abs{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".s16", ".s32", ".s64", ".f32", ".f64"], required), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("and", "9.7.9.1", "Bitwise AND.", "and.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("or", "9.7.9.2", "Bitwise OR.", "or.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("xor", "9.7.9.3", "Bitwise exclusive OR.", "xor.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("not", "9.7.9.4", "Bitwise negation.", "not.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("shl", "9.7.9.8", "Shift left, zero-filling.", "shl.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64"], required)]),
    op!("shr", "9.7.9.9", "Shift right; signed types fill with the sign bit.", "shr.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, SHIFT, required)]),
    op!("popc", "9.7.1.14", "Count the set bits.", "popc.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("clz", "9.7.1.15", "Count leading zero bits.", "clz.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("brev", "9.7.1.18", "Reverse the order of the bits.", "brev.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("sqrt", "9.7.3.15", "Square root.", "sqrt{.approx,.rnd}{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, FLOAT, required), g!(Round, ROUND), g!(Approx, &[".approx"]), g!(Ftz, &[".ftz"])],
        reqs &[r!(".rz", 2, 0, 20), r!(".rm", 2, 0, 20), r!(".rp", 2, 0, 20), r!(".f64", 1, 0, 13)]),
    op!("rcp", "9.7.3.13", "Reciprocal.", "rcp{.approx,.rnd}{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, FLOAT, required), g!(Round, ROUND), g!(Approx, &[".approx"]), g!(Ftz, &[".ftz"])],
        reqs &[r!(".rz", 2, 0, 20), r!(".rm", 2, 0, 20), r!(".rp", 2, 0, 20), r!(".f64", 1, 0, 13)]),
    op!("rsqrt", "9.7.3.16", "Reciprocal of the square root.", "rsqrt.approx{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, FLOAT, required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("sin", "9.7.3.18", "Sine (approximate).", "sin.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("cos", "9.7.3.19", "Cosine (approximate).", "cos.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("lg2", "9.7.3.20", "Base-2 logarithm (approximate).", "lg2.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("ex2", "9.7.3.21", "Base-2 exponential (approximate).", "ex2.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("atom", "9.7.14.5", "Atomic read-modify-write; d receives the old value.", "atom{.sem}{.scope}{.space}.op.type d, [a], b{, c};", (3, 4), ptx (1, 1), sm 11, types 1,
        [g!(Type, ATOMTY, required), g!(Op, ATOMOP, required), g!(Space, &[".global", ".shared", ".shared::cta"]),
         g!(Sem, &[".relaxed", ".acquire", ".release", ".acq_rel"]), g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"])],
        reqs &[r!(".shared", 1, 2, 12), r!(".f32", 2, 0, 20), r!(".f64", 5, 0, 60), r!(".cta", 5, 0, 60), r!(".gpu", 5, 0, 60),
               r!(".sys", 5, 0, 60), r!(".cluster", 7, 8, 90), r!(".relaxed", 6, 0, 70), r!(".acquire", 6, 0, 70),
               r!(".release", 6, 0, 70), r!(".acq_rel", 6, 0, 70), r!(".shared::cta", 7, 8, 30)]),
    op!("red", "9.7.14.6", "Atomic reduction into memory, without a result.", "red{.sem}{.scope}{.space}.op.type [a], b;", (2, 2), ptx (1, 2), sm 11, types 1,
        [g!(Type, ATOMTY, required), g!(Op, ATOMOP, required), g!(Space, &[".global", ".shared", ".shared::cta"]),
         g!(Sem, &[".relaxed", ".release"]), g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"])],
        reqs &[r!(".shared", 1, 2, 12), r!(".f32", 2, 0, 20), r!(".f64", 5, 0, 60), r!(".cta", 5, 0, 60), r!(".gpu", 5, 0, 60),
               r!(".sys", 5, 0, 60), r!(".cluster", 7, 8, 90), r!(".relaxed", 6, 0, 70), r!(".release", 6, 0, 70),
               r!(".shared::cta", 7, 8, 30)]),
    op!("shf", "9.7.9.7", "Funnel shift of the 64-bit pair b:a.", "shf.{l,r}{.clamp,.wrap}.b32 d, a, b, c;", (4, 4), ptx (3, 1), sm 32, types 1,
        [g!(Type, &[".b32"], required), g!(Dir, &[".l", ".r"], required), g!(Mode2, &[".clamp", ".wrap"], required)]),
    op!("lop3", "9.7.9.6", "Any logic function of three inputs, given as a truth table.", "lop3.b32 d, a, b, c, immLut;", (5, 5), ptx (4, 3), sm 50, types 1,
        [g!(Type, &[".b32"], required)]),
    op!("bfe", "9.7.1.19", "Extract a bit field (sign-extended for signed types).", "bfe.type d, a, b, c;", (4, 4), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".u32", ".u64", ".s32", ".s64"], required)]),
    op!("bfi", "9.7.1.20", "Insert a bit field.", "bfi.type f, a, b, c, d;", (5, 5), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("membar", "9.7.14.4", "Memory barrier at a scope.", "membar.{cta,gl,sys};", (0, 0), ptx (1, 4), sm 10, types 0,
        [g!(Scope, &[".cta", ".gl", ".sys"], required)],
        reqs &[r!(".sys", 2, 0, 20)]),
    op!("fence", "9.7.14.4", "Memory fence with the given semantics and scope.", "fence{.sem}.scope;", (0, 0), ptx (6, 0), sm 70, types 0,
        [g!(Sem, &[".sc", ".acq_rel"]), g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"], required)],
        reqs &[r!(".cluster", 7, 8, 90)]),
    op!("mov", "9.7.10.3", "Copy a register, immediate, special register or the address of a variable.", "mov.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, ANY, required)],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("ld", "9.7.10.8", "Load from a state space.", "ld{.weak,.volatile}{.ss}{.cop}{.vec}.type d, [a];", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, MEMTY, required), g!(Space, SPACES), g!(Sem, &[".weak", ".volatile", ".relaxed", ".acquire"]),
         g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"]), g!(Cache, &[".ca", ".cg", ".cs", ".lu", ".cv", ".nc"]),
         g!(Vec, &[".v2", ".v4", ".v8"])],
        reqs &[r!(".f64", 1, 0, 13), r!(".volatile", 1, 1, 10), r!(".weak", 6, 0, 70), r!(".relaxed", 6, 0, 70), r!(".acquire", 6, 0, 70),
               r!(".cta", 6, 0, 70), r!(".gpu", 6, 0, 70), r!(".sys", 6, 0, 70), r!(".cluster", 7, 8, 90), r!(".ca", 2, 0, 20),
               r!(".cg", 2, 0, 20), r!(".cs", 2, 0, 20), r!(".lu", 2, 0, 20), r!(".cv", 2, 0, 20), r!(".nc", 3, 1, 32),
               r!(".shared::cta", 7, 8, 30), r!(".param::entry", 8, 3, 10), r!(".param::func", 8, 3, 10), r!(".b128", 8, 3, 70), r!(".v8", 8, 8, 100)]),
    op!("st", "9.7.10.11", "Store to a state space.", "st{.weak,.volatile}{.ss}{.cop}{.vec}.type [a], b;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, MEMTY, required), g!(Space, SPACES), g!(Sem, &[".weak", ".volatile", ".relaxed", ".release"]),
         g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"]), g!(Cache, &[".wb", ".cg", ".cs", ".wt"]), g!(Vec, &[".v2", ".v4", ".v8"])],
        reqs &[r!(".f64", 1, 0, 13), r!(".volatile", 1, 1, 10), r!(".weak", 6, 0, 70), r!(".relaxed", 6, 0, 70), r!(".release", 6, 0, 70),
               r!(".cta", 6, 0, 70), r!(".gpu", 6, 0, 70), r!(".sys", 6, 0, 70), r!(".cluster", 7, 8, 90), r!(".wb", 2, 0, 20),
               r!(".cg", 2, 0, 20), r!(".cs", 2, 0, 20), r!(".wt", 2, 0, 20), r!(".shared::cta", 7, 8, 30),
               r!(".param::func", 8, 3, 10), r!(".b128", 8, 3, 70), r!(".v8", 8, 8, 100)]),
    op!("cvt", "9.7.10.20", "Convert between types, with rounding and saturation.", "cvt{.irnd,.frnd}{.ftz}{.sat}.dtype.atype d, a; cvt.frnd.f16x2.f32 d, a, b;", (2, 3), ptx (1, 0), sm 10, types 2,
        [g!(Type, CVTTY, required), g!(Round, CVT_ROUND), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])],
        reqs &[r!(".f64", 1, 0, 13), r!(".f16x2", 7, 0, 80), r!(".bf16", 7, 0, 80), r!(".bf16x2", 7, 0, 80)]),
    op!("cvta", "9.7.10.19", "Convert between a state-space address and a generic address.", "cvta{.to}.space.size d, a;", (2, 2), ptx (2, 0), sm 20, types 0,
        [g!(To, &[".to"]), g!(Space, &[".global", ".shared", ".shared::cta", ".local", ".const", ".param", ".param::entry"], required),
         g!(Size, &[".u32", ".u64"], required)],
        reqs &[r!(".const", 3, 1, 20), r!(".param", 7, 7, 70), r!(".param::entry", 8, 3, 70), r!(".shared::cta", 7, 8, 30)]),
    op!("setp", "9.7.7.2", "Compare two values and set a predicate, optionally combined with another.", "setp.CmpOp{.BoolOp}{.ftz}.type p[|q], a, b{, {!}c};", (3, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required),
         g!(Cmp, CMP, required), g!(BoolOp, &[".and", ".or", ".xor"]), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("set", "9.7.7.1", "Compare and write all ones (or 1.0f) or zero, optionally combined with a predicate.", "set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c};", (3, 4), ptx (1, 0), sm 10, types 2,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required),
         g!(Cmp, CMP, required), g!(BoolOp, &[".and", ".or", ".xor"]), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("prmt", "9.7.10.7", "Permute bytes of the pair b:a.", "prmt.b32{.mode} d, a, b, c;", (4, 4), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32"], required), g!(Dir, &[".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"])]),
    op!("griddepcontrol", "9.7.14.13", "Signal or wait for programmatic dependent launches.", "griddepcontrol.{launch_dependents,wait};", (0, 0), ptx (7, 8), sm 90, types 0,
        [g!(Sync, &[".launch_dependents", ".wait"], required)]),
    op!("selp", "9.7.7.3", "Select between two values by a predicate.", "selp.type d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required)],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("bra", "9.7.13.3", "Branch to a label, optionally under a predicate.", "@p bra{.uni} target;", (1, 1), ptx (1, 0), sm 10, types 0,
        [g!(Uni, &[".uni"])]),
    op!("call", "9.7.13.5", "Call a function, passing .param arguments.", "call{.uni} (ret), func, (args);", (1, 4), ptx (1, 0), sm 10, types 0,
        [g!(Uni, &[".uni"])]),
    op!("ret", "9.7.13.6", "Return from a function (ends the thread in a kernel).", "ret{.uni};", (0, 0), ptx (1, 0), sm 10, types 0,
        [g!(Uni, &[".uni"])]),
    op!("exit", "9.7.13.7", "End the thread.", "exit;", (0, 0), ptx (1, 0), sm 10, types 0, []),
    op!("bar", "9.7.14.1", "Barrier synchronisation of the threads of a CTA (or, with .warp, of a warp).", "bar{.cta}.sync a{, b}; bar.warp.sync membermask;", (1, 2), ptx (1, 0), sm 10, types 0,
        [g!(Sync, &[".sync", ".arrive", ".red"], required), g!(Scope, &[".cta", ".warp"]), g!(Uni, &[".aligned"])],
        reqs &[r!(".arrive", 2, 0, 20), r!(".red", 2, 0, 20), r!(".cta", 7, 8, 10), r!(".warp", 6, 0, 30)]),
    op!("shfl", "9.7.10.6", "Exchange a register between the threads of a warp.", "shfl.sync.mode.b32 d[|p], a, b, c, membermask;", (4, 5), ptx (3, 0), sm 30, types 1,
        [g!(Type, &[".b32"], required), g!(Dir, &[".up", ".down", ".bfly", ".idx"], required), g!(Sync, &[".sync"])],
        reqs &[r!(".sync", 6, 0, 30)]),
    op!("vote", "9.7.14.9", "Vote across the threads of a warp.", "vote.sync.mode.pred d, {!}a, membermask; vote.sync.ballot.b32 d, {!}a, membermask;", (2, 3), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".pred", ".b32"], required), g!(Dir, &[".all", ".any", ".uni", ".ballot"], required), g!(Sync, &[".sync"])],
        reqs &[r!(".sync", 6, 0, 30)]),
    op!("barrier", "9.7.14.1", "Barrier synchronisation; the non-aligned form of bar.", "barrier{.cta}.sync{.aligned} a{, b};", (1, 2), ptx (6, 0), sm 30, types 0,
        [g!(Sync, &[".sync", ".arrive", ".red"], required), g!(Scope, &[".cta"]), g!(Uni, &[".aligned"])],
        reqs &[r!(".cta", 7, 8, 30)]),
    // ---- 9.7.1 Integer arithmetic ----
    op!("add", "9.7.1.1", "Add packed pairs of 16-bit integers, lane by lane.", "add.type d, a, b;  .type = { .u16x2, .s16x2 }", (3, 3), ptx (8, 0), sm 90, types 1,
        [g!(Type, &[".u16x2", ".s16x2"], required)]),
    op!("mul24", "9.7.1.5", "Multiply the low 24 bits of two 32-bit integers; keep the low or high 32 bits of the 48-bit product.", "mul24.mode.type d, a, b;  .mode = { .hi, .lo }", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".u32", ".s32"], required), g!(Mode, &[".hi", ".lo"], required)]),
    op!("mad24", "9.7.1.6", "mul24, then add a third value (optionally saturating for .hi.s32).", "mad24.mode.type d, a, b, c; mad24.hi.sat.s32 d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".u32", ".s32"], required), g!(Mode, &[".hi", ".lo"], required), g!(Sat, &[".sat"])]),
    op!("sad", "9.7.1.7", "Sum of absolute differences: |a - b| + c.", "sad.type d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, INT, required)]),
    op!("bfe", "9.7.1.19", "bfe with a bit-size type, as the manual's own example writes it (extracts like the unsigned form).", "bfe.b32 d, a, b, c;", (4, 4), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("min", "9.7.1.12", "Minimum of packed 16-bit lanes, or of signed values clamped at zero with .relu.", "min.u16x2 d, a, b; min{.relu}.{s16x2,s32} d, a, b;", (3, 3), ptx (8, 0), sm 90, types 1,
        [g!(Type, &[".u16x2", ".s16x2", ".s32"], required), g!(Relu, &[".relu"])]),
    op!("max", "9.7.1.13", "Maximum of packed 16-bit lanes, or of signed values clamped at zero with .relu.", "max.u16x2 d, a, b; max{.relu}.{s16x2,s32} d, a, b;", (3, 3), ptx (8, 0), sm 90, types 1,
        [g!(Type, &[".u16x2", ".s16x2", ".s32"], required), g!(Relu, &[".relu"])]),
    op!("bfind", "9.7.1.16", "Position of the most significant non-sign bit (0xffffffff if none); .shiftamt gives the left shift that normalises it instead.", "bfind{.shiftamt}.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".u32", ".u64", ".s32", ".s64"], required), g!(Mode, &[".shiftamt"])]),
    op!("fns", "9.7.1.17", "Find the bit position of the n-th set bit of a mask, searching up or down from a base position.", "fns.b32 d, mask, base, offset;", (4, 4), ptx (6, 0), sm 30, types 1,
        [g!(Type, &[".b32"], required)]),
    op!("szext", "9.7.1.21", "Sign- or zero-extend the value in the low b bits of a.", "szext.mode.type d, a, b;  .mode = { .clamp, .wrap }", (3, 3), ptx (7, 6), sm 70, types 1,
        [g!(Type, &[".u32", ".s32"], required), g!(Mode2, &[".clamp", ".wrap"], required)]),
    op!("bmsk", "9.7.1.22", "Build a mask of b one bits starting at bit position a.", "bmsk.mode.b32 d, a, b;  .mode = { .clamp, .wrap }", (3, 3), ptx (7, 6), sm 70, types 1,
        [g!(Type, &[".b32"], required), g!(Mode2, &[".clamp", ".wrap"], required)]),
    op!("dp4a", "9.7.1.23", "Dot product of four 8-bit lanes, accumulated into a 32-bit integer.", "dp4a.atype.btype d, a, b, c;", (4, 4), ptx (5, 0), sm 61, types 2,
        [g!(Type, &[".u32", ".s32"], required)]),
    op!("dp2a", "9.7.1.24", "Dot product of two 16-bit lanes of a with the low or high two bytes of b, accumulated into a 32-bit integer.", "dp2a.mode.atype.btype d, a, b, c;  .mode = { .lo, .hi }", (4, 4), ptx (5, 0), sm 61, types 2,
        [g!(Type, &[".u32", ".s32"], required), g!(Mode, &[".lo", ".hi"], required)]),
    // ---- 9.7.3 Floating point ----
    op!("testp", "9.7.3.1", "Test whether a floating-point value is finite, infinite, a number, NaN, normal or subnormal.", "testp.op.type p, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, FLOAT, required), g!(Op, &[".finite", ".infinite", ".number", ".notanumber", ".normal", ".subnormal"], required)]),
    op!("min", "9.7.3.11", "Minimum of two f32 values, propagating NaN (.NaN) or with the xor of the signs on the absolute values (.xorsign.abs).", "min{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b;", (3, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".f32"], required), g!(Ftz, &[".ftz"]), g!(Nan, &[".NaN"]), g!(Xorsign, &[".xorsign"]), g!(Abs, &[".abs"])],
        reqs XORSIGN),
    op!("max", "9.7.3.12", "Maximum of two f32 values, propagating NaN (.NaN) or with the xor of the signs on the absolute values (.xorsign.abs).", "max{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b;", (3, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".f32"], required), g!(Ftz, &[".ftz"]), g!(Nan, &[".NaN"]), g!(Xorsign, &[".xorsign"]), g!(Abs, &[".abs"])],
        reqs XORSIGN),
    op!("tanh", "9.7.3.22", "Hyperbolic tangent (approximate).", "tanh.approx.f32 d, a;", (2, 2), ptx (7, 0), sm 75, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required)]),
    // ---- 9.7.4 Half precision ----
    op!("add", "9.7.4.1", "Add half-precision values (scalars or packed pairs).", "add{.rnd}{.ftz}{.sat}.f16 d, a, b; add{.rnd}{.ftz}{.sat}.f16x2 d, a, b; add{.rnd}.bf16 d, a, b; add{.rnd}.bf16x2 d, a, b;", (3, 3), ptx (4, 2), sm 53, types 1,
        [g!(Type, HALF, required), g!(Round, &[".rn"]), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])],
        reqs BF16_78),
    op!("sub", "9.7.4.2", "Subtract half-precision values (scalars or packed pairs).", "sub{.rnd}{.ftz}{.sat}.f16 d, a, b; sub{.rnd}{.ftz}{.sat}.f16x2 d, a, b; sub{.rnd}.bf16 d, a, b; sub{.rnd}.bf16x2 d, a, b;", (3, 3), ptx (4, 2), sm 53, types 1,
        [g!(Type, HALF, required), g!(Round, &[".rn"]), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])],
        reqs BF16_78),
    op!("mul", "9.7.4.3", "Multiply half-precision values (scalars or packed pairs).", "mul{.rnd}{.ftz}{.sat}.f16 d, a, b; mul{.rnd}{.ftz}{.sat}.f16x2 d, a, b; mul{.rnd}.bf16 d, a, b; mul{.rnd}.bf16x2 d, a, b;", (3, 3), ptx (4, 2), sm 53, types 1,
        [g!(Type, HALF, required), g!(Round, &[".rn"]), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])],
        reqs BF16_78),
    op!("fma", "9.7.4.4", "Fused multiply-add of half-precision values; .relu clamps negative results to zero, .oob zeroes out-of-bounds inputs.", "fma.rnd{.ftz}{.sat}.f16 d, a, b, c; fma.rnd{.ftz}.relu.f16x2 d, a, b, c; fma.rnd{.relu}.bf16 d, a, b, c; fma.rnd.oob{.relu}.type d, a, b, c;", (4, 4), ptx (4, 2), sm 53, types 1,
        [g!(Type, HALF, required), g!(Round, &[".rn"], required), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"]), g!(Relu, &[".relu"]), g!(Oob, &[".oob"])],
        reqs &[r!(".relu", 7, 0, 80), r!(".bf16", 7, 0, 80), r!(".bf16x2", 7, 0, 80), r!(".oob", 8, 1, 90)]),
    op!("neg", "9.7.4.5", "Negate half-precision values.", "neg{.ftz}.f16 d, a; neg{.ftz}.f16x2 d, a; neg.bf16 d, a; neg.bf16x2 d, a;", (2, 2), ptx (6, 0), sm 53, types 1,
        [g!(Type, HALF, required), g!(Ftz, &[".ftz"])],
        reqs BF16_70),
    op!("abs", "9.7.4.6", "Absolute value of half-precision values.", "abs{.ftz}.f16 d, a; abs{.ftz}.f16x2 d, a; abs.bf16 d, a; abs.bf16x2 d, a;", (2, 2), ptx (6, 5), sm 53, types 1,
        [g!(Type, HALF, required), g!(Ftz, &[".ftz"])],
        reqs BF16_70),
    op!("min", "9.7.4.7", "Minimum of half-precision values.", "min{.ftz}{.NaN}{.xorsign.abs}.f16 d, a, b; min{.NaN}{.xorsign.abs}.bf16x2 d, a, b;", (3, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, HALF, required), g!(Ftz, &[".ftz"]), g!(Nan, &[".NaN"]), g!(Xorsign, &[".xorsign"]), g!(Abs, &[".abs"])],
        reqs XORSIGN),
    op!("max", "9.7.4.8", "Maximum of half-precision values.", "max{.ftz}{.NaN}{.xorsign.abs}.f16 d, a, b; max{.NaN}{.xorsign.abs}.bf16x2 d, a, b;", (3, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, HALF, required), g!(Ftz, &[".ftz"]), g!(Nan, &[".NaN"]), g!(Xorsign, &[".xorsign"]), g!(Abs, &[".abs"])],
        reqs XORSIGN),
    op!("tanh", "9.7.4.9", "Hyperbolic tangent of half-precision values (approximate).", "tanh.approx.type d, a;  .type = { .f16, .f16x2, .bf16, .bf16x2 }", (2, 2), ptx (7, 0), sm 75, types 1,
        [g!(Type, HALF, required), g!(Approx, &[".approx"], required)],
        reqs BF16_78),
    op!("ex2", "9.7.4.10", "Base-2 exponential of half-precision values (approximate).", "ex2.approx.atype d, a; ex2.approx.ftz.btype d, a;", (2, 2), ptx (7, 0), sm 75, types 1,
        [g!(Type, HALF, required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])],
        reqs BF16_78),
    // ---- 9.7.7 / 9.7.8 Comparison and selection ----
    op!("slct", "9.7.7.4", "Select a or b by the sign of c (c >= 0 selects a).", "slct.dtype.s32 d, a, b, c; slct{.ftz}.dtype.f32 d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 2,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required), g!(Ftz, &[".ftz"])],
        reqs &[r!(".f64", 1, 0, 13)]),
    op!("set", "9.7.8.1", "Compare half-precision values (or compare into a half-precision result) and write all ones, 1.0 or zero per lane.", "set.CmpOp{.BoolOp}{.ftz}.{f16,bf16}.stype d, a, b{, {!}c}; set.CmpOp{.BoolOp}{.ftz}.dtype.{f16,f16x2,bf16,bf16x2} d, a, b{, {!}c};", (3, 4), ptx (4, 2), sm 53, types 2,
        [g!(Type, &[".f16", ".f16x2", ".bf16", ".bf16x2", ".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required),
         g!(Cmp, HCMP, required), g!(BoolOp, &[".and", ".or", ".xor"]), g!(Ftz, &[".ftz"])],
        reqs BF16_78),
    op!("setp", "9.7.8.2", "Compare half-precision values and set a predicate (two for packed pairs).", "setp.CmpOp{.BoolOp}{.ftz}.type p[|q], a, b{, {!}c};  .type = { .f16, .f16x2, .bf16, .bf16x2 }", (3, 4), ptx (4, 2), sm 53, types 1,
        [g!(Type, HALF, required), g!(Cmp, HCMP, required), g!(BoolOp, &[".and", ".or", ".xor"]), g!(Ftz, &[".ftz"])],
        reqs BF16_78),
    // ---- 9.7.9 Logic and shift ----
    op!("cnot", "9.7.9.5", "C-style logical negation: 1 when a is zero, else 0.", "cnot.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64"], required)]),
    op!("lop3", "9.7.9.6", "lop3 whose result also sets a predicate: (d != 0) combined with q by .and or .or.", "lop3.BoolOp.b32 d|p, a, b, c, immLut, q;", (6, 6), ptx (8, 2), sm 70, types 1,
        [g!(Type, &[".b32"], required), g!(BoolOp, &[".or", ".and"], required)]),
    // ---- 9.7.10 Data movement and conversion ----
    op!("mov", "9.7.10.4", "Move 128 bits, or pack/unpack a 128-bit value from/to 64-bit parts.", "mov.b128 d, a;", (2, 2), ptx (8, 3), sm 70, types 1,
        [g!(Type, &[".b128"], required)]),
    op!("mov", "9.7.10.3", "Copy a whole vector register (or a brace list of scalars) of two or four elements.", "mov.vec.type d, a;  .vec = { .v2, .v4 }", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, ANY, required), g!(Vec, &[".v2", ".v4"], required)]),
    op!("ld", "9.7.10.8", "Load with cache-eviction, L2 cache-policy or L2 prefetch hints, from a cluster's shared memory, or as an MMIO access.", "ld{.weak}{.ss}{.cop}{.level::cache_hint}{.level::prefetch_size}{.vec}.type d, [a]{.unified}{, cache-policy}; ld{.sem.scope}{.ss}{.level::eviction_priority}{.level::cache_hint}{.level::prefetch_size}{.vec}.type d, [a]{, cache-policy}; ld.mmio.relaxed.sys{.global}.type d, [a];", (2, 3), ptx (7, 4), sm 70, types 1,
        [g!(Type, MEMTY, required), g!(Space, LD_SPACES), g!(Mmio, &[".mmio"]), g!(Sem, &[".weak", ".volatile", ".relaxed", ".acquire"]),
         g!(Scope, SCOPES), g!(Cache, &[".ca", ".cg", ".cs", ".lu", ".cv"]), g!(Evict, EVICT_L1), g!(Hint, HINT), g!(Prefetch, PREFETCH),
         g!(Vec, &[".v2", ".v4"])],
        reqs &[r!(".L2::64B", 7, 4, 75), r!(".L2::128B", 7, 4, 75), r!(".L2::256B", 7, 4, 80), r!(".L2::cache_hint", 7, 4, 80),
               r!(".shared::cluster", 7, 8, 90), r!(".cluster", 7, 8, 90), r!(".mmio", 8, 2, 70), r!(".b128", 8, 3, 70)]),
    op!("ld", "9.7.10.9", "Load from global memory through the non-coherent (read-only) cache.", "ld.global{.cop}.nc{.level::cache_hint}{.level::prefetch_size}{.vec}.type d, [a]{, cache-policy}; ld.global.nc{.level::eviction_priority}{.level::cache_hint}{.level::prefetch_size}{.vec}.type d, [a]{, cache-policy};", (2, 3), ptx (3, 1), sm 32, types 1,
        [g!(Type, MEMTY, required), g!(Space, &[".global"], required), g!(Nc, &[".nc"], required), g!(Cache, &[".ca", ".cg", ".cs"]),
         g!(Evict, EVICT_L1), g!(Hint, HINT), g!(Prefetch, PREFETCH), g!(Vec, &[".v2", ".v4"])],
        reqs &[r!(".L1::evict_normal", 7, 4, 70), r!(".L1::evict_unchanged", 7, 4, 70), r!(".L1::evict_first", 7, 4, 70),
               r!(".L1::evict_last", 7, 4, 70), r!(".L1::no_allocate", 7, 4, 70), r!(".L2::64B", 7, 4, 75), r!(".L2::128B", 7, 4, 75),
               r!(".L2::256B", 7, 4, 75), r!(".L2::cache_hint", 7, 4, 80), r!(".b128", 8, 3, 70)]),
    op!("ldu", "9.7.10.10", "Load a value that is the same for all threads of a warp (uniform), read-only for the kernel's lifetime.", "ldu{.ss}{.vec}.type d, [a];  .ss = { .global }", (2, 2), ptx (2, 0), sm 10, types 1,
        [g!(Type, MEMTY, required), g!(Space, &[".global"]), g!(Vec, &[".v2", ".v4"])],
        reqs &[r!(".f64", 2, 0, 13), r!(".b128", 8, 3, 70)]),
    op!("st", "9.7.10.11", "Store with cache-eviction or L2 cache-policy hints, to a cluster's shared memory, or as an MMIO access.", "st{.weak}{.ss}{.cop}{.level::cache_hint}{.vec}.type [a], b{, cache-policy}; st{.sem.scope}{.ss}{.level::eviction_priority}{.level::cache_hint}{.vec}.type [a], b{, cache-policy}; st.mmio.relaxed.sys{.global}.type [a], b;", (2, 3), ptx (7, 4), sm 70, types 1,
        [g!(Type, MEMTY, required), g!(Space, ST_SPACES), g!(Mmio, &[".mmio"]), g!(Sem, &[".weak", ".volatile", ".relaxed", ".release"]),
         g!(Scope, SCOPES), g!(Cache, &[".wb", ".cg", ".cs", ".wt"]), g!(Evict, EVICT_L1), g!(Hint, HINT), g!(Vec, &[".v2", ".v4"])],
        reqs &[r!(".L2::cache_hint", 7, 4, 80), r!(".shared::cluster", 7, 8, 90), r!(".cluster", 7, 8, 90), r!(".mmio", 8, 2, 70),
               r!(".b128", 8, 3, 70)]),
    op!("st" [".async"], "9.7.10.12", "Asynchronous store to another CTA's shared memory in the cluster; completion is counted on an mbarrier.", "st.async{.weak}{.ss}{.completion_mechanism}{.vec}.type [a], b, [mbar];  .ss = { .shared::cluster }", (3, 3), ptx (8, 1), sm 90, types 1,
        [g!(Type, &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f32", ".f64"], required), g!(Sem, &[".weak"]),
         g!(Space, &[".shared::cluster"]), g!(Completion, TX), g!(Vec, &[".v2", ".v4"])]),
    op!("multimem" [".ld_reduce"], "9.7.10.13", "Load from every memory of a multimem address and reduce the values.", "multimem.ld_reduce{.ldsem}{.scope}{.ss}.op{.acc_prec}{.vec}.type d, [a];", (2, 2), ptx (8, 1), sm 90, types 1,
        [g!(Type, &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64"], required),
         g!(Op, &[".min", ".max", ".add", ".and", ".or", ".xor"], required), g!(Sem, &[".weak", ".relaxed", ".acquire"]),
         g!(Scope, SCOPES), g!(Space, &[".global"]), g!(AccPrec, &[".acc::f32"]), g!(Vec, &[".v2", ".v4", ".v8"])],
        reqs &[r!(".acc::f32", 8, 2, 90)]),
    op!("multimem" [".st"], "9.7.10.13", "Store to every memory of a multimem address.", "multimem.st{.stsem}{.scope}{.ss}{.vec}.type [a], b;", (2, 2), ptx (8, 1), sm 90, types 1,
        [g!(Type, &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64"], required),
         g!(Sem, &[".weak", ".relaxed", ".release"]), g!(Scope, SCOPES), g!(Space, &[".global"]), g!(Vec, &[".v2", ".v4", ".v8"])]),
    op!("multimem" [".red"], "9.7.10.13", "Reduce a value into every memory of a multimem address.", "multimem.red{.redsem}{.scope}{.ss}.op{.vec}.type [a], b;", (2, 2), ptx (8, 1), sm 90, types 1,
        [g!(Type, &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64"], required),
         g!(Op, &[".min", ".max", ".add", ".and", ".or", ".xor"], required), g!(Sem, &[".relaxed", ".release"]), g!(Scope, SCOPES),
         g!(Space, &[".global"]), g!(Vec, &[".v2", ".v4", ".v8"])]),
    op!("prefetch", "9.7.10.14", "Bring a line into a cache level (or a tensor map into the cache) without loading a value.", "prefetch{.space}.level [a]; prefetch.global.level::eviction_priority [a]; prefetch{.tensormap_space}.tensormap [a];", (1, 1), ptx (2, 0), sm 20, types 0,
        [g!(Level, &[".L1", ".L2", ".L2::evict_last", ".L2::evict_normal", ".tensormap"], required), g!(Space, &[".global", ".local", ".const", ".param"])],
        reqs &[r!(".L2::evict_last", 7, 4, 80), r!(".L2::evict_normal", 7, 4, 80), r!(".tensormap", 8, 0, 90)]),
    op!("prefetchu", "9.7.10.14", "Bring a line into the uniform cache.", "prefetchu.L1 [a];", (1, 1), ptx (2, 0), sm 20, types 0,
        [g!(Level, &[".L1"], required)]),
    op!("applypriority", "9.7.10.15", "Change the L2 eviction priority of the lines of an address range.", "applypriority{.global}.level::eviction_priority [a], size;  .level::eviction_priority = { .L2::evict_normal }", (2, 2), ptx (7, 4), sm 80, types 0,
        [g!(Evict, &[".L2::evict_normal"], required), g!(Space, &[".global"])]),
    op!("discard", "9.7.10.16", "Drop the L2 lines of an address range without writing them back; their contents become undefined.", "discard{.global}.level [a], size;  .level = { .L2 }", (2, 2), ptx (7, 4), sm 80, types 0,
        [g!(Level, &[".L2"], required), g!(Space, &[".global"])]),
    op!("createpolicy" [".range"], "9.7.10.17", "Make a 64-bit L2 cache policy for an address range, with priorities inside and outside it.", "createpolicy.range{.global}.level::primary_priority{.level::secondary_priority}.b64 cache-policy, [a], primary-size, total-size;", (4, 4), ptx (7, 4), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Space, &[".global"]), g!(Evict, EVICT_L2, required), g!(Evict, &[".L2::evict_first", ".L2::evict_unchanged"])]),
    op!("createpolicy" [".fractional"], "9.7.10.17", "Make a 64-bit L2 cache policy that applies the primary priority to a fraction of accesses.", "createpolicy.fractional.level::primary_priority{.level::secondary_priority}.b64 cache-policy{, fraction};", (1, 2), ptx (7, 4), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Evict, EVICT_L2, required), g!(Evict, &[".L2::evict_first", ".L2::evict_unchanged"])]),
    op!("createpolicy" [".cvt"], "9.7.10.17", "Convert a CUDA access property into an L2 cache policy.", "createpolicy.cvt.L2.b64 cache-policy, access-property;", (2, 2), ptx (7, 4), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Level, &[".L2"], required)]),
    op!("isspacep", "9.7.10.18", "Test whether a generic address points into a state space.", "isspacep.space p, a;", (2, 2), ptx (2, 0), sm 20, types 0,
        [g!(Space, &[".const", ".global", ".local", ".shared", ".shared::cta", ".shared::cluster", ".param", ".param::entry"], required)],
        reqs &[r!(".const", 3, 1, 20), r!(".param", 7, 7, 70), r!(".param::entry", 8, 3, 70), r!(".shared::cta", 7, 8, 30),
               r!(".shared::cluster", 7, 8, 90)]),
    op!("cvta", "9.7.10.19", "Convert between a cluster shared-memory address and a generic address.", "cvta{.to}.shared::cluster.size d, a;", (2, 2), ptx (7, 8), sm 90, types 0,
        [g!(To, &[".to"]), g!(Space, &[".shared::cluster"], required), g!(Size, &[".u32", ".u64"], required)]),
    op!("cvt", "9.7.10.20", "Conversions to tf32 and to/from packed fp8 (e4m3x2, e5m2x2), with .relu clamping and .satfinite saturation.", "cvt.frnd2{.relu}{.satfinite}.{f16,f16x2,bf16,bf16x2}.f32 d, a{, b}; cvt.rna{.satfinite}.tf32.f32 d, a; cvt.rn.satfinite{.relu}.f8x2type.{f32,f16x2} d, a{, b}; cvt.rn{.relu}.f16x2.f8x2type d, a;", (2, 3), ptx (7, 0), sm 80, types 2,
        [g!(Type, CVTTY_EXT, required), g!(Round, &[".rn", ".rz", ".rm", ".rp", ".rni", ".rzi", ".rmi", ".rpi", ".rna"]), g!(Ftz, &[".ftz"]),
         g!(Sat, &[".sat", ".satfinite"]), g!(Relu, &[".relu"])],
        reqs &[r!(".e4m3x2", 7, 8, 89), r!(".e5m2x2", 7, 8, 89), r!(".satfinite", 7, 8, 80)]),
    op!("cvt" [".pack"], "9.7.10.21", "Convert two (or, into the low bits of c, more) 32-bit integers to narrow integers with saturation and pack them.", "cvt.pack.sat.convertType.abType d, a, b; cvt.pack.sat.convertType.abType.cType d, a, b, c;", (3, 4), ptx (6, 5), sm 72, types 2 to 3,
        [g!(Type, &[".u16", ".s16", ".u8", ".s8", ".u4", ".s4", ".u2", ".s2", ".s32", ".b32"], required), g!(Sat, &[".sat"], required)],
        reqs &[r!(".u4", 6, 5, 75), r!(".s4", 6, 5, 75), r!(".u2", 6, 5, 75), r!(".s2", 6, 5, 75)]),
    op!("mapa", "9.7.10.22", "Map a shared-memory address to the corresponding address in another CTA of the cluster.", "mapa{.space}.type d, a, b;  .space = { .shared::cluster }", (3, 3), ptx (7, 8), sm 90, types 1,
        [g!(Type, &[".u32", ".u64"], required), g!(Space, &[".shared::cluster"])]),
    op!("getctarank", "9.7.10.23", "The rank in the cluster of the CTA whose shared memory an address points into.", "getctarank{.space}.type d, a;  .space = { .shared::cluster }", (2, 2), ptx (7, 8), sm 90, types 1,
        [g!(Type, &[".u32", ".u64"], required), g!(Space, &[".shared::cluster"])]),
    op!("cp" [".async"], "9.7.10.24.3", "Start an asynchronous copy of 4, 8 or 16 bytes from global to shared memory.", "cp.async.{ca,cg}.shared{::cta}.global{.level::cache_hint}{.level::prefetch_size} [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy};", (3, 5), ptx (7, 0), sm 80, types 0,
        [g!(Cache, &[".ca", ".cg"], required), g!(Space, SHARED_CTA, required), g!(SrcSpace, &[".global"], required), g!(Hint, HINT), g!(Prefetch, PREFETCH)],
        reqs &[r!(".L2::cache_hint", 7, 4, 80), r!(".L2::64B", 7, 4, 80), r!(".L2::128B", 7, 4, 80), r!(".L2::256B", 7, 4, 80), r!(".shared::cta", 7, 8, 80)]),
    op!("cp" [".async", ".commit_group"], "9.7.10.24.4", "Close the thread's pending cp.async operations into a group.", "cp.async.commit_group;", (0, 0), ptx (7, 0), sm 80, types 0, []),
    op!("cp" [".async", ".wait_group"], "9.7.10.24.5", "Wait until at most N of the thread's most recent cp.async groups are pending.", "cp.async.wait_group N;", (1, 1), ptx (7, 0), sm 80, types 0, []),
    op!("cp" [".async", ".wait_all"], "9.7.10.24.5", "Wait until all of the thread's cp.async operations are complete.", "cp.async.wait_all;", (0, 0), ptx (7, 0), sm 80, types 0, []),
    op!("cp" [".async", ".bulk"], "9.7.10.24.6", "Start a bulk asynchronous copy between global memory and (cluster) shared memory.", "cp.async.bulk.dst.src.completion_mechanism{.multicast}{.level::cache_hint} [dstMem], [srcMem], size{, [mbar]}{, ctaMask}{, cache-policy};", (3, 6), ptx (8, 0), sm 90, types 0,
        [g!(Space, &[".shared::cluster", ".global"], required), g!(SrcSpace, &[".global", ".shared::cta"], required),
         g!(Completion, &[".mbarrier::complete_tx::bytes", ".bulk_group"], required), g!(Multicast, &[".multicast::cluster"]), g!(Hint, HINT)]),
    op!("cp" [".reduce", ".async", ".bulk"], "9.7.10.24.7", "Start a bulk asynchronous reduction of shared memory into global or another CTA's shared memory.", "cp.reduce.async.bulk.dst.src.completion_mechanism{.level::cache_hint}.redOp{.noftz}.type [dstMem], [srcMem], size{, [mbar]}{, cache-policy};", (3, 4), ptx (8, 0), sm 90, types 1,
        [g!(Type, &[".b32", ".u32", ".s32", ".b64", ".u64", ".s64", ".f16", ".bf16", ".f32", ".f64"], required),
         g!(Space, &[".shared::cluster", ".global"], required), g!(SrcSpace, &[".shared::cta"], required),
         g!(Completion, &[".mbarrier::complete_tx::bytes", ".bulk_group"], required), g!(Op, REDOP, required), g!(Noftz, &[".noftz"]), g!(Hint, HINT)]),
    op!("cp" [".async", ".bulk", ".prefetch"], "9.7.10.24.8", "Start a bulk prefetch of global memory into L2.", "cp.async.bulk.prefetch.L2.src{.level::cache_hint} [srcMem], size{, cache-policy};  .src = { .global }", (2, 3), ptx (8, 0), sm 90, types 0,
        [g!(Level, &[".L2"], required), g!(SrcSpace, &[".global"], required), g!(Hint, HINT)]),
    op!("cp" [".async", ".bulk", ".tensor"], "9.7.10.24.9", "Start an asynchronous copy of a tensor tile between global memory (through a tensor map) and shared memory.", "cp.async.bulk.tensor.dim.dst.src{.load_mode}.completion_mechanism{.multicast}{.level::cache_hint} [dstMem], [tensorMap, tensorCoords]{, [mbar]}{, im2colOffsets}{, ctaMask}{, cache-policy};", (2, 6), ptx (8, 0), sm 90, types 0,
        [g!(Dim, DIMS, required), g!(Space, &[".shared::cluster", ".global"], required), g!(SrcSpace, &[".global", ".shared::cta"], required),
         g!(LoadMode, &[".tile", ".im2col", ".im2col_no_offs"]), g!(Completion, &[".mbarrier::complete_tx::bytes", ".bulk_group"]),
         g!(Multicast, &[".multicast::cluster"]), g!(Hint, HINT)]),
    op!("cp" [".reduce", ".async", ".bulk", ".tensor"], "9.7.10.24.10", "Start an asynchronous reduction of a shared-memory tile into a global tensor.", "cp.reduce.async.bulk.tensor.dim.dst.src.redOp{.load_mode}.completion_mechanism{.level::cache_hint} [tensorMap, tensorCoords], [srcMem]{, cache-policy};", (2, 3), ptx (8, 0), sm 90, types 0,
        [g!(Dim, DIMS, required), g!(Space, &[".global"], required), g!(SrcSpace, &[".shared::cta"], required), g!(Op, REDOP, required),
         g!(LoadMode, &[".tile", ".im2col_no_offs"]), g!(Completion, &[".bulk_group"], required), g!(Hint, HINT)]),
    op!("cp" [".async", ".bulk", ".prefetch", ".tensor"], "9.7.10.24.11", "Start a prefetch of a global tensor tile into L2.", "cp.async.bulk.prefetch.tensor.dim.L2.src{.load_mode}{.level::cache_hint} [tensorMap, tensorCoords]{, im2colOffsets}{, cache-policy};", (1, 3), ptx (8, 0), sm 90, types 0,
        [g!(Dim, DIMS, required), g!(Level, &[".L2"], required), g!(SrcSpace, &[".global"], required), g!(LoadMode, &[".tile", ".im2col"]), g!(Hint, HINT)]),
    op!("cp" [".async", ".bulk", ".commit_group"], "9.7.10.24.12", "Close the thread's pending bulk asynchronous operations into a bulk async-group.", "cp.async.bulk.commit_group;", (0, 0), ptx (8, 0), sm 90, types 0, []),
    op!("cp" [".async", ".bulk", ".wait_group"], "9.7.10.24.13", "Wait until at most N bulk async-groups are pending (with .read, until their sources have been read).", "cp.async.bulk.wait_group{.read} N;", (1, 1), ptx (8, 0), sm 90, types 0,
        [g!(Read, &[".read"])]),
    op!("tensormap" [".replace"], "9.7.10.25", "Overwrite one field of a 1024-bit tensor map in memory.", "tensormap.replace.mode.field1{.ss}.b1024.type [addr], new_val; tensormap.replace.mode.field2{.ss}.b1024.type [addr], ord, new_val;", (2, 3), ptx (8, 3), sm 90 arch, types 1,
        [g!(Type, &[".b32", ".b64"], required), g!(Mode, &[".tile"], required),
         g!(Field, &[".global_address", ".rank", ".box_dim", ".global_dim", ".global_stride", ".element_stride", ".elemtype", ".interleave_layout", ".swizzle_mode", ".fill_mode"], required),
         g!(Space, &[".global", ".shared::cta"]), g!(Object, &[".b1024"], required)]),
    // ---- 9.7.11 Texture ----
    op!("tex", "9.7.11.3", "Sample a texture (optionally at a mipmap level or with gradients).", "tex{.base,.level,.grad}.geom.v4.dtype.ctype d[|p], [a, {b,} c]{, lod | dPdx, dPdy}{, e}{, f}; tex{...}.geom.v2.f16x2.ctype d[|p], [a, {b,} c] ...;", (2, 6), ptx (1, 0), sm 10, types 2,
        [g!(Type, &[".u32", ".s32", ".f16", ".f16x2", ".f32"], required), g!(Mip, &[".base", ".level", ".grad"]),
         g!(Geom, &[".1d", ".2d", ".3d", ".a1d", ".a2d", ".cube", ".acube", ".2dms", ".a2dms"], required), g!(Vec, &[".v4", ".v2"], required)],
        reqs &[r!(".a1d", 2, 3, 10), r!(".a2d", 2, 3, 10), r!(".cube", 3, 0, 10), r!(".acube", 3, 0, 20), r!(".base", 3, 1, 20), r!(".level", 3, 1, 20),
               r!(".grad", 3, 1, 20), r!(".2dms", 3, 2, 30), r!(".a2dms", 3, 2, 30), r!(".f16", 4, 2, 53), r!(".f16x2", 4, 2, 53)]),
    op!("tld4", "9.7.11.4", "Fetch one component of the four texels a bilinear texture sample would use.", "tld4.comp.geom.v4.dtype.f32 d[|p], [a, {b,} c]{, e}{, f};", (2, 4), ptx (2, 2), sm 20, types 2,
        [g!(Type, &[".u32", ".s32", ".f32"], required), g!(Comp, &[".r", ".g", ".b", ".a"], required), g!(Geom, &[".2d", ".a2d", ".cube", ".acube"], required),
         g!(Vec, &[".v4"], required)],
        reqs &[r!(".a2d", 4, 3, 30), r!(".cube", 4, 3, 30), r!(".acube", 4, 3, 30)]),
    op!("txq", "9.7.11.5", "Query an attribute of a texture or sampler.", "txq.tquery.b32 d, [a]; txq.level.tlquery.b32 d, [a], lod; txq.squery.b32 d, [a];", (2, 3), ptx (1, 5), sm 10, types 1,
        [g!(Type, &[".b32"], required), g!(Mip, &[".level"]),
         g!(Query, &[".width", ".height", ".depth", ".channel_data_type", ".channel_order", ".normalized_coords", ".array_size", ".num_mipmap_levels",
                     ".num_samples", ".force_unnormalized_coords", ".filter_mode", ".addr_mode_0", ".addr_mode_1", ".addr_mode_2"], required)],
        reqs &[r!(".channel_data_type", 2, 1, 10), r!(".channel_order", 2, 1, 10), r!(".force_unnormalized_coords", 2, 2, 10),
               r!(".array_size", 4, 1, 10), r!(".num_mipmap_levels", 4, 1, 20), r!(".num_samples", 4, 1, 30), r!(".level", 4, 3, 30)]),
    op!("istypep", "9.7.11.6", "Test whether an opaque handle is a texture, sampler or surface reference.", "istypep.type p, a;  .type = { .texref, .samplerref, .surfref }", (2, 2), ptx (4, 0), sm 30, types 1,
        [g!(Type, &[".texref", ".samplerref", ".surfref"], required)]),
    // ---- 9.7.12 Surface ----
    op!("suld", "9.7.12.1", "Load raw data from a surface.", "suld.b.geom{.cop}.vec.dtype.clamp d, [a, b];", (2, 2), ptx (1, 5), sm 10, types 1,
        [g!(Type, &[".b8", ".b16", ".b32", ".b64"], required), g!(Class, &[".b"], required), g!(Geom, &[".1d", ".2d", ".3d", ".a1d", ".a2d"], required),
         g!(Cache, &[".ca", ".cg", ".cs", ".cv"]), g!(Vec, &[".v2", ".v4"]), g!(Clamp, &[".trap", ".clamp", ".zero"])],
        reqs &[r!(".3d", 3, 0, 20), r!(".a1d", 3, 0, 20), r!(".a2d", 3, 0, 20), r!(".clamp", 2, 0, 20), r!(".zero", 2, 0, 20),
               r!(".ca", 2, 0, 20), r!(".cg", 2, 0, 20), r!(".cs", 2, 0, 20), r!(".cv", 2, 0, 20)]),
    op!("sust", "9.7.12.2", "Store raw (.b) or formatted (.p) data to a surface.", "sust.b.geom{.cop}.vec.ctype.clamp [a, b], c; sust.p.geom.vec.b32.clamp [a, b], c;", (2, 2), ptx (1, 5), sm 10, types 1,
        [g!(Type, &[".b8", ".b16", ".b32", ".b64"], required), g!(Class, &[".b", ".p"], required), g!(Geom, &[".1d", ".2d", ".3d", ".a1d", ".a2d"], required),
         g!(Cache, &[".wb", ".cg", ".cs", ".wt"]), g!(Vec, &[".v2", ".v4"]), g!(Clamp, &[".trap", ".clamp", ".zero"])],
        reqs &[r!(".p", 2, 0, 20), r!(".3d", 3, 0, 20), r!(".a1d", 3, 0, 20), r!(".a2d", 3, 0, 20), r!(".clamp", 2, 0, 20), r!(".zero", 2, 0, 20),
               r!(".wb", 2, 0, 20), r!(".cg", 2, 0, 20), r!(".cs", 2, 0, 20), r!(".wt", 2, 0, 20)]),
    op!("sured", "9.7.12.3", "Atomic reduction into a surface element.", "sured.b.op.geom.ctype.clamp [a, b], c; sured.p.op.geom.ctype.clamp [a, b], c;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".u32", ".u64", ".s32", ".s64", ".b32", ".b64"], required), g!(Class, &[".b", ".p"], required),
         g!(Op, &[".add", ".min", ".max", ".and", ".or"], required), g!(Geom, &[".1d", ".2d", ".3d"], required),
         g!(Clamp, &[".trap", ".clamp", ".zero"], required)]),
    op!("suq", "9.7.12.4", "Query an attribute of a surface.", "suq.query.b32 d, [a];", (2, 2), ptx (1, 5), sm 10, types 1,
        [g!(Type, &[".b32"], required),
         g!(Query, &[".width", ".height", ".depth", ".channel_data_type", ".channel_order", ".array_size", ".memory_layout"], required)],
        reqs &[r!(".channel_data_type", 2, 1, 10), r!(".channel_order", 2, 1, 10), r!(".array_size", 4, 1, 10), r!(".memory_layout", 4, 2, 10)]),
    // ---- 9.7.13 Control flow ----
    op!("brx", "9.7.13.4", "Branch to the index-th label of a list declared with .branchtargets.", "brx.idx{.uni} index, tlist;", (2, 2), ptx (6, 0), sm 30, types 0,
        [g!(Mode, &[".idx"], required), g!(Uni, &[".uni"])]),
    // ---- 9.7.14 Parallel synchronization and communication ----
    op!("bar", "9.7.14.1", "Barrier that also reduces a predicate over the participating threads (population count, all or any).", "bar{.cta}.red.popc.u32 d, a{, b}, {!}c; bar{.cta}.red.op.pred p, a{, b}, {!}c;  .op = { .and, .or }", (3, 4), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".u32", ".pred"], required), g!(Sync, &[".red"], required), g!(Op, &[".popc", ".and", ".or"], required), g!(Scope, &[".cta"])],
        reqs &[r!(".cta", 7, 8, 20)]),
    op!("barrier", "9.7.14.1", "barrier.red: the non-aligned barrier that reduces a predicate (population count, all or any).", "barrier{.cta}.red.popc{.aligned}.u32 d, a{, b}, {!}c; barrier{.cta}.red.op{.aligned}.pred p, a{, b}, {!}c;", (3, 4), ptx (6, 0), sm 30, types 1,
        [g!(Type, &[".u32", ".pred"], required), g!(Sync, &[".red"], required), g!(Op, &[".popc", ".and", ".or"], required), g!(Scope, &[".cta"]),
         g!(Aligned, &[".aligned"])],
        reqs &[r!(".cta", 7, 8, 30)]),
    op!("barrier" [".cluster"], "9.7.14.3", "Arrive at or wait on the barrier of all threads of the cluster.", "barrier.cluster.arrive{.sem}{.aligned}; barrier.cluster.wait{.acquire}{.aligned};  .sem = { .release, .relaxed }", (0, 0), ptx (7, 8), sm 90, types 0,
        [g!(Sync, &[".arrive", ".wait"], required), g!(Sem, &[".release", ".relaxed", ".acquire"]), g!(Aligned, &[".aligned"])],
        reqs &[r!(".release", 8, 0, 90), r!(".relaxed", 8, 0, 90), r!(".acquire", 8, 0, 90)]),
    op!("fence", "9.7.14.4", "Thread fence written without a scope, as the manual's own example `fence.sc;` does.", "fence.sem;  .sem = { .sc, .acq_rel }", (0, 0), ptx (6, 0), sm 70, types 0,
        [g!(Sem, &[".sc", ".acq_rel"], required)]),
    op!("fence" [".proxy"], "9.7.14.4", "Order memory accesses across proxies (generic, texture/alias, async, tensormap).", "fence.proxy.proxykind; fence.proxy.tensormap::generic.release.scope; fence.proxy.tensormap::generic.acquire.scope [addr], size;  .proxykind = { .alias, .async, .async.global, .async.shared::{cta,cluster} }", (0, 2), ptx (7, 5), sm 70, types 0,
        [g!(Proxy, &[".alias", ".async", ".tensormap::generic"], required), g!(Space, &[".global", ".shared::cta", ".shared::cluster"]),
         g!(Sem, &[".release", ".acquire"]), g!(Scope, SCOPES)],
        reqs &[r!(".async", 8, 0, 90), r!(".tensormap::generic", 8, 3, 90), r!(".cluster", 7, 8, 90)]),
    op!("fence" [".mbarrier_init"], "9.7.14.4", "Make prior mbarrier.init operations visible to the cluster (a lighter fence).", "fence.mbarrier_init.release.cluster;", (0, 0), ptx (8, 0), sm 90, types 0,
        [g!(Sem, &[".release"], required), g!(Scope, &[".cluster"], required)]),
    op!("membar" [".proxy"], "9.7.14.4", "Old-style proxy fence.", "membar.proxy.proxykind;", (0, 0), ptx (7, 5), sm 60, types 0,
        [g!(Proxy, &[".alias", ".async"], required), g!(Space, &[".global", ".shared::cta", ".shared::cluster"])],
        reqs &[r!(".async", 8, 0, 90)]),
    op!("atom", "9.7.14.5", "Atomics on 16-bit and 128-bit values, half-precision adds (.noftz), vectors of floats, cluster shared memory, or with an L2 cache policy.", "atom{.sem}{.scope}{.space}.op{.level::cache_hint}.type d, [a], b{, c}{, cache-policy}; atom{.sem}{.scope}{.space}.add.noftz{.level::cache_hint}.{f16,f16x2,bf16,bf16x2} d, [a], b{, cache-policy}; atom{.sem}{.scope}{.global}.op{.noftz}{.level::cache_hint}.vec.type d, [a], b{, cache-policy};", (3, 5), ptx (6, 2), sm 60, types 1,
        [g!(Type, ATOMTY_EXT, required), g!(Op, ATOMOP, required), g!(Space, &[".global", ".shared", ".shared::cta", ".shared::cluster"]),
         g!(Sem, &[".relaxed", ".acquire", ".release", ".acq_rel"]), g!(Scope, SCOPES), g!(Noftz, &[".noftz"]), g!(Hint, HINT),
         g!(Vec, &[".v2", ".v4", ".v8"])],
        reqs &[r!(".f16", 6, 3, 70), r!(".b16", 6, 3, 70), r!(".bf16", 7, 8, 90), r!(".bf16x2", 7, 8, 90), r!(".L2::cache_hint", 7, 4, 80),
               r!(".shared::cluster", 7, 8, 90), r!(".cluster", 7, 8, 90), r!(".v2", 8, 1, 90), r!(".v4", 8, 1, 90), r!(".v8", 8, 1, 90),
               r!(".b128", 8, 3, 90)]),
    op!("red", "9.7.14.6", "Reductions with half-precision adds (.noftz), vectors of floats, cluster shared memory, or an L2 cache policy.", "red{.sem}{.scope}{.space}.op{.level::cache_hint}.type [a], b{, cache-policy}; red{.sem}{.scope}{.space}.add.noftz{.level::cache_hint}.{f16,f16x2,bf16,bf16x2} [a], b{, cache-policy}; red{.sem}{.scope}{.global}.op{.noftz}{.level::cache_hint}.vec.type [a], b{, cache-policy};", (2, 3), ptx (6, 2), sm 60, types 1,
        [g!(Type, &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64"], required),
         g!(Op, REDOP, required), g!(Space, &[".global", ".shared", ".shared::cta", ".shared::cluster"]), g!(Sem, &[".relaxed", ".release"]),
         g!(Scope, SCOPES), g!(Noftz, &[".noftz"]), g!(Hint, HINT), g!(Vec, &[".v2", ".v4", ".v8"])],
        reqs &[r!(".f16", 6, 3, 70), r!(".bf16", 7, 8, 90), r!(".bf16x2", 7, 8, 90), r!(".L2::cache_hint", 7, 4, 80),
               r!(".shared::cluster", 7, 8, 90), r!(".cluster", 7, 8, 90), r!(".v2", 8, 1, 90), r!(".v4", 8, 1, 90), r!(".v8", 8, 1, 90)]),
    op!("red" [".async"], "9.7.14.7", "Asynchronous reduction into another CTA's shared memory in the cluster; completion is counted on an mbarrier.", "red.async.relaxed.cluster{.ss}.completion_mechanism.op.type [a], b, [mbar];  .ss = { .shared::cluster }", (3, 3), ptx (8, 1), sm 90, types 1,
        [g!(Type, &[".u32", ".s32", ".b32", ".u64"], required), g!(Sem, &[".relaxed"], required), g!(Scope, &[".cluster"], required),
         g!(Space, &[".shared::cluster"]), g!(Completion, TX, required), g!(Op, &[".inc", ".dec", ".min", ".max", ".and", ".or", ".xor", ".add"], required)]),
    op!("match", "9.7.14.10", "Find the threads of a warp that hold the same value (any), or whether all hold it (all).", "match.any.sync.type d, a, membermask; match.all.sync.type d[|p], a, membermask;", (3, 3), ptx (6, 0), sm 70, types 1,
        [g!(Type, &[".b32", ".b64"], required), g!(Mode, &[".any", ".all"], required), g!(Sync, &[".sync"], required)]),
    op!("activemask", "9.7.14.11", "The mask of the threads of the warp that execute this instruction.", "activemask.b32 d;", (1, 1), ptx (6, 2), sm 30, types 1,
        [g!(Type, &[".b32"], required)]),
    op!("redux", "9.7.14.12", "Reduce a register over the threads of a warp.", "redux.sync.op.type dst, src, membermask;  .op = { .add, .min, .max } with .u32/.s32, { .and, .or, .xor } with .b32", (3, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".u32", ".s32", ".b32"], required), g!(Sync, &[".sync"], required), g!(Op, &[".add", ".min", ".max", ".and", ".or", ".xor"], required)]),
    op!("elect", "9.7.14.14", "Elect one leader thread among the active threads of a mask.", "elect.sync d|p, membermask;", (2, 2), ptx (8, 0), sm 90, types 0,
        [g!(Sync, &[".sync"], required)]),
    op!("mbarrier" [".init"], "9.7.14.15.9", "Initialise an mbarrier object with an expected arrival count.", "mbarrier.init{.shared{::cta}}.b64 [addr], count;", (2, 2), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Space, SHARED_CTA)],
        reqs &[r!(".shared::cta", 7, 8, 80)]),
    op!("mbarrier" [".inval"], "9.7.14.15.10", "Invalidate an mbarrier object so that its memory can be reused.", "mbarrier.inval{.shared{::cta}}.b64 [addr];", (1, 1), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Space, SHARED_CTA)],
        reqs &[r!(".shared::cta", 7, 8, 80)]),
    op!("mbarrier" [".expect_tx"], "9.7.14.15.11", "Raise the transaction count an mbarrier's current phase waits for.", "mbarrier.expect_tx{.sem}{.scope}{.space}.b64 [addr], txCount;  .sem = { .relaxed }", (2, 2), ptx (8, 0), sm 90, types 1,
        [g!(Type, &[".b64"], required), g!(Sem, &[".relaxed"]), g!(Scope, &[".cta", ".cluster"]), g!(Space, SHARED_ANY)]),
    op!("mbarrier" [".complete_tx"], "9.7.14.15.12", "Lower an mbarrier's pending transaction count, as if that many bytes had arrived.", "mbarrier.complete_tx{.sem}{.scope}{.space}.b64 [addr], txCount;  .sem = { .relaxed }", (2, 2), ptx (8, 0), sm 90, types 1,
        [g!(Type, &[".b64"], required), g!(Sem, &[".relaxed"]), g!(Scope, &[".cta", ".cluster"]), g!(Space, SHARED_ANY)]),
    op!("mbarrier" [".arrive"], "9.7.14.15.13", "Arrive on an mbarrier (optionally expecting transactions first), returning the phase state.", "mbarrier.arrive{.expect_tx,.noComplete}{.sem}{.scope}{.shared{::cta,::cluster}}.b64 state, [addr]{, count | txCount};", (2, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Mode, &[".expect_tx", ".noComplete"]), g!(Sem, &[".release"]), g!(Scope, &[".cta", ".cluster"]), g!(Space, SHARED_ANY)],
        reqs &[r!(".expect_tx", 8, 0, 90), r!(".release", 8, 0, 80), r!(".cta", 8, 0, 80), r!(".cluster", 8, 0, 90), r!(".shared::cta", 7, 8, 80),
               r!(".shared::cluster", 8, 0, 90)]),
    op!("mbarrier" [".arrive_drop"], "9.7.14.15.14", "Arrive on an mbarrier and reduce its expected count for later phases.", "mbarrier.arrive_drop{.expect_tx,.noComplete}{.sem}{.scope}{.shared{::cta,::cluster}}.b64 state, [addr]{, count | tx_count};", (2, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Mode, &[".expect_tx", ".noComplete"]), g!(Sem, &[".release"]), g!(Scope, &[".cta", ".cluster"]), g!(Space, SHARED_ANY)],
        reqs &[r!(".expect_tx", 8, 0, 90), r!(".release", 8, 0, 80), r!(".cta", 8, 0, 80), r!(".cluster", 8, 0, 90), r!(".shared::cta", 7, 8, 80),
               r!(".shared::cluster", 8, 0, 90)]),
    op!("cp" [".async", ".mbarrier", ".arrive"], "9.7.14.15.15", "Make an mbarrier track the completion of the thread's prior cp.async operations.", "cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr];", (1, 1), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Noinc, &[".noinc"]), g!(Space, SHARED_CTA)],
        reqs &[r!(".shared::cta", 7, 8, 80)]),
    op!("mbarrier" [".test_wait"], "9.7.14.15.16", "Test without blocking whether an mbarrier phase (given by state or parity) has completed.", "mbarrier.test_wait{.parity}{.sem}{.scope}{.shared{::cta}}.b64 waitComplete, [addr], state | phaseParity;", (3, 3), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required), g!(Parity, &[".parity"]), g!(Sem, &[".acquire"]), g!(Scope, &[".cta", ".cluster"]), g!(Space, SHARED_CTA)],
        reqs &[r!(".parity", 7, 1, 80), r!(".acquire", 8, 0, 80), r!(".cta", 8, 0, 80), r!(".cluster", 8, 0, 90), r!(".shared::cta", 7, 8, 80)]),
    op!("mbarrier" [".try_wait"], "9.7.14.15.16", "Wait for a bounded time for an mbarrier phase (given by state or parity) to complete.", "mbarrier.try_wait{.parity}{.sem}{.scope}{.shared{::cta}}.b64 waitComplete, [addr], state | phaseParity{, suspendTimeHint};", (3, 4), ptx (7, 8), sm 90, types 1,
        [g!(Type, &[".b64"], required), g!(Parity, &[".parity"]), g!(Sem, &[".acquire"]), g!(Scope, &[".cta", ".cluster"]), g!(Space, SHARED_CTA)],
        reqs &[r!(".acquire", 8, 0, 90), r!(".cta", 8, 0, 90), r!(".cluster", 8, 0, 90)]),
    op!("mbarrier" [".pending_count"], "9.7.14.15.17", "The pending arrival count recorded in an mbarrier state.", "mbarrier.pending_count.b64 count, state;", (2, 2), ptx (7, 0), sm 80, types 1,
        [g!(Type, &[".b64"], required)]),
    op!("tensormap" [".cp_fenceproxy"], "9.7.14.16", "Copy a tensor map from shared to global memory and fence it for the tensormap proxy.", "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.scope.sync.aligned [dst], [src], size;", (3, 3), ptx (8, 3), sm 90, types 0,
        [g!(Space, &[".global"], required), g!(SrcSpace, &[".shared::cta"], required), g!(Proxy, &[".tensormap::generic"], required),
         g!(Sem, &[".release"], required), g!(Scope, SCOPES, required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required)]),
    // ---- 9.7.15 Warp-level matrix multiply-accumulate ----
    op!("wmma" [".load"], "9.7.15.3.3", "Collectively load a matrix fragment (a, b or c) for wmma.mma.", "wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride};", (2, 3), ptx (6, 0), sm 70, types 1,
        [g!(Type, &[".f16", ".f32", ".s32", ".s8", ".u8", ".bf16", ".tf32", ".f64", ".s4", ".u4", ".b1"], required), g!(Frag, &[".a", ".b", ".c"], required),
         g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"]), g!(Layout, &[".row", ".col"], required), g!(Shape, WMMA_SHAPES, required),
         g!(Space, &[".global", ".shared", ".shared::cta"])],
        reqs WMMA_REQS),
    op!("wmma" [".store"], "9.7.15.3.4", "Collectively store a result fragment (d) of wmma.mma.", "wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride};", (2, 3), ptx (6, 0), sm 70, types 1,
        [g!(Type, &[".f16", ".f32", ".s32", ".f64"], required), g!(Frag, &[".d"], required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"]),
         g!(Layout, &[".row", ".col"], required), g!(Shape, WMMA_SHAPES, required), g!(Space, &[".global", ".shared", ".shared::cta"])],
        reqs WMMA_STORE_REQS),
    op!("wmma" [".mma"], "9.7.15.3.5", "Warp-collective matrix multiply-accumulate D = A*B + C on fragments.", "wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype d, a, b, c; wmma.mma.sync.aligned.alayout.blayout.shape{.rnd}.dtype.atype.btype.ctype{.satfinite} d, a, b, c; wmma.mma.op.popc.sync.aligned.row.col.shape.s32.b1.b1.s32 d, a, b, c;", (4, 4), ptx (6, 0), sm 70, types 2 to 4,
        [g!(Type, &[".f16", ".f32", ".s32", ".s8", ".u8", ".bf16", ".tf32", ".f64", ".s4", ".u4", ".b1"], required), g!(Op, &[".xor", ".and"]),
         g!(Popc, &[".popc"]), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"]), g!(Layout, &[".row", ".col"], required),
         g!(Layout, &[".row", ".col"], required), g!(Shape, WMMA_SHAPES, required), g!(Round, ROUND), g!(Sat, &[".satfinite"])],
        reqs WMMA_MMA_REQS),
    op!("mma", "9.7.15.4.14", "Warp-collective matrix multiply-accumulate D = A*B + C with per-thread fragments.", "mma.sync.aligned.shape.alayout.blayout{.satfinite}.dtype.atype.btype.ctype{.rnd} d, a, b, c; mma.sync.aligned.shape.row.col.s32.b1.b1.s32.bitOp.popc d, a, b, c;", (4, 4), ptx (6, 4), sm 70, types 4,
        [g!(Type, MMA_TYPES, required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required), g!(Shape, MMA_SHAPES, required),
         g!(Layout, &[".row", ".col"], required), g!(Layout, &[".row", ".col"], required), g!(Sat, &[".satfinite"]), g!(Round, &[".rn"]),
         g!(Op, &[".xor", ".and"]), g!(Popc, &[".popc"])],
        reqs &[r!(".m16n8k8", 6, 5, 75), r!(".m8n8k16", 6, 5, 75), r!(".m8n8k32", 6, 5, 75), r!(".m8n8k128", 7, 0, 75), r!(".m16n8k16", 7, 0, 80),
               r!(".m16n8k4", 7, 0, 80), r!(".m16n8k32", 7, 0, 80), r!(".m16n8k64", 7, 0, 80), r!(".m16n8k128", 7, 0, 80), r!(".m16n8k256", 7, 0, 80),
               r!(".bf16", 7, 0, 80), r!(".tf32", 7, 0, 80), r!(".f64", 7, 0, 80), r!(".and", 7, 1, 80), r!(".e4m3", 8, 4, 89), r!(".e5m2", 8, 4, 89),
               r!(".s8", 6, 5, 75), r!(".u8", 6, 5, 75), r!(".s4", 6, 5, 75), r!(".u4", 6, 5, 75), r!(".b1", 7, 0, 75)]),
    op!("ldmatrix", "9.7.15.4.15", "Collectively load one, two or four 8x8 matrices of 16-bit elements from shared memory.", "ldmatrix.sync.aligned.shape.num{.trans}{.ss}.type r, [p];  .shape = { .m8n8 }", (2, 2), ptx (6, 5), sm 75, types 1,
        [g!(Type, &[".b16"], required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required), g!(Shape, &[".m8n8"], required),
         g!(Num, &[".x1", ".x2", ".x4"], required), g!(Trans, &[".trans"]), g!(Space, SHARED_CTA)],
        reqs &[r!(".shared::cta", 7, 8, 75)]),
    op!("stmatrix", "9.7.15.4.16", "Collectively store one, two or four 8x8 matrices of 16-bit elements to shared memory.", "stmatrix.sync.aligned.shape.num{.trans}{.ss}.type [p], r;  .shape = { .m8n8 }", (2, 2), ptx (7, 8), sm 90, types 1,
        [g!(Type, &[".b16"], required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required), g!(Shape, &[".m8n8"], required),
         g!(Num, &[".x1", ".x2", ".x4"], required), g!(Trans, &[".trans"]), g!(Space, SHARED_CTA)]),
    op!("movmatrix", "9.7.15.4.17", "Transpose an 8x8 matrix of 16-bit elements held across the warp's registers.", "movmatrix.sync.aligned.shape.trans.type d, a;  .shape = { .m8n8 }", (2, 2), ptx (7, 8), sm 75, types 1,
        [g!(Type, &[".b16"], required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required), g!(Shape, &[".m8n8"], required),
         g!(Trans, &[".trans"], required)]),
    op!("mma", "9.7.15.5.3", "Matrix multiply-accumulate with a 2:4 structured-sparse A and its metadata.", "mma.spvariant.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c, e, f;  .spvariant = { .sp, .sp::ordered_metadata }", (6, 6), ptx (7, 1), sm 80, types 4,
        [g!(Type, &[".f16", ".f32", ".bf16", ".tf32", ".e4m3", ".e5m2", ".s32", ".s8", ".u8", ".s4", ".u4"], required),
         g!(Sparse, &[".sp", ".sp::ordered_metadata"], required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required),
         g!(Shape, &[".m16n8k8", ".m16n8k16", ".m16n8k32", ".m16n8k64", ".m16n8k128"], required), g!(Layout, &[".row", ".col"], required),
         g!(Layout, &[".row", ".col"], required), g!(Sat, &[".satfinite"])],
        reqs &[r!(".sp::ordered_metadata", 8, 5, 80), r!(".e4m3", 8, 4, 89), r!(".e5m2", 8, 4, 89)]),
    // ---- 9.7.16 Warpgroup-level matrix multiply-accumulate ----
    op!("wgmma" [".mma_async"], "9.7.16.5.2", "Warpgroup-collective asynchronous matrix multiply-accumulate with A from registers or shared memory (descriptor) and B from shared memory.", "wgmma.mma_async.sync.aligned.shape.dtype.atype.btype d, a-desc | a, b-desc, scale-d{, imm-scale-a, imm-scale-b{, imm-trans-a}{, imm-trans-b}}; wgmma.mma_async.sync.aligned.shape{.satfinite}.s32.atype.btype d, a, b-desc, scale-d; wgmma.mma_async.sync.aligned.shape.s32.b1.b1.and.popc d, a, b-desc, scale-d;", (4, 8), ptx (8, 0), sm 90 arch, types 3,
        [g!(Type, &[".f16", ".f32", ".bf16", ".tf32", ".e4m3", ".e5m2", ".s32", ".s8", ".u8", ".b1"], required), g!(Sync, &[".sync"], required),
         g!(Aligned, &[".aligned"], required), g!(Shape, WGMMA_SHAPES, required), g!(Sat, &[".satfinite"]), g!(Op, &[".and"]), g!(Popc, &[".popc"])]),
    op!("wgmma" [".mma_async", ".sp"], "9.7.16.6.4", "wgmma.mma_async with a 2:4 structured-sparse A, its metadata and selector.", "wgmma.mma_async.sp.sync.aligned.shape{.satfinite}.dtype.atype.btype d, a-desc | a, b-desc, sp-meta, sp-sel, scale-d{, imm-scale-a, imm-scale-b{, imm-trans-a}{, imm-trans-b}};", (6, 10), ptx (8, 2), sm 90 arch, types 3,
        [g!(Type, &[".f16", ".f32", ".bf16", ".tf32", ".e4m3", ".e5m2", ".s32", ".s8", ".u8"], required), g!(Sync, &[".sync"], required),
         g!(Aligned, &[".aligned"], required), g!(Shape, WGMMA_SP_SHAPES, required), g!(Sat, &[".satfinite"])]),
    op!("wgmma" [".fence"], "9.7.16.7.1", "Order register and shared-memory accesses before following wgmma.mma_async operations.", "wgmma.fence.sync.aligned;", (0, 0), ptx (8, 0), sm 90 arch, types 0,
        [g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required)]),
    op!("wgmma" [".commit_group"], "9.7.16.7.2", "Close the pending wgmma.mma_async operations into a wgmma-group.", "wgmma.commit_group.sync.aligned;", (0, 0), ptx (8, 0), sm 90 arch, types 0,
        [g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required)]),
    op!("wgmma" [".wait_group"], "9.7.16.7.3", "Wait until at most N wgmma-groups are pending.", "wgmma.wait_group.sync.aligned N;", (1, 1), ptx (8, 0), sm 90 arch, types 0,
        [g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required)]),
    // ---- 9.7.17 Stack manipulation ----
    op!("stacksave", "9.7.17.1", "Read the stack pointer into a register (preview feature).", "stacksave.type d;  .type = { .u32, .u64 }", (1, 1), ptx (7, 3), sm 52, types 1,
        [g!(Type, &[".u32", ".u64"], required)]),
    op!("stackrestore", "9.7.17.2", "Set the stack pointer from a value saved by stacksave (preview feature).", "stackrestore.type a;  .type = { .u32, .u64 }", (1, 1), ptx (7, 3), sm 52, types 1,
        [g!(Type, &[".u32", ".u64"], required)]),
    op!("alloca", "9.7.17.3", "Allocate memory on the local-memory stack (preview feature).", "alloca.type ptr, size{, immAlign};  .type = { .u32, .u64 }", (2, 3), ptx (7, 3), sm 52, types 1,
        [g!(Type, &[".u32", ".u64"], required)]),
    // ---- 9.7.18 Video ----
    video!(
        "vadd",
        "9.7.18.1.1",
        "Scalar video add of selected bytes or halfwords, with an optional secondary add/min/max or merge."
    ),
    video!(
        "vsub",
        "9.7.18.1.1",
        "Scalar video subtract of selected bytes or halfwords, with an optional secondary add/min/max or merge."
    ),
    video!(
        "vabsdiff",
        "9.7.18.1.1",
        "Scalar video absolute difference, with an optional secondary add/min/max or merge."
    ),
    video!(
        "vmin",
        "9.7.18.1.1",
        "Scalar video minimum, with an optional secondary add/min/max or merge."
    ),
    video!(
        "vmax",
        "9.7.18.1.1",
        "Scalar video maximum, with an optional secondary add/min/max or merge."
    ),
    op!("vshl", "9.7.18.1.2", "Scalar video shift left (clamped or wrapped amount), with an optional secondary add/min/max or merge.", "vshl.dtype.atype.u32{.sat}.mode{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};", (3, 4), ptx (2, 0), sm 20, types 3,
        [g!(Type, VIDEO, required), g!(Sat, &[".sat"]), g!(Mode2, &[".clamp", ".wrap"], required), g!(Op, &[".add", ".min", ".max"])]),
    op!("vshr", "9.7.18.1.2", "Scalar video shift right (clamped or wrapped amount), with an optional secondary add/min/max or merge.", "vshr.dtype.atype.u32{.sat}.mode{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};", (3, 4), ptx (2, 0), sm 20, types 3,
        [g!(Type, VIDEO, required), g!(Sat, &[".sat"]), g!(Mode2, &[".clamp", ".wrap"], required), g!(Op, &[".add", ".min", ".max"])]),
    op!("vmad", "9.7.18.1.3", "Scalar video multiply-add of selected parts, optionally negated, scaled or with .po (plus one).", "vmad.dtype.atype.btype{.po}{.sat}{.scale} d, {-}a{.asel}, {-}b{.bsel}, {-}c;  .scale = { .shr7, .shr15 }", (4, 4), ptx (2, 0), sm 20, types 3,
        [g!(Type, VIDEO, required), g!(Mode, &[".po"]), g!(Sat, &[".sat"]), g!(Scale, &[".shr7", ".shr15"])]),
    op!("vset", "9.7.18.1.4", "Scalar video compare of selected parts, with an optional secondary add/min/max or merge.", "vset.atype.btype.cmp{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};", (3, 4), ptx (2, 0), sm 20, types 2,
        [g!(Type, VIDEO, required), g!(Cmp, VCMP, required), g!(Op, &[".add", ".min", ".max"])]),
    simd!(
        "vadd2",
        "9.7.18.2.1",
        "Add of two halfword lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vsub2",
        "9.7.18.2.1",
        "Subtract of two halfword lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vavrg2",
        "9.7.18.2.1",
        "Rounded average of two halfword lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vabsdiff2",
        "9.7.18.2.1",
        "Absolute difference of two halfword lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vmin2",
        "9.7.18.2.1",
        "Minimum of two halfword lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vmax2",
        "9.7.18.2.1",
        "Maximum of two halfword lanes, merged into d by a mask or summed with .add."
    ),
    op!("vset2", "9.7.18.2.2", "Compare two halfword lanes into 0/1 results, merged into d by a mask or summed with .add (the manual's example also writes .max).", "vset2.atype.btype.cmp{.add} d{.mask}, a{.asel}, b{.bsel}, c;", (4, 4), ptx (3, 0), sm 30, types 2,
        [g!(Type, VIDEO, required), g!(Cmp, VCMP, required), g!(Op, &[".add", ".min", ".max"])]),
    simd!(
        "vadd4",
        "9.7.18.2.3",
        "Add of four byte lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vsub4",
        "9.7.18.2.3",
        "Subtract of four byte lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vavrg4",
        "9.7.18.2.3",
        "Rounded average of four byte lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vabsdiff4",
        "9.7.18.2.3",
        "Absolute difference of four byte lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vmin4",
        "9.7.18.2.3",
        "Minimum of four byte lanes, merged into d by a mask or summed with .add."
    ),
    simd!(
        "vmax4",
        "9.7.18.2.3",
        "Maximum of four byte lanes, merged into d by a mask or summed with .add."
    ),
    op!("vset4", "9.7.18.2.4", "Compare four byte lanes into 0/1 results, merged into d by a mask or summed with .add (the manual's example also writes .max).", "vset4.atype.btype.cmp{.add} d{.mask}, a{.asel}, b{.bsel}, c;", (4, 4), ptx (3, 0), sm 30, types 2,
        [g!(Type, VIDEO, required), g!(Cmp, VCMP, required), g!(Op, &[".add", ".min", ".max"])]),
    // ---- 9.7.19 Miscellaneous ----
    op!("brkpt", "9.7.19.1", "Suspend execution (for a debugger).", "brkpt;", (0, 0), ptx (1, 0), sm 11, types 0, []),
    op!("nanosleep", "9.7.19.2", "Suspend the thread for about the given number of nanoseconds (at most 1 ms).", "nanosleep.u32 t;", (1, 1), ptx (6, 3), sm 70, types 1,
        [g!(Type, &[".u32"], required)]),
    op!("pmevent", "9.7.19.3", "Trigger one performance-monitor event (or several, as a mask).", "pmevent a; pmevent.mask a;", (1, 1), ptx (1, 4), sm 10, types 0,
        [g!(Mode, &[".mask"])],
        reqs &[r!(".mask", 3, 0, 20)]),
    op!("trap", "9.7.19.4", "Abort execution and raise an error on the host.", "trap;", (0, 0), ptx (1, 0), sm 10, types 0, []),
    op!("setmaxnreg", "9.7.19.5", "Raise or lower the per-thread register budget of the warp.", "setmaxnreg.action.sync.aligned.u32 imm-reg-count;  .action = { .inc, .dec }", (1, 1), ptx (8, 0), sm 90 arch, types 1,
        [g!(Type, &[".u32"], required), g!(Op, &[".inc", ".dec"], required), g!(Sync, &[".sync"], required), g!(Aligned, &[".aligned"], required)]),
];

/// The first-level sub-instructions of the opcodes whose every entry has a `sub` prefix, for the
/// "needs a sub-instruction" diagnostic.
const SUBS: &[(&str, &[&str])] = &[
    ("cp", &[".async", ".reduce"]),
    ("multimem", &[".ld_reduce", ".st", ".red"]),
    ("createpolicy", &[".range", ".fractional", ".cvt"]),
    ("tensormap", &[".replace", ".cp_fenceproxy"]),
    (
        "mbarrier",
        &[
            ".init",
            ".inval",
            ".expect_tx",
            ".complete_tx",
            ".arrive",
            ".arrive_drop",
            ".test_wait",
            ".try_wait",
            ".pending_count",
        ],
    ),
    ("wmma", &[".load", ".store", ".mma"]),
    ("wgmma", &[".mma_async", ".fence", ".commit_group", ".wait_group"]),
];

/// The positions of an entry's `[address]` operands, read from its syntax: the operands written in
/// brackets, optional ones included (`st.async [a], b, [mbar]` gives 0 and 2).
pub fn address_operands(spec: &'static OpSpec) -> &'static [usize] {
    static CACHE: std::sync::OnceLock<Vec<Vec<usize>>> = std::sync::OnceLock::new();
    let all = CACHE.get_or_init(|| TABLE.iter().map(bracketed_operands).collect());
    &all[index_of(spec)]
}

/// The position of an entry in [`TABLE`].
fn index_of(spec: &'static OpSpec) -> usize {
    (spec as *const OpSpec as usize - TABLE.as_ptr() as usize) / std::mem::size_of::<OpSpec>()
}

/// The entries of an opcode token, in table order (primary first), from an index built once: the
/// checker decodes every instruction, so this must not scan the table.
pub fn entries(opcode: &str) -> &'static [&'static OpSpec] {
    static INDEX: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Vec<&'static OpSpec>>> =
        std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut m = rustc_hash::FxHashMap::<&'static str, Vec<&'static OpSpec>>::default();
        for s in TABLE {
            m.entry(s.name).or_default().push(s);
        }
        m
    });
    index.get(opcode).map_or(&[], Vec::as_slice)
}

fn bracketed_operands(spec: &OpSpec) -> Vec<usize> {
    let mut out = vec![];
    for stmt in spec.syntax.split(';') {
        let mut words = stmt.split_whitespace().skip_while(|w| w.starts_with('@'));
        match words.next() {
            Some(w) if !w.starts_with('.') => {}
            _ => continue,
        }
        let rest: Vec<&str> = words.collect();
        let rest = rest.join(" ");
        // Optional parts `{, x}` become plain operands; brackets keep their commas.
        let (mut depth, mut piece, mut k) = (0, String::new(), 0);
        let mut flush = |piece: &mut String, k: &mut usize| {
            let p = piece.trim();
            if !p.is_empty() {
                if p.starts_with('[') && !out.contains(k) {
                    out.push(*k);
                }
                *k += 1;
            }
            piece.clear();
        };
        for c in rest.chars() {
            match c {
                '[' => {
                    depth += 1;
                    piece.push(c);
                }
                ']' => {
                    depth -= 1;
                    piece.push(c);
                }
                '{' | '}' if depth == 0 => {}
                ',' if depth == 0 => flush(&mut piece, &mut k),
                _ => piece.push(c),
            }
        }
        flush(&mut piece, &mut k);
    }
    out.sort_unstable();
    out
}

/// Which operand of a memory instruction is its `[address]`: the first address operand of the opcode's
/// primary entry.
pub fn address_operand(opcode: &str) -> Option<usize> {
    let spec = entries(opcode).first()?;
    address_operands(spec).first().copied()
}

/// Whether an entry's first operand is written. It is not for stores, reductions without a result,
/// barriers, fences, waits with a count (`cp.async.wait_group N`), prefetches, and the instructions that
/// take only inputs (`nanosleep t`, `pmevent a`, `setmaxnreg n`, `stackrestore a`).
pub fn first_operand_is_destination(spec: &OpSpec) -> bool {
    if spec.operands.1 == 0 || matches!(spec.name, "cp" | "wgmma" | "brx" | "bra" | "ret" | "exit") {
        return false;
    }
    match (spec.name, spec.sub) {
        ("bar" | "barrier", _) => spec.groups.iter().any(|g| g.kind == G::Type),
        ("mbarrier", [m]) => !matches!(*m, ".init" | ".inval" | ".expect_tx" | ".complete_tx"),
        ("multimem", [m]) => *m == ".ld_reduce",
        ("tensormap", [m]) => *m == ".load",
        // `wmma.mma` writes its `d` fragment as `wmma.load` does; only `wmma.store` has none.
        ("wmma", [m]) => *m != ".store",
        (
            "st" | "red" | "sust" | "sured" | "stmatrix" | "prefetch" | "prefetchu" | "applypriority" | "discard"
            | "stackrestore" | "nanosleep" | "pmevent" | "setmaxnreg",
            _,
        ) => false,
        _ => true,
    }
}

/// The primary entry of an opcode token (`cp`, `ld`). A dotted form (`cp.async.bulk`, `ld.global.nc`,
/// `mbarrier.try_wait`) picks the entry that documents it: the entry of the manual section with that
/// title, else the entry with the longest matching `sub` prefix that accepts the modifiers, or knows most
/// of them.
pub fn lookup(opcode: &str) -> Option<&'static OpSpec> {
    let Some((name, rest)) = opcode.split_once('.') else {
        return entries(opcode).first().copied();
    };
    if let Some(sec) = SECTIONS
        .iter()
        .find(|s| s.title.split(['/', ',']).any(|t| t.trim() == opcode))
    {
        let in_sec = || TABLE.iter().filter(|s| s.section == sec.number);
        if let Some(s) = in_sec().find(|s| s.form() == opcode).or_else(|| in_sec().next()) {
            return Some(s);
        }
        if let Some(s) = TABLE.iter().find(|s| sec.opcodes.contains(&s.form().as_str())) {
            return Some(s);
        }
    }
    let mods: Vec<String> = rest.split('.').map(|m| format!(".{m}")).collect();
    let mut best: Option<(&'static OpSpec, (usize, bool, usize))> = None;
    for s in lookup_all(name) {
        if s.sub.len() > mods.len() || !s.sub.iter().zip(&mods).all(|(a, b)| a == b) {
            continue;
        }
        let known = mods[s.sub.len()..]
            .iter()
            .filter(|m| s.groups.iter().any(|g| g.values.contains(&m.as_str())))
            .count();
        let all: Vec<&str> = mods.iter().map(String::as_str).collect();
        let score = (s.sub.len(), decode_with(s, &all).is_ok(), known);
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((s, score));
        }
    }
    best.map(|(s, _)| s)
}

/// Every entry of an opcode token, in table order (the primary entry first).
pub fn lookup_all(opcode: &str) -> impl Iterator<Item = &'static OpSpec> + '_ {
    entries(opcode).iter().copied()
}

/// An instruction's modifiers, each placed in its group.
#[derive(Clone, Debug)]
pub struct Decoded {
    pub spec: &'static OpSpec,
    /// Inline for the usual handful of modifiers: decoding every instruction must not allocate.
    pub mods: smallvec::SmallVec<[(G, &'static str); 8]>,
}

impl Decoded {
    pub fn get(&self, g: G) -> Option<&'static str> {
        self.mods.iter().find(|(k, _)| *k == g).map(|&(_, v)| v)
    }
    pub fn has(&self, m: &str) -> bool {
        self.mods.iter().any(|&(_, v)| v == m)
    }
    /// The state space of the instruction's `k`-th address operand (counting address operands only):
    /// `cp.async.ca.shared.global [d], [s]` names the destination's space, then the source's; an
    /// instruction with one space names it for all of them.
    pub fn space_of_address(&self, k: usize) -> Option<&'static str> {
        self.spaces().nth(k).or_else(|| self.spaces().next())
    }
    /// The state spaces the instruction names, in the order written (destination, then source).
    pub fn spaces(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.mods
            .iter()
            .filter(|(g, _)| matches!(g, G::Space | G::SrcSpace))
            .map(|&(_, v)| v)
    }
    /// Types in the order written: for `cvt.f32.s32` that is destination, source. Packed types that have
    /// no [`Type`] of their own stand for the bit-size type of their register (`.e4m3x2` is `.b16`,
    /// `.u16x2` is `.b32`); other such names (`.e4m3`, `.s4`, `.b1` of matrix instructions) are skipped.
    pub fn types(&self) -> impl Iterator<Item = Type> + '_ {
        self.mods
            .iter()
            .filter(|(k, _)| *k == G::Type || *k == G::Size)
            .filter_map(|&(_, v)| {
                Type::from_dot(v).or(match v {
                    ".e4m3x2" | ".e5m2x2" => Some(Type::B16),
                    ".u16x2" | ".s16x2" => Some(Type::B32),
                    _ => None,
                })
            })
    }
    pub fn ty(&self) -> Option<Type> {
        self.types().next()
    }
    /// Whether the instruction decoded to its opcode's primary entry (the forms the lowering was written
    /// for); forms that only an extension entry accepts answer false.
    pub fn is_primary(&self) -> bool {
        self.spec.is_primary()
    }
    /// The `.version` and `sm_XX` this instruction needs: its entry's base requirement raised by the
    /// modifiers it uses.
    pub fn requires(&self) -> ((u32, u32), u32) {
        let (mut ptx, mut sm) = (self.spec.ptx, self.spec.sm);
        for r in self.spec.reqs.iter().filter(|r| self.has(r.value)) {
            ptx = ptx.max(r.ptx);
            sm = sm.max(r.sm);
        }
        // Requirements of combinations, which per-modifier entries cannot state (ptxas agrees with each):
        // `cvt` between `.bf16` and anything but `.f32` came with sm_90 and PTX 7.8; `.satfinite` into
        // the 16-bit float types and `.rna` tf32 came with PTX 8.1, and into tf32 with any other
        // rounding with PTX 8.6 and sm_100 (fp8 destinations keep the entry's own requirement).
        if self.spec.name == "cvt" {
            let ts: Vec<Type> = self.types().collect();
            if self.spec.is_primary()
                && ts.contains(&Type::Bf16)
                && ts.iter().any(|t| !matches!(t, Type::Bf16 | Type::F32))
            {
                ptx = ptx.max((7, 8));
                sm = sm.max(90);
            }
            if self.has(".satfinite") {
                match ts.first() {
                    Some(Type::F16 | Type::Bf16 | Type::F16x2 | Type::Bf16x2) => ptx = ptx.max((8, 1)),
                    Some(Type::Tf32) if self.get(G::Round) == Some(".rna") => ptx = ptx.max((8, 1)),
                    Some(Type::Tf32) => {
                        ptx = ptx.max((8, 6));
                        sm = sm.max(100);
                    }
                    _ => {}
                }
            }
        }
        (ptx, sm)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError<'m> {
    UnknownOpcode,
    /// The modifier at this index is not valid here; `suggestion` is the nearest valid one.
    BadModifier {
        index: usize,
        text: &'m str,
        suggestion: Option<&'static str>,
    },
    Repeated {
        index: usize,
        text: &'m str,
    },
    Missing {
        group: G,
        values: &'static [&'static str],
    },
}

impl DecodeError<'_> {
    /// How far decoding got: errors further along describe the intended form better.
    fn progress(&self, n: usize) -> usize {
        match self {
            DecodeError::UnknownOpcode => 0,
            DecodeError::BadModifier { index, .. } | DecodeError::Repeated { index, .. } => *index,
            DecodeError::Missing { .. } => n,
        }
    }
}

/// Places each modifier in a group of the instruction's entry. Among the entries of the opcode whose `sub`
/// prefix the modifiers start with, longer prefixes are tried first, then table order; the first entry
/// that accepts the modifiers wins. When none does, the error of the entry that got furthest is reported.
pub fn decode<'m>(opcode: &str, mods: &[&'m str]) -> Result<Decoded, DecodeError<'m>> {
    let mut cands: [Option<&'static OpSpec>; 32] = [None; 32];
    let (mut n, mut any) = (0, false);
    for &s in entries(opcode) {
        any = true;
        if s.sub.len() <= mods.len() && s.sub.iter().zip(mods).all(|(a, b)| a == b) && n < cands.len() {
            // Insertion keeps table order among equal prefix lengths.
            let at = cands[..n]
                .iter()
                .position(|c| c.is_some_and(|c| c.sub.len() < s.sub.len()))
                .unwrap_or(n);
            cands.copy_within(at..n, at + 1);
            cands[at] = Some(s);
            n += 1;
        }
    }
    if !any {
        return Err(DecodeError::UnknownOpcode);
    }
    if n == 0 {
        return Err(sub_error(opcode, mods));
    }
    let mut best: Option<((usize, bool), DecodeError<'m>)> = None;
    for s in cands[..n].iter().flatten() {
        match decode_with(s, mods) {
            Ok(d) => return Ok(d),
            Err(e) => {
                // Further is better; at equal progress, an error with a suggestion.
                let p = (
                    e.progress(mods.len()),
                    matches!(
                        e,
                        DecodeError::BadModifier {
                            suggestion: Some(_),
                            ..
                        }
                    ),
                );
                if best.as_ref().is_none_or(|(q, _)| p > *q) {
                    best = Some((p, e));
                }
            }
        }
    }
    Err(best.expect("at least one candidate").1)
}

/// No entry's `sub` prefix matches: report the first modifier where the sub-instruction goes wrong.
fn sub_error<'m>(opcode: &str, mods: &[&'m str]) -> DecodeError<'m> {
    let all = || entries(opcode).iter().copied();
    let depth = |s: &OpSpec| s.sub.iter().zip(mods).take_while(|(a, b)| a == b).count();
    let k = all().map(depth).max().unwrap_or(0);
    let next = all().filter(|s| s.sub.len() > k && depth(s) >= k);
    if k < mods.len() {
        return DecodeError::BadModifier {
            index: k,
            text: mods[k],
            suggestion: crate::diag::nearest(mods[k], next.map(|s| s.sub[k])),
        };
    }
    let values = match (k, SUBS.iter().find(|(o, _)| *o == opcode)) {
        (0, Some((_, v))) => v,
        _ => next.map(|s| std::slice::from_ref(&s.sub[k])).next().unwrap_or(&[]),
    };
    DecodeError::Missing { group: G::Sub, values }
}

/// The groups of an entry that list a modifier, in group order, from an index built once (decoding
/// every instruction of a large file must not compare each modifier with every value of every group).
fn groups_of(spec: &'static OpSpec, m: &str) -> &'static [u8] {
    type Index = Vec<rustc_hash::FxHashMap<&'static str, Vec<u8>>>;
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        TABLE
            .iter()
            .map(|s| {
                let mut map = rustc_hash::FxHashMap::<&'static str, Vec<u8>>::default();
                for (k, g) in s.groups.iter().enumerate() {
                    for &v in g.values {
                        let e = map.entry(v).or_default();
                        if e.last() != Some(&(k as u8)) {
                            e.push(k as u8);
                        }
                    }
                }
                map
            })
            .collect()
    });
    index[index_of(spec)].get(m).map_or(&[], Vec::as_slice)
}

fn decode_with<'m>(spec: &'static OpSpec, mods: &[&'m str]) -> Result<Decoded, DecodeError<'m>> {
    let mut out: smallvec::SmallVec<[(G, &'static str); 8]> = smallvec::SmallVec::new();
    out.extend(spec.sub.iter().map(|&v| (G::Sub, v)));
    let (mut filled, mut types) = (0u64, 0u8);
    for (index, &m) in mods.iter().enumerate().skip(spec.sub.len()) {
        let mut seen = false;
        let mut placed = None;
        for &k in groups_of(spec, m) {
            let (k, g) = (k as usize, &spec.groups[k as usize]);
            let v = *g.values.iter().find(|&&v| v == m).expect("indexed value");
            seen = true;
            if g.kind == G::Type {
                if types < spec.types.1 {
                    types += 1;
                    placed = Some((G::Type, v));
                    break;
                }
            } else if filled & (1 << k) == 0 {
                filled |= 1 << k;
                placed = Some((g.kind, v));
                break;
            }
        }
        match placed {
            Some(p) => out.push(p),
            None if seen => return Err(DecodeError::Repeated { index, text: m }),
            None => {
                let all = spec.groups.iter().flat_map(|g| g.values.iter().copied());
                return Err(DecodeError::BadModifier {
                    index,
                    text: m,
                    suggestion: crate::diag::nearest(m, all),
                });
            }
        }
    }
    for (k, g) in spec.groups.iter().enumerate() {
        let missing = if g.kind == G::Type {
            types < spec.types.0
        } else {
            g.required && filled & (1 << k) == 0
        };
        if missing {
            return Err(DecodeError::Missing {
                group: g.kind,
                values: g.values,
            });
        }
    }
    Ok(Decoded { spec, mods: out })
}

/// The `explain OPCODE` text, generated from the table entry. For an opcode's primary entry it also lists
/// the opcode's other forms.
pub fn describe(spec: &OpSpec) -> String {
    let title = SECTIONS
        .iter()
        .find(|s| s.number == spec.section)
        .map_or("", |s| s.title);
    let mut s = format!(
        "{} — {}\n  syntax:   {}\n  manual:   PTX ISA 8.5 section {} ({})\n  requires: PTX {}.{}, sm_{}{}\n  operands: {}\n",
        spec.form(),
        spec.summary,
        spec.syntax,
        spec.section,
        title,
        spec.ptx.0,
        spec.ptx.1,
        spec.sm,
        if spec.arch { "a (architecture-specific)" } else { "" },
        if spec.operands.0 == spec.operands.1 {
            spec.operands.0.to_string()
        } else {
            format!("{} to {}", spec.operands.0, spec.operands.1)
        }
    );
    if spec.types.1 > 1 {
        s.push_str(&format!(
            "  types:    {} type modifiers\n",
            if spec.types.0 == spec.types.1 {
                spec.types.0.to_string()
            } else {
                format!("{} to {}", spec.types.0, spec.types.1)
            }
        ));
    }
    if !spec.sub.is_empty() {
        s.push_str(&format!("  {:<11} {}  (leading)\n", "sub:", spec.sub.join(" ")));
    }
    for g in spec.groups {
        s.push_str(&format!(
            "  {:<11} {}{}\n",
            format!("{:?}:", g.kind).to_lowercase(),
            g.values.join(" "),
            if g.required { "  (required)" } else { "" }
        ));
    }
    for r in spec.reqs {
        s.push_str(&format!(
            "  {:<11} {} needs PTX {}.{}, sm_{}\n",
            "needs:", r.value, r.ptx.0, r.ptx.1, r.sm
        ));
    }
    if spec.is_primary() {
        let others: Vec<_> = lookup_all(spec.name).filter(|o| !std::ptr::eq(*o, spec)).collect();
        if !others.is_empty() {
            s.push_str(&format!(
                "  other forms of `{}` (explain one by the name shown):\n",
                spec.name
            ));
            for o in others {
                s.push_str(&format!("    {:<34} {} [{}]\n", explain_key(o), o.summary, o.section));
            }
        }
    }
    s
}

/// A dotted name that [`lookup`] resolves to this entry: its form, the title of its manual section, its
/// form with a modifier the opcode's primary entry does not take (`fma.f16`, `min.NaN`), or its base form.
pub fn explain_key(spec: &'static OpSpec) -> String {
    let hits = |k: &str| lookup(k).is_some_and(|s| std::ptr::eq(s, spec));
    let form = spec.form();
    if hits(&form) {
        return form;
    }
    let title = SECTIONS
        .iter()
        .find(|s| s.number == spec.section)
        .map_or("", |s| s.title);
    if hits(title) {
        return title.to_string();
    }
    let primary = lookup(spec.name);
    let in_primary = |v: &str| primary.is_some_and(|p| p.groups.iter().any(|g| g.values.contains(&v)));
    spec.groups
        .iter()
        .flat_map(|g| g.values.iter())
        .filter(|v| !in_primary(v))
        .map(|v| format!("{form}{v}"))
        .find(|k| hits(k))
        .unwrap_or_else(|| {
            let mut base = form.clone();
            for g in spec.groups {
                let n = if g.kind == G::Type {
                    spec.types.0 as usize
                } else {
                    usize::from(g.required)
                };
                for _ in 0..n {
                    base.push_str(g.values[0]);
                }
            }
            base
        })
}

/// Headings of chapter 9.7 that name no instruction: the `{}` and `@` syntax sections and two overviews.
/// Every other `9.7.x.y… Instructions: NAME` heading of the manual is in [`SECTIONS`]. (The headings
/// without an instruction name, such as "9.7.10.1. Cache Operators", "9.7.15.1. Matrix Shape" or
/// "9.7.14.15.4. Phase of the mbarrier object", are overviews too.)
pub const EXCLUDED_SECTIONS: &[(&str, &str)] = &[
    ("9.7.10.24", "Asynchronous copy"),
    ("9.7.13.1", "{}"),
    ("9.7.13.2", "@"),
    ("9.7.14.15", "mbarrier"),
];

macro_rules! sec {
    ($n:literal, $t:literal, [$($o:literal),+ $(,)?]) => {
        Section {
            number: $n,
            title: $t,
            opcodes: &[$($o),+],
        }
    };
}

/// Every instruction section of chapter 9.7 of the PTX ISA 8.5 manual, in order.
pub static SECTIONS: &[Section] = &[
    sec!("9.7.1.1", "add", ["add"]),
    sec!("9.7.1.2", "sub", ["sub"]),
    sec!("9.7.1.3", "mul", ["mul"]),
    sec!("9.7.1.4", "mad", ["mad"]),
    sec!("9.7.1.5", "mul24", ["mul24"]),
    sec!("9.7.1.6", "mad24", ["mad24"]),
    sec!("9.7.1.7", "sad", ["sad"]),
    sec!("9.7.1.8", "div", ["div"]),
    sec!("9.7.1.9", "rem", ["rem"]),
    sec!("9.7.1.10", "abs", ["abs"]),
    sec!("9.7.1.11", "neg", ["neg"]),
    sec!("9.7.1.12", "min", ["min"]),
    sec!("9.7.1.13", "max", ["max"]),
    sec!("9.7.1.14", "popc", ["popc"]),
    sec!("9.7.1.15", "clz", ["clz"]),
    sec!("9.7.1.16", "bfind", ["bfind"]),
    sec!("9.7.1.17", "fns", ["fns"]),
    sec!("9.7.1.18", "brev", ["brev"]),
    sec!("9.7.1.19", "bfe", ["bfe"]),
    sec!("9.7.1.20", "bfi", ["bfi"]),
    sec!("9.7.1.21", "szext", ["szext"]),
    sec!("9.7.1.22", "bmsk", ["bmsk"]),
    sec!("9.7.1.23", "dp4a", ["dp4a"]),
    sec!("9.7.1.24", "dp2a", ["dp2a"]),
    sec!("9.7.2.1", "add.cc", ["add"]),
    sec!("9.7.2.2", "addc", ["addc"]),
    sec!("9.7.2.3", "sub.cc", ["sub"]),
    sec!("9.7.2.4", "subc", ["subc"]),
    sec!("9.7.2.5", "mad.cc", ["mad"]),
    sec!("9.7.2.6", "madc", ["madc"]),
    sec!("9.7.3.1", "testp", ["testp"]),
    sec!("9.7.3.2", "copysign", ["copysign"]),
    sec!("9.7.3.3", "add", ["add"]),
    sec!("9.7.3.4", "sub", ["sub"]),
    sec!("9.7.3.5", "mul", ["mul"]),
    sec!("9.7.3.6", "fma", ["fma"]),
    sec!("9.7.3.7", "mad", ["mad"]),
    sec!("9.7.3.8", "div", ["div"]),
    sec!("9.7.3.9", "abs", ["abs"]),
    sec!("9.7.3.10", "neg", ["neg"]),
    sec!("9.7.3.11", "min", ["min"]),
    sec!("9.7.3.12", "max", ["max"]),
    sec!("9.7.3.13", "rcp", ["rcp"]),
    sec!("9.7.3.14", "rcp.approx.ftz.f64", ["rcp"]),
    sec!("9.7.3.15", "sqrt", ["sqrt"]),
    sec!("9.7.3.16", "rsqrt", ["rsqrt"]),
    sec!("9.7.3.17", "rsqrt.approx.ftz.f64", ["rsqrt"]),
    sec!("9.7.3.18", "sin", ["sin"]),
    sec!("9.7.3.19", "cos", ["cos"]),
    sec!("9.7.3.20", "lg2", ["lg2"]),
    sec!("9.7.3.21", "ex2", ["ex2"]),
    sec!("9.7.3.22", "tanh", ["tanh"]),
    sec!("9.7.4.1", "add", ["add"]),
    sec!("9.7.4.2", "sub", ["sub"]),
    sec!("9.7.4.3", "mul", ["mul"]),
    sec!("9.7.4.4", "fma", ["fma"]),
    sec!("9.7.4.5", "neg", ["neg"]),
    sec!("9.7.4.6", "abs", ["abs"]),
    sec!("9.7.4.7", "min", ["min"]),
    sec!("9.7.4.8", "max", ["max"]),
    sec!("9.7.4.9", "tanh", ["tanh"]),
    sec!("9.7.4.10", "ex2", ["ex2"]),
    sec!("9.7.7.1", "set", ["set"]),
    sec!("9.7.7.2", "setp", ["setp"]),
    sec!("9.7.7.3", "selp", ["selp"]),
    sec!("9.7.7.4", "slct", ["slct"]),
    sec!("9.7.8.1", "set", ["set"]),
    sec!("9.7.8.2", "setp", ["setp"]),
    sec!("9.7.9.1", "and", ["and"]),
    sec!("9.7.9.2", "or", ["or"]),
    sec!("9.7.9.3", "xor", ["xor"]),
    sec!("9.7.9.4", "not", ["not"]),
    sec!("9.7.9.5", "cnot", ["cnot"]),
    sec!("9.7.9.6", "lop3", ["lop3"]),
    sec!("9.7.9.7", "shf", ["shf"]),
    sec!("9.7.9.8", "shl", ["shl"]),
    sec!("9.7.9.9", "shr", ["shr"]),
    sec!("9.7.10.3", "mov", ["mov"]),
    sec!("9.7.10.4", "mov", ["mov"]),
    sec!("9.7.10.5", "shfl (deprecated)", ["shfl"]),
    sec!("9.7.10.6", "shfl.sync", ["shfl"]),
    sec!("9.7.10.7", "prmt", ["prmt"]),
    sec!("9.7.10.8", "ld", ["ld"]),
    sec!("9.7.10.9", "ld.global.nc", ["ld"]),
    sec!("9.7.10.10", "ldu", ["ldu"]),
    sec!("9.7.10.11", "st", ["st"]),
    sec!("9.7.10.12", "st.async", ["st.async"]),
    sec!(
        "9.7.10.13",
        "multimem.ld_reduce, multimem.st, multimem.red",
        ["multimem.ld_reduce", "multimem.st", "multimem.red"]
    ),
    sec!("9.7.10.14", "prefetch, prefetchu", ["prefetch", "prefetchu"]),
    sec!("9.7.10.15", "applypriority", ["applypriority"]),
    sec!("9.7.10.16", "discard", ["discard"]),
    sec!(
        "9.7.10.17",
        "createpolicy",
        ["createpolicy.range", "createpolicy.fractional", "createpolicy.cvt"]
    ),
    sec!("9.7.10.18", "isspacep", ["isspacep"]),
    sec!("9.7.10.19", "cvta", ["cvta"]),
    sec!("9.7.10.20", "cvt", ["cvt"]),
    sec!("9.7.10.21", "cvt.pack", ["cvt.pack"]),
    sec!("9.7.10.22", "mapa", ["mapa"]),
    sec!("9.7.10.23", "getctarank", ["getctarank"]),
    sec!("9.7.10.24.3", "cp.async", ["cp.async"]),
    sec!("9.7.10.24.4", "cp.async.commit_group", ["cp.async.commit_group"]),
    sec!(
        "9.7.10.24.5",
        "cp.async.wait_group / cp.async.wait_all",
        ["cp.async.wait_group", "cp.async.wait_all"]
    ),
    sec!("9.7.10.24.6", "cp.async.bulk", ["cp.async.bulk"]),
    sec!("9.7.10.24.7", "cp.reduce.async.bulk", ["cp.reduce.async.bulk"]),
    sec!("9.7.10.24.8", "cp.async.bulk.prefetch", ["cp.async.bulk.prefetch"]),
    sec!("9.7.10.24.9", "cp.async.bulk.tensor", ["cp.async.bulk.tensor"]),
    sec!(
        "9.7.10.24.10",
        "cp.reduce.async.bulk.tensor",
        ["cp.reduce.async.bulk.tensor"]
    ),
    sec!(
        "9.7.10.24.11",
        "cp.async.bulk.prefetch.tensor",
        ["cp.async.bulk.prefetch.tensor"]
    ),
    sec!(
        "9.7.10.24.12",
        "cp.async.bulk.commit_group",
        ["cp.async.bulk.commit_group"]
    ),
    sec!("9.7.10.24.13", "cp.async.bulk.wait_group", ["cp.async.bulk.wait_group"]),
    sec!("9.7.10.25", "tensormap.replace", ["tensormap.replace"]),
    sec!("9.7.11.3", "tex", ["tex"]),
    sec!("9.7.11.4", "tld4", ["tld4"]),
    sec!("9.7.11.5", "txq", ["txq"]),
    sec!("9.7.11.6", "istypep", ["istypep"]),
    sec!("9.7.12.1", "suld", ["suld"]),
    sec!("9.7.12.2", "sust", ["sust"]),
    sec!("9.7.12.3", "sured", ["sured"]),
    sec!("9.7.12.4", "suq", ["suq"]),
    sec!("9.7.13.3", "bra", ["bra"]),
    sec!("9.7.13.4", "brx.idx", ["brx"]),
    sec!("9.7.13.5", "call", ["call"]),
    sec!("9.7.13.6", "ret", ["ret"]),
    sec!("9.7.13.7", "exit", ["exit"]),
    sec!("9.7.14.1", "bar, barrier", ["bar", "barrier"]),
    sec!("9.7.14.2", "bar.warp.sync", ["bar"]),
    sec!("9.7.14.3", "barrier.cluster", ["barrier.cluster"]),
    sec!(
        "9.7.14.4",
        "membar/fence",
        ["membar", "fence", "fence.proxy", "fence.mbarrier_init", "membar.proxy"]
    ),
    sec!("9.7.14.5", "atom", ["atom"]),
    sec!("9.7.14.6", "red", ["red"]),
    sec!("9.7.14.7", "red.async", ["red.async"]),
    sec!("9.7.14.8", "vote (deprecated)", ["vote"]),
    sec!("9.7.14.9", "vote.sync", ["vote"]),
    sec!("9.7.14.10", "match.sync", ["match"]),
    sec!("9.7.14.11", "activemask", ["activemask"]),
    sec!("9.7.14.12", "redux.sync", ["redux"]),
    sec!("9.7.14.13", "griddepcontrol", ["griddepcontrol"]),
    sec!("9.7.14.14", "elect.sync", ["elect"]),
    sec!("9.7.14.15.9", "mbarrier.init", ["mbarrier.init"]),
    sec!("9.7.14.15.10", "mbarrier.inval", ["mbarrier.inval"]),
    sec!("9.7.14.15.11", "mbarrier.expect_tx", ["mbarrier.expect_tx"]),
    sec!("9.7.14.15.12", "mbarrier.complete_tx", ["mbarrier.complete_tx"]),
    sec!("9.7.14.15.13", "mbarrier.arrive", ["mbarrier.arrive"]),
    sec!("9.7.14.15.14", "mbarrier.arrive_drop", ["mbarrier.arrive_drop"]),
    sec!("9.7.14.15.15", "cp.async.mbarrier.arrive", ["cp.async.mbarrier.arrive"]),
    sec!(
        "9.7.14.15.16",
        "mbarrier.test_wait/mbarrier.try_wait",
        ["mbarrier.test_wait", "mbarrier.try_wait"]
    ),
    sec!("9.7.14.15.17", "mbarrier.pending_count", ["mbarrier.pending_count"]),
    sec!("9.7.14.16", "tensormap.cp_fenceproxy", ["tensormap.cp_fenceproxy"]),
    sec!("9.7.15.3.3", "wmma.load", ["wmma.load"]),
    sec!("9.7.15.3.4", "wmma.store", ["wmma.store"]),
    sec!("9.7.15.3.5", "wmma.mma", ["wmma.mma"]),
    sec!("9.7.15.4.14", "mma", ["mma"]),
    sec!("9.7.15.4.15", "ldmatrix", ["ldmatrix"]),
    sec!("9.7.15.4.16", "stmatrix", ["stmatrix"]),
    sec!("9.7.15.4.17", "movmatrix", ["movmatrix"]),
    sec!("9.7.15.5.3", "mma.sp/mma.sp::ordered_metadata", ["mma"]),
    sec!("9.7.16.5.2", "wgmma.mma_async", ["wgmma.mma_async"]),
    sec!("9.7.16.6.4", "wgmma.mma_async.sp", ["wgmma.mma_async.sp"]),
    sec!("9.7.16.7.1", "wgmma.fence", ["wgmma.fence"]),
    sec!("9.7.16.7.2", "wgmma.commit_group", ["wgmma.commit_group"]),
    sec!("9.7.16.7.3", "wgmma.wait_group", ["wgmma.wait_group"]),
    sec!("9.7.17.1", "stacksave", ["stacksave"]),
    sec!("9.7.17.2", "stackrestore", ["stackrestore"]),
    sec!("9.7.17.3", "alloca", ["alloca"]),
    sec!(
        "9.7.18.1.1",
        "vadd, vsub, vabsdiff, vmin, vmax",
        ["vadd", "vsub", "vabsdiff", "vmin", "vmax"]
    ),
    sec!("9.7.18.1.2", "vshl, vshr", ["vshl", "vshr"]),
    sec!("9.7.18.1.3", "vmad", ["vmad"]),
    sec!("9.7.18.1.4", "vset", ["vset"]),
    sec!(
        "9.7.18.2.1",
        "vadd2, vsub2, vavrg2, vabsdiff2, vmin2, vmax2",
        ["vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2"]
    ),
    sec!("9.7.18.2.2", "vset2", ["vset2"]),
    sec!(
        "9.7.18.2.3",
        "vadd4, vsub4, vavrg4, vabsdiff4, vmin4, vmax4",
        ["vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4"]
    ),
    sec!("9.7.18.2.4", "vset4", ["vset4"]),
    sec!("9.7.19.1", "brkpt", ["brkpt"]),
    sec!("9.7.19.2", "nanosleep", ["nanosleep"]),
    sec!("9.7.19.3", "pmevent", ["pmevent"]),
    sec!("9.7.19.4", "trap", ["trap"]),
    sec!("9.7.19.5", "setmaxnreg", ["setmaxnreg"]),
];

/// The manual section that documents a decoded instruction. An entry may serve several sections that
/// share its opcode (`add` is documented for integers in 9.7.1, for floats in 9.7.3 and for halves in
/// 9.7.4; `add.cc` in 9.7.2), so the choice goes by the modifiers a section's title names and by the
/// type family of its chapter.
pub fn section_of(d: &Decoded) -> &'static str {
    let form = d.spec.form();
    let candidates = SECTIONS
        .iter()
        .filter(|s| s.opcodes.iter().any(|o| *o == form || *o == d.spec.name));
    let family = |chapter: &str| -> Option<bool> {
        let t = d.ty()?;
        let half = matches!(t, Type::F16 | Type::F16x2 | Type::Bf16 | Type::Bf16x2);
        Some(match chapter {
            "9.7.1" | "9.7.2" => !t.is_float(),
            "9.7.3" => t.is_float() && !half,
            "9.7.4" | "9.7.8" => half,
            "9.7.7" => !half,
            _ => return None,
        })
    };
    let mut best: Option<(i32, &'static str)> = None;
    for s in candidates {
        let mut score = if s.number == d.spec.section { 1 } else { 0 };
        let deprecated = s.title.ends_with(" (deprecated)");
        // Title modifiers (`add.cc`, `rcp.approx.ftz.f64`, `bar.warp.sync`) must all be present.
        for m in title_modifiers(s.title) {
            score += if d.has(&m) || d.spec.sub.contains(&m.as_str()) {
                10
            } else {
                -100
            };
        }
        if deprecated {
            score += if d.has(".sync") { -100 } else { 3 };
        }
        let chapter = s.number.splitn(4, '.').take(3).collect::<Vec<_>>().join(".");
        match family(&chapter) {
            Some(true) => score += 5,
            Some(false) => score -= 5,
            None => {}
        }
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, s.number));
        }
    }
    best.map_or(d.spec.section, |(_, n)| n)
}

/// The modifiers a section title spells out: `rcp.approx.ftz.f64` gives `.approx .ftz .f64`; of
/// alternatives (`mma.sp/mma.sp::ordered_metadata`) the first counts.
pub fn title_modifiers(title: &str) -> Vec<String> {
    let first = title.split(['/', ' ', ',']).next().unwrap_or("");
    first.split('.').skip(1).map(|p| format!(".{p}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(inst: &str) -> Decoded {
        let mut parts = inst.split('.');
        let op = parts.next().unwrap();
        let mods: Vec<String> = parts.map(|m| format!(".{m}")).collect();
        let mods: Vec<&str> = mods.iter().map(String::as_str).collect();
        decode(op, &mods).unwrap_or_else(|e| panic!("{inst}: {e:?}"))
    }

    fn err(inst: &str) -> DecodeError<'static> {
        let mut parts = inst.split('.');
        let op = parts.next().unwrap();
        let mods: Vec<&'static str> = parts.map(|m| &*format!(".{m}").leak()).collect();
        decode(op, &mods).expect_err(inst)
    }

    #[test]
    fn decode_groups_modifiers() {
        let d = decode("ld", &[".global", ".nc", ".v2", ".f32"]).unwrap();
        assert_eq!(d.get(G::Space), Some(".global"));
        assert_eq!(d.get(G::Vec), Some(".v2"));
        assert_eq!(d.ty(), Some(Type::F32));
        let c = decode("cvt", &[".rn", ".f32", ".s32"]).unwrap();
        assert_eq!(c.types().collect::<Vec<_>>(), vec![Type::F32, Type::S32]);
    }

    #[test]
    fn decode_errors() {
        assert_eq!(
            decode("add", &[".u23"]).unwrap_err(),
            DecodeError::BadModifier {
                index: 0,
                text: ".u23",
                suggestion: Some(".u32")
            }
        );
        assert!(matches!(
            decode("add", &[]),
            Err(DecodeError::Missing { group: G::Type, .. })
        ));
        assert!(matches!(
            decode("add", &[".s32", ".s32"]),
            Err(DecodeError::Repeated { index: 1, .. })
        ));
        assert_eq!(decode("frobnicate", &[]).unwrap_err(), DecodeError::UnknownOpcode);
    }

    /// Forms the primary entries accept keep decoding to them, exactly as before the table grew.
    #[test]
    fn primary_forms_stay_primary() {
        for inst in [
            "add.s32",
            "add.rn.ftz.f32",
            "add.cc.u32",
            "ld.global.nc.v2.f32",
            "ld.param.u64",
            "st.shared.v4.b32",
            "bar.sync",
            "bar.warp.sync",
            "shfl.sync.bfly.b32",
            "shfl.up.b32",
            "vote.ballot.b32",
            "cvt.rn.f16x2.f32",
            "cvt.rzi.s32.f32",
            "atom.global.add.f32",
            "mov.b64",
            "fence.sc.gpu",
            "membar.gl",
            "rcp.approx.ftz.f64",
            "rsqrt.approx.ftz.f64",
        ] {
            let d = ok(inst);
            assert!(
                d.is_primary(),
                "{inst} decoded to {} [{}]",
                d.spec.form(),
                d.spec.section
            );
        }
    }

    #[test]
    fn integer_and_half_families() {
        let d = ok("add.u16x2");
        assert_eq!((d.spec.section, d.spec.sm, d.ty()), ("9.7.1.1", 90, Some(Type::B32)));
        let d = ok("add.rn.ftz.f16x2");
        assert_eq!(d.spec.section, "9.7.4.1");
        assert_eq!(
            d.mods.to_vec(),
            vec![(G::Round, ".rn"), (G::Ftz, ".ftz"), (G::Type, ".f16x2")]
        );
        assert_eq!(d.requires(), ((4, 2), 53));
        assert_eq!(ok("add.rn.bf16").requires(), ((7, 8), 90));
        let d = ok("fma.rn.oob.relu.bf16x2");
        assert_eq!((d.spec.section, d.requires()), ("9.7.4.4", ((8, 1), 90)));
        assert_eq!(
            ok("mul24.hi.s32").mods.to_vec(),
            vec![(G::Mode, ".hi"), (G::Type, ".s32")]
        );
        assert_eq!(
            ok("dp2a.lo.s32.u32").types().collect::<Vec<_>>(),
            vec![Type::S32, Type::U32]
        );
        assert_eq!(ok("bfind.shiftamt.u64").get(G::Mode), Some(".shiftamt"));
        let d = ok("min.NaN.xorsign.abs.f32");
        assert_eq!((d.spec.section, d.requires()), ("9.7.3.11", ((7, 2), 86)));
        assert_eq!(ok("min.NaN.bf16x2").spec.section, "9.7.4.7");
        assert_eq!(ok("max.relu.s32").spec.section, "9.7.1.13");
        assert_eq!(ok("ex2.approx.ftz.bf16").spec.section, "9.7.4.10");
        assert_eq!(ok("tanh.approx.f32").spec.section, "9.7.3.22");
        assert_eq!(ok("tanh.approx.f16x2").spec.section, "9.7.4.9");
        assert_eq!(ok("setp.gtu.ftz.f16x2").spec.section, "9.7.8.2");
        assert_eq!(ok("set.eq.u32.f16").spec.section, "9.7.8.1");
        assert_eq!(ok("testp.notanumber.f64").get(G::Op), Some(".notanumber"));
        assert_eq!(ok("lop3.or.b32").spec.section, "9.7.9.6");
        assert_eq!(ok("slct.ftz.f32.f32").types().count(), 2);
    }

    #[test]
    fn data_movement_family() {
        let d = ok("ld.global.nc.L1::no_allocate.L2::256B.v4.f32");
        assert_eq!(d.spec.section, "9.7.10.9");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Space, ".global"),
                (G::Nc, ".nc"),
                (G::Evict, ".L1::no_allocate"),
                (G::Prefetch, ".L2::256B"),
                (G::Vec, ".v4"),
                (G::Type, ".f32")
            ]
        );
        assert_eq!(d.requires(), ((7, 4), 75));
        // The manual puts the cache operator between `.global` and `.nc`.
        assert_eq!(ok("ld.global.cg.nc.b32").spec.section, "9.7.10.9");
        let d = ok("ld.relaxed.cluster.shared::cluster.L2::cache_hint.u32");
        assert_eq!(
            (d.spec.section, d.is_primary(), d.requires()),
            ("9.7.10.8", false, ((7, 8), 90))
        );
        assert_eq!(ok("ld.mmio.relaxed.sys.global.u32").get(G::Mmio), Some(".mmio"));
        let d = ok("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.s32");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sub, ".async"),
                (G::Space, ".shared::cluster"),
                (G::Completion, ".mbarrier::complete_tx::bytes"),
                (G::Vec, ".v2"),
                (G::Type, ".s32")
            ]
        );
        assert_eq!(ok("ldu.global.v2.f64").spec.form(), "ldu");
        assert_eq!(
            ok("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2").requires(),
            ((8, 2), 90)
        );
        assert_eq!(
            ok("multimem.red.release.gpu.global.add.u64").spec.form(),
            "multimem.red"
        );
        assert_eq!(ok("prefetch.global.L2::evict_last").requires(), ((7, 4), 80));
        assert_eq!(ok("prefetch.const.tensormap").requires(), ((8, 0), 90));
        let d = ok("createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sub, ".fractional"),
                (G::Evict, ".L2::evict_last"),
                (G::Evict, ".L2::evict_unchanged"),
                (G::Type, ".b64")
            ]
        );
        assert_eq!(ok("isspacep.param::entry").requires(), ((8, 3), 70));
        assert_eq!(ok("cvta.to.shared::cluster.u64").spec.sm, 90);
        let d = ok("cvt.rn.satfinite.relu.e4m3x2.f32");
        assert_eq!((d.spec.section, d.requires()), ("9.7.10.20", ((7, 8), 89)));
        assert_eq!(d.types().collect::<Vec<_>>(), vec![Type::B16, Type::F32]);
        let d = ok("cvt.pack.sat.u8.s32.b32");
        assert_eq!(d.spec.form(), "cvt.pack");
        assert_eq!(d.types().collect::<Vec<_>>(), vec![Type::U8, Type::S32, Type::B32]);
        assert_eq!(ok("cvt.pack.sat.s16.s32").types().count(), 2);
        assert_eq!(ok("mapa.shared::cluster.u64").spec.form(), "mapa");
        assert_eq!(ok("getctarank.u32").spec.form(), "getctarank");
        assert_eq!(ok("mov.b128").spec.section, "9.7.10.4");
        let d = ok("tensormap.replace.tile.global_dim.shared::cta.b1024.b32");
        assert!(d.spec.arch);
        assert_eq!(d.get(G::Field), Some(".global_dim"));
    }

    #[test]
    fn async_copy_family() {
        let d = ok("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes");
        assert_eq!(d.spec.section, "9.7.10.24.9");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sub, ".async"),
                (G::Sub, ".bulk"),
                (G::Sub, ".tensor"),
                (G::Dim, ".2d"),
                (G::Space, ".shared::cluster"),
                (G::SrcSpace, ".global"),
                (G::Completion, ".mbarrier::complete_tx::bytes")
            ]
        );
        // Destination and source spaces are told apart by position.
        let d = ok("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint");
        assert_eq!(
            (d.get(G::Space), d.get(G::SrcSpace)),
            (Some(".global"), Some(".shared::cta"))
        );
        let d = ok("cp.async.ca.shared.global.L2::128B");
        assert_eq!(d.spec.section, "9.7.10.24.3");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sub, ".async"),
                (G::Cache, ".ca"),
                (G::Space, ".shared"),
                (G::SrcSpace, ".global"),
                (G::Prefetch, ".L2::128B")
            ]
        );
        assert_eq!(ok("cp.async.commit_group").spec.section, "9.7.10.24.4");
        assert_eq!(ok("cp.async.wait_all").spec.section, "9.7.10.24.5");
        assert_eq!(ok("cp.async.bulk.wait_group.read").get(G::Read), Some(".read"));
        assert_eq!(ok("cp.async.bulk.commit_group").spec.section, "9.7.10.24.12");
        assert_eq!(ok("cp.async.bulk.prefetch.L2.global").spec.section, "9.7.10.24.8");
        assert_eq!(
            ok("cp.async.bulk.prefetch.tensor.5d.L2.global.im2col").spec.section,
            "9.7.10.24.11"
        );
        let d = ok("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16");
        assert_eq!(
            (d.spec.section, d.get(G::Op), d.ty()),
            ("9.7.10.24.7", Some(".add"), Some(Type::Bf16))
        );
        assert_eq!(
            ok("cp.reduce.async.bulk.tensor.3d.global.shared::cta.min.tile.bulk_group")
                .spec
                .section,
            "9.7.10.24.10"
        );
        assert_eq!(
            ok("cp.async.mbarrier.arrive.noinc.shared.b64").spec.section,
            "9.7.14.15.15"
        );
    }

    #[test]
    fn synchronisation_family() {
        let d = ok("mbarrier.try_wait.parity.shared::cta.b64");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sub, ".try_wait"),
                (G::Parity, ".parity"),
                (G::Space, ".shared::cta"),
                (G::Type, ".b64")
            ]
        );
        assert_eq!(d.requires(), ((7, 8), 90));
        assert_eq!(ok("mbarrier.test_wait.b64").requires(), ((7, 0), 80));
        let d = ok("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64");
        assert_eq!((d.get(G::Mode), d.requires()), (Some(".expect_tx"), ((8, 0), 90)));
        assert_eq!(ok("mbarrier.init.shared.b64").spec.section, "9.7.14.15.9");
        assert_eq!(ok("mbarrier.pending_count.b64").spec.section, "9.7.14.15.17");
        assert_eq!(ok("barrier.cluster.arrive.release.aligned").spec.section, "9.7.14.3");
        assert_eq!(ok("bar.red.popc.u32").get(G::Op), Some(".popc"));
        assert_eq!(ok("barrier.cta.red.or.aligned.pred").spec.section, "9.7.14.1");
        let d = ok("fence.proxy.async.shared::cta");
        assert_eq!(
            d.mods.to_vec(),
            vec![(G::Sub, ".proxy"), (G::Proxy, ".async"), (G::Space, ".shared::cta")]
        );
        assert_eq!(
            ok("fence.proxy.tensormap::generic.acquire.gpu").requires(),
            ((8, 3), 90)
        );
        assert_eq!(
            ok("fence.mbarrier_init.release.cluster").spec.form(),
            "fence.mbarrier_init"
        );
        assert_eq!(ok("membar.proxy.alias").spec.form(), "membar.proxy");
        let d = ok("atom.global.v4.f32.add");
        assert_eq!((d.is_primary(), d.requires()), (false, ((8, 1), 90)));
        assert_eq!(ok("atom.cas.b128").requires(), ((8, 3), 90));
        assert_eq!(ok("atom.shared.add.noftz.f16").requires(), ((6, 3), 70));
        assert_eq!(ok("red.global.add.noftz.bf16x2").spec.section, "9.7.14.6");
        let d = ok("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.min.u32");
        assert_eq!((d.spec.form().as_str(), d.get(G::Op)), ("red.async", Some(".min")));
        assert_eq!(ok("match.all.sync.b64").get(G::Mode), Some(".all"));
        assert_eq!(ok("redux.sync.xor.b32").get(G::Op), Some(".xor"));
        assert_eq!(ok("elect.sync").spec.sm, 90);
        assert_eq!(ok("activemask.b32").spec.sm, 30);
        assert!(
            ok("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned")
                .mods
                .len()
                == 8
        );
    }

    #[test]
    fn matrix_family() {
        let d = ok("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
        assert_eq!(d.spec.section, "9.7.15.4.14");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sync, ".sync"),
                (G::Aligned, ".aligned"),
                (G::Shape, ".m16n8k16"),
                (G::Layout, ".row"),
                (G::Layout, ".col"),
                (G::Type, ".f32"),
                (G::Type, ".bf16"),
                (G::Type, ".bf16"),
                (G::Type, ".f32")
            ]
        );
        assert_eq!(
            d.types().collect::<Vec<_>>(),
            vec![Type::F32, Type::Bf16, Type::Bf16, Type::F32]
        );
        assert_eq!(d.requires(), ((7, 0), 80));
        assert_eq!(
            ok("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32").requires(),
            ((8, 4), 89)
        );
        assert_eq!(
            ok("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc").get(G::Op),
            Some(".and")
        );
        assert_eq!(
            ok("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64.rn").get(G::Round),
            Some(".rn")
        );
        assert_eq!(
            err("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16"),
            DecodeError::Missing {
                group: G::Type,
                values: MMA_TYPES
            }
        );
        let d = ok("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.s8.s32");
        assert_eq!((d.spec.section, d.requires()), ("9.7.15.5.3", ((8, 5), 80)));
        let d = ok("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Sub, ".mma_async"),
                (G::Sync, ".sync"),
                (G::Aligned, ".aligned"),
                (G::Shape, ".m64n128k16"),
                (G::Type, ".f32"),
                (G::Type, ".f16"),
                (G::Type, ".f16")
            ]
        );
        assert!(d.spec.arch);
        assert_eq!(
            ok("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.u8.satfinite")
                .spec
                .section,
            "9.7.16.6.4"
        );
        assert_eq!(
            ok("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc").get(G::Popc),
            Some(".popc")
        );
        assert_eq!(ok("wgmma.fence.sync.aligned").spec.section, "9.7.16.7.1");
        assert_eq!(ok("wgmma.wait_group.sync.aligned").spec.operands, (1, 1));
        let d = ok("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16");
        assert_eq!((d.get(G::Frag), d.get(G::Layout)), (Some(".a"), Some(".row")));
        assert_eq!(
            ok("wmma.mma.sync.aligned.col.row.m8n8k4.rn.f64.f64.f64.f64").requires(),
            ((7, 0), 80)
        );
        assert_eq!(
            ok("wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32").requires(),
            ((6, 3), 75)
        );
        assert_eq!(
            ok("wmma.store.d.sync.aligned.col.m16n16k16.global.f32").spec.section,
            "9.7.15.3.4"
        );
        assert_eq!(
            ok("ldmatrix.sync.aligned.m8n8.x4.trans.shared::cta.b16").get(G::Num),
            Some(".x4")
        );
        assert_eq!(ok("stmatrix.sync.aligned.m8n8.x2.shared.b16").spec.sm, 90);
        assert_eq!(ok("movmatrix.sync.aligned.m8n8.trans.b16").spec.sm, 75);
    }

    #[test]
    fn texture_surface_video_misc_families() {
        let d = ok("tex.2d.v4.f32.f32");
        assert_eq!(
            d.mods.to_vec(),
            vec![(G::Geom, ".2d"), (G::Vec, ".v4"), (G::Type, ".f32"), (G::Type, ".f32")]
        );
        assert_eq!(ok("tex.grad.acube.v4.s32.f32").requires(), ((3, 1), 20));
        assert_eq!(ok("tld4.r.2d.v4.s32.f32").get(G::Comp), Some(".r"));
        assert_eq!(ok("txq.level.width.b32").get(G::Mip), Some(".level"));
        assert_eq!(ok("istypep.samplerref").get(G::Type), Some(".samplerref"));
        let d = ok("suld.b.2d.v2.b32.trap");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Class, ".b"),
                (G::Geom, ".2d"),
                (G::Vec, ".v2"),
                (G::Type, ".b32"),
                (G::Clamp, ".trap")
            ]
        );
        assert_eq!(ok("sust.p.3d.v4.b32.zero").requires(), ((3, 0), 20));
        assert_eq!(ok("sured.b.add.1d.u32.clamp").get(G::Op), Some(".add"));
        assert_eq!(ok("suq.memory_layout.b32").requires(), ((4, 2), 10));
        let d = ok("vadd4.u32.u32.u32.sat");
        assert_eq!(
            d.mods.to_vec(),
            vec![
                (G::Type, ".u32"),
                (G::Type, ".u32"),
                (G::Type, ".u32"),
                (G::Sat, ".sat")
            ]
        );
        assert_eq!(ok("vmad.s32.u32.s32.po.sat.shr15").get(G::Scale), Some(".shr15"));
        assert_eq!(ok("vshr.u32.s32.u32.wrap.max").get(G::Op), Some(".max"));
        assert_eq!(ok("vset2.u32.u32.ne.add").get(G::Cmp), Some(".ne"));
        assert_eq!(ok("brx.idx.uni").spec.section, "9.7.13.4");
        assert!(ok("setmaxnreg.inc.sync.aligned.u32").spec.arch);
        assert_eq!(ok("pmevent.mask").requires(), ((3, 0), 20));
        assert_eq!(ok("nanosleep.u32").spec.sm, 70);
        assert_eq!(ok("alloca.u64").spec.operands, (2, 3));
        for op in ["trap", "brkpt", "exit"] {
            assert!(decode(op, &[]).is_ok(), "{op}");
        }
    }

    #[test]
    fn sub_instruction_errors() {
        assert_eq!(
            err("cp.asinc.bulk"),
            DecodeError::BadModifier {
                index: 0,
                text: ".asinc",
                suggestion: Some(".async")
            }
        );
        assert_eq!(
            decode("mbarrier", &[]).unwrap_err(),
            DecodeError::Missing {
                group: G::Sub,
                values: SUBS.iter().find(|(o, _)| *o == "mbarrier").unwrap().1
            }
        );
        assert_eq!(
            err("cp.reduce"),
            DecodeError::Missing {
                group: G::Sub,
                values: &[".async"]
            }
        );
        // The entry that got furthest explains the error.
        assert_eq!(
            err("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::byte"),
            DecodeError::BadModifier {
                index: 6,
                text: ".mbarrier::complete_tx::byte",
                suggestion: Some(".mbarrier::complete_tx::bytes")
            }
        );
        assert_eq!(
            err("ld.global.nc.L1::evict_lats.f32"),
            DecodeError::BadModifier {
                index: 2,
                text: ".L1::evict_lats",
                suggestion: Some(".L1::evict_last")
            }
        );
        assert!(matches!(
            err("mma.sync.aligned.m16n8k16.row.row.col.f32.bf16.bf16.f32"),
            DecodeError::Repeated { index: 5, .. }
        ));
    }

    #[test]
    fn table_is_consistent() {
        for (i, a) in TABLE.iter().enumerate() {
            assert!(
                TABLE[i + 1..]
                    .iter()
                    .all(|b| (b.form(), b.syntax) != (a.form(), a.syntax)),
                "{} twice",
                a.form()
            );
            let types: Vec<_> = a.groups.iter().filter(|g| g.kind == G::Type).collect();
            assert!(types.len() <= 1, "{}: one Type group", a.form());
            assert_eq!(
                types.is_empty(),
                a.types.1 == 0,
                "{}: Type group and type count",
                a.form()
            );
            assert!(a.types.0 <= a.types.1 && a.operands.0 <= a.operands.1, "{}", a.form());
            assert!(a.groups.len() <= 64, "{}", a.form());
            for g in a.groups {
                assert!(g.kind != G::Sub, "{}: Sub is not a group", a.form());
                for v in g.values {
                    assert!(v.starts_with('.') && !a.sub.contains(v), "{}: {v}", a.form());
                }
            }
            for r in a.reqs {
                assert!(
                    a.groups.iter().any(|g| g.values.contains(&r.value)),
                    "{}: req {}",
                    a.form(),
                    r.value
                );
                assert!(
                    r.ptx >= a.ptx || r.sm >= a.sm,
                    "{}: req {} below the base",
                    a.form(),
                    r.value
                );
            }
        }
        // Every opcode whose entries all have a sub prefix lists its first-level subs in SUBS.
        let mut names: Vec<&str> = TABLE.iter().map(|s| s.name).collect();
        names.dedup();
        for name in names {
            if lookup_all(name).all(|s| !s.sub.is_empty()) {
                let mut want: Vec<&str> = lookup_all(name).map(|s| s.sub[0]).collect();
                want.sort();
                want.dedup();
                let mut have = SUBS.iter().find(|(o, _)| *o == name).expect(name).1.to_vec();
                have.sort();
                assert_eq!(have, want, "{name}");
            }
        }
    }

    /// Every entry is reachable: its base form, or its base form with one optional modifier, decodes to it.
    #[test]
    fn every_entry_is_reachable() {
        for spec in TABLE {
            let base: Vec<&str> = spec
                .sub
                .iter()
                .copied()
                .chain(spec.groups.iter().flat_map(|g| {
                    let n = if g.kind == G::Type {
                        spec.types.0 as usize
                    } else {
                        usize::from(g.required)
                    };
                    std::iter::repeat_n(g.values[0], n)
                }))
                .collect();
            let mut tries = vec![base.clone()];
            for g in spec.groups.iter().filter(|g| !g.required) {
                for v in g.values.iter() {
                    let mut m = base.clone();
                    m.push(v);
                    tries.push(m);
                }
            }
            assert!(
                tries
                    .iter()
                    .any(|m| decode(spec.name, m).is_ok_and(|d| std::ptr::eq(d.spec, spec))),
                "{} [{}] is unreachable",
                spec.form(),
                spec.section
            );
        }
    }

    #[test]
    fn address_operands_come_from_the_syntax() {
        let at = |inst: &str| address_operands(ok(inst).spec);
        assert_eq!(address_operand("ld"), Some(1));
        assert_eq!(address_operand("st"), Some(0));
        assert_eq!(address_operand("atom"), Some(1));
        assert_eq!(address_operand("red"), Some(0));
        assert_eq!(address_operand("add"), None);
        assert_eq!(address_operand("bra"), None);
        assert_eq!(address_operand("call"), None);
        assert_eq!(
            at("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32"),
            vec![0, 2]
        );
        assert_eq!(at("cp.async.ca.shared.global"), vec![0, 1]);
        assert_eq!(
            at("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"),
            vec![0, 1, 2]
        );
        assert_eq!(at("mbarrier.arrive.b64"), vec![1]);
        assert_eq!(at("mbarrier.init.b64"), vec![0]);
        assert_eq!(at("tex.2d.v4.f32.f32"), vec![1]);
        assert_eq!(at("sust.b.1d.b32.trap"), vec![0]);
        assert_eq!(at("wgmma.fence.sync.aligned"), Vec::<usize>::new());
    }

    #[test]
    fn destinations() {
        let dest = |inst: &str| first_operand_is_destination(ok(inst).spec);
        for inst in [
            "add.s32",
            "ld.global.f32",
            "atom.add.u32",
            "mbarrier.arrive.b64",
            "bar.red.popc.u32",
            "elect.sync",
            "wmma.load.a.sync.aligned.row.m16n16k16.f16",
            "multimem.ld_reduce.add.u32",
            "createpolicy.cvt.L2.b64",
        ] {
            assert!(dest(inst), "{inst}");
        }
        for inst in [
            "st.u32",
            "red.add.u32",
            "bar.sync",
            "bar.warp.sync",
            "cp.async.wait_group",
            "wgmma.wait_group.sync.aligned",
            "nanosleep.u32",
            "pmevent",
            "setmaxnreg.inc.sync.aligned.u32",
            "mbarrier.init.b64",
            "sust.b.1d.b32.trap",
            "wmma.store.d.sync.aligned.row.m16n16k16.f32",
            "tensormap.replace.tile.rank.b1024.b32",
            "red.async.relaxed.cluster.mbarrier::complete_tx::bytes.add.u32",
            "prefetch.L2",
            "membar.gl",
            "brx.idx",
        ] {
            assert!(!dest(inst), "{inst}");
        }
    }

    #[test]
    fn every_entry_can_be_explained() {
        for spec in TABLE {
            let key = explain_key(spec);
            assert!(
                lookup(&key).is_some_and(|s| std::ptr::eq(s, spec)),
                "`explain {key}` does not reach {} [{}]",
                spec.form(),
                spec.section
            );
        }
    }

    #[test]
    fn lookup_and_describe() {
        assert_eq!(lookup("cp").unwrap().form(), "cp.async");
        assert_eq!(lookup("cp.async.bulk.tensor").unwrap().section, "9.7.10.24.9");
        assert_eq!(lookup("ld.global.nc").unwrap().section, "9.7.10.9");
        assert_eq!(lookup("mbarrier.try_wait").unwrap().form(), "mbarrier.try_wait");
        assert_eq!(lookup("mma.sp").unwrap().section, "9.7.15.5.3");
        assert!(lookup("add.cc").unwrap().is_primary());
        assert!(lookup("nosuch").is_none());
        let fma = describe(lookup("fma").unwrap());
        assert!(fma.contains("requires: PTX 1.4, sm_20"), "{fma}");
        assert!(fma.contains("fma.rn"), "{fma}");
        let wg = describe(lookup("wgmma.mma_async").unwrap());
        assert!(wg.contains("sm_90a") && wg.contains("3 type modifiers"), "{wg}");
        let cp = describe(lookup("cp").unwrap());
        assert!(cp.contains("cp.reduce.async.bulk.tensor"), "{cp}");
    }

    #[test]
    fn sections_cover_the_table() {
        for (i, s) in SECTIONS.iter().enumerate() {
            assert!(
                SECTIONS[i + 1..].iter().all(|t| t.number != s.number),
                "{} twice",
                s.number
            );
            for form in s.opcodes {
                assert!(
                    TABLE.iter().any(|e| e.form() == *form),
                    "{} {}: no entry `{form}`",
                    s.number,
                    s.title
                );
            }
        }
        for e in TABLE {
            let s = SECTIONS
                .iter()
                .find(|s| s.number == e.section)
                .unwrap_or_else(|| panic!("{}: no section {}", e.form(), e.section));
            assert!(
                s.opcodes.contains(&e.form().as_str()),
                "{} is not listed in {}",
                e.form(),
                s.number
            );
        }
    }

    /// The instruction headings of chapter 9.7 in the manual, when its text is at hand.
    fn manual_headings() -> Option<Vec<(String, String)>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = ["../../shared/spec/ptx-isa-8.5.txt", "../shared/spec/ptx-isa-8.5.txt"]
            .iter()
            .find_map(|p| std::fs::read_to_string(root.join(p)).ok());
        let Some(text) = text else {
            println!("skipped: the PTX ISA 8.5 text (../shared/spec/ptx-isa-8.5.txt) is not present");
            return None;
        };
        let mut out = vec![];
        for line in text.lines() {
            let Some((num, rest)) = line.split_once(' ') else {
                continue;
            };
            let Some(num) = num.strip_suffix('.') else { continue };
            if !num.starts_with("9.7.") || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
                continue;
            }
            let lower = rest.to_ascii_lowercase();
            let Some(at) = lower
                .find("instructions: ")
                .map(|i| i + 14)
                .or_else(|| lower.find("instruction: ").map(|i| i + 13))
            else {
                continue;
            };
            let title = rest[at..].trim();
            if !title.is_empty() {
                out.push((num.to_string(), title.to_string()));
            }
        }
        Some(out)
    }

    /// The instruction lines of the manual's own examples (`../shared/corpus/isa-examples`), when present.
    /// Returns (record id, whether the corpus marks the record suspect, instruction text).
    fn manual_examples() -> Option<Vec<(String, bool, String)>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = [
            "../../shared/corpus/isa-examples/examples.json",
            "../shared/corpus/isa-examples/examples.json",
        ]
        .iter()
        .find_map(|p| std::fs::read_to_string(root.join(p)).ok());
        let Some(text) = text else {
            println!("skipped: ../shared/corpus/isa-examples/examples.json is not present");
            return None;
        };
        // A JSON string value after `"key": `, unescaped (enough for this file).
        fn string(rec: &str, key: &str) -> Option<String> {
            let at = rec.find(&format!("\"{key}\": \""))? + key.len() + 5;
            let mut out = String::new();
            let mut chars = rec[at..].chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return Some(out),
                    '\\' => match chars.next()? {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'u' => {
                            let hex: String = chars.by_ref().take(4).collect();
                            out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?).unwrap_or('?'));
                        }
                        other => out.push(other),
                    },
                    c => out.push(c),
                }
            }
            None
        }
        let mut out = vec![];
        for rec in text.split("\"id\": ").skip(1) {
            if string(rec, "kind").as_deref() != Some("instruction") {
                continue;
            }
            let id = rec.split('"').nth(1).unwrap_or("?").to_string();
            let suspect = rec.contains("\"suspect\": ");
            let code = string(rec, "code").unwrap_or_default();
            for line in code.lines() {
                let line = line.split("//").next().unwrap_or("");
                for stmt in line.split(';') {
                    let mut words = stmt.split_whitespace().peekable();
                    while words.peek().is_some_and(|w| w.ends_with(':') || w.starts_with('@')) {
                        words.next();
                    }
                    let Some(first) = words.next() else { continue };
                    let opcode_like = first.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                        && first.chars().all(|c| c.is_ascii_alphanumeric() || "._:".contains(c));
                    if opcode_like {
                        out.push((id.clone(), suspect, first.to_string()));
                    }
                }
            }
        }
        Some(out)
    }

    /// Every instruction in the manual's examples decodes, except the ones the corpus marks suspect.
    #[test]
    fn manual_examples_decode() {
        let Some(examples) = manual_examples() else { return };
        let (mut good, mut bad) = (0, vec![]);
        for (id, suspect, inst) in &examples {
            let mut parts = inst.split('.');
            let op = parts.next().unwrap();
            let mods: Vec<String> = parts.map(|m| format!(".{m}")).collect();
            let mods: Vec<&str> = mods.iter().map(String::as_str).collect();
            match decode(op, &mods) {
                Ok(_) => good += 1,
                Err(e) => bad.push(format!(
                    "{id}{} {inst}: {e:?}",
                    if *suspect { " (suspect)" } else { "" }
                )),
            }
        }
        println!("{good} example instructions decode");
        for b in &bad {
            println!("  {b}");
        }
        assert!(good > 400, "only {good} example instructions found");
        let unexpected: Vec<_> = bad.iter().filter(|b| !b.contains("(suspect)")).collect();
        assert!(unexpected.is_empty(), "{unexpected:#?}");
    }

    #[test]
    fn sections_match_the_manual() {
        let Some(headings) = manual_headings() else { return };
        let want: Vec<(String, String)> = headings
            .into_iter()
            .filter(|(n, t)| !EXCLUDED_SECTIONS.contains(&(n.as_str(), t.as_str())))
            .collect();
        let have: Vec<(String, String)> = SECTIONS
            .iter()
            .map(|s| (s.number.to_string(), s.title.to_string()))
            .collect();
        assert_eq!(have, want);
        assert_eq!(SECTIONS.len(), 176);
    }
}
