//! The ISA table: one declarative description per opcode, written from the PTX ISA manual (chapter 9.7).
//! The checker, the lowering and `ptx-jit explain` all read it; nothing else spells out modifiers.

use crate::types::Type;

/// What a group of modifiers means. At most one modifier of each group may appear, except `Type`,
/// which `cvt` and `setp`-like instructions may carry twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum G {
    Type,
    Space,
    Round,
    Cmp,
    BoolOp,
    /// `.lo`/`.hi`/`.wide` of `mul`/`mad`.
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
    /// The operation of `atom`/`red`.
    Op,
    /// `.sync`/`.arrive`/`.aligned` of barriers.
    Sync,
    Cc,
    Size,
}

#[derive(Debug)]
pub struct Group {
    pub kind: G,
    pub values: &'static [&'static str],
    pub required: bool,
}

#[derive(Debug)]
pub struct OpSpec {
    pub name: &'static str,
    pub section: &'static str,
    pub summary: &'static str,
    pub groups: &'static [Group],
    /// Operand count, inclusive range.
    pub operands: (u8, u8),
    /// Operand shape for `explain`, in the manual's notation.
    pub syntax: &'static str,
    /// Minimum `.version` (major, minor) and `sm_XX`.
    pub ptx: (u32, u32),
    pub sm: u32,
    /// How many `Type` modifiers the instruction takes (1 for most, 2 for `cvt`).
    pub types: u8,
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
const ATOMTY: &[&str] = &[".b32", ".b64", ".u32", ".u64", ".s32", ".s64", ".f32", ".f64"];
const ATOMOP: &[&str] = &[
    ".and", ".or", ".xor", ".cas", ".exch", ".add", ".inc", ".dec", ".min", ".max",
];
const CARRYTY: &[&str] = &[".u32", ".s32", ".u64", ".s64"];
const ROUND: &[&str] = &[".rn", ".rz", ".rm", ".rp"];
const CVT_ROUND: &[&str] = &[".rn", ".rz", ".rm", ".rp", ".rni", ".rzi", ".rmi", ".rpi"];
const CMP: &[&str] = &[
    ".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".lo", ".ls", ".hi", ".hs", ".equ", ".neu", ".ltu", ".leu", ".gtu",
    ".geu", ".num", ".nan",
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

macro_rules! op {
    ($name:literal, $sec:literal, $sum:literal, $syn:literal, ($lo:literal, $hi:literal), ptx ($pm:literal, $pn:literal), sm $sm:literal, types $t:literal, [$($g:expr),* $(,)?]) => {
        OpSpec { name: $name, section: $sec, summary: $sum, syntax: $syn, operands: ($lo, $hi), ptx: ($pm, $pn), sm: $sm, types: $t, groups: &[$($g),*] }
    };
}

pub static TABLE: &[OpSpec] = &[
    op!("add", "9.7.1.1", "Add two values.", "add{.sat}{.rnd}{.ftz}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Sat, &[".sat"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Cc, &[".cc"])]),
    op!("sub", "9.7.1.2", "Subtract one value from another.", "sub{.sat}{.rnd}{.ftz}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Sat, &[".sat"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Cc, &[".cc"])]),
    op!("mul", "9.7.1.5", "Multiply two values; integers keep the low, high or whole (wide) product.", "mul{.hi,.lo,.wide}{.rnd}{.ftz}{.sat}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Mode, &[".lo", ".hi", ".wide"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])]),
    op!("mad", "9.7.1.6", "Multiply two values and add a third.", "mad{.hi,.lo,.wide}{.rnd}{.ftz}{.sat}.type d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Mode, &[".lo", ".hi", ".wide"]), g!(Round, ROUND), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"]), g!(Cc, &[".cc"])]),
    op!("addc", "9.7.2.2", "Add with carry-in (and optional carry-out).", "addc{.cc}.type d, a, b;", (3, 3), ptx (1, 2), sm 10, types 1,
        [g!(Type, CARRYTY, required), g!(Cc, &[".cc"])]),
    op!("subc", "9.7.2.4", "Subtract with borrow-in (and optional borrow-out).", "subc{.cc}.type d, a, b;", (3, 3), ptx (1, 2), sm 10, types 1,
        [g!(Type, CARRYTY, required), g!(Cc, &[".cc"])]),
    op!("madc", "9.7.2.6", "Multiply, then add with carry-in (and optional carry-out).", "madc{.hi,.lo}{.cc}.type d, a, b, c;", (4, 4), ptx (3, 0), sm 20, types 1,
        [g!(Type, CARRYTY, required), g!(Mode, &[".lo", ".hi"]), g!(Cc, &[".cc"])]),
    op!("fma", "9.7.3.6", "Fused multiply-add with a single rounding.", "fma.rnd{.ftz}{.sat}.type d, a, b, c;", (4, 4), ptx (1, 4), sm 20, types 1,
        [g!(Type, FLOAT, required), g!(Round, ROUND, required), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])]),
    op!("copysign", "9.7.3.2", "Copy the sign bit of a into b.", "copysign.type d, a, b;", (3, 3), ptx (2, 0), sm 20, types 1,
        [g!(Type, FLOAT, required)]),
    op!("div", "9.7.1.8", "Divide one value by another.", "div{.approx,.full,.rnd}{.ftz}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Round, ROUND), g!(Approx, &[".approx", ".full"]), g!(Ftz, &[".ftz"])]),
    op!("rem", "9.7.1.9", "Remainder of integer division.", "rem.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, INT, required)]),
    op!("min", "9.7.1.11", "Minimum of two values.", "min{.ftz}{.NaN}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Ftz, &[".ftz"])]),
    op!("max", "9.7.1.12", "Maximum of two values.", "max{.ftz}{.NaN}.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, ARITH, required), g!(Ftz, &[".ftz"])]),
    op!("neg", "9.7.1.10", "Arithmetic negation.", "neg{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".s16", ".s32", ".s64", ".f32", ".f64"], required), g!(Ftz, &[".ftz"])]),
    op!("abs", "9.7.1.10", "Absolute value.", "abs{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".s16", ".s32", ".s64", ".f32", ".f64"], required), g!(Ftz, &[".ftz"])]),
    op!("and", "9.7.8.1", "Bitwise AND.", "and.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("or", "9.7.8.2", "Bitwise OR.", "or.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("xor", "9.7.8.3", "Bitwise exclusive OR.", "xor.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("not", "9.7.8.4", "Bitwise negation.", "not.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1, [g!(Type, BITS, required)]),
    op!("shl", "9.7.8.8", "Shift left, zero-filling.", "shl.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64"], required)]),
    op!("shr", "9.7.8.9", "Shift right; signed types fill with the sign bit.", "shr.type d, a, b;", (3, 3), ptx (1, 0), sm 10, types 1,
        [g!(Type, SHIFT, required)]),
    op!("popc", "9.7.8.12", "Count the set bits.", "popc.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("clz", "9.7.8.13", "Count leading zero bits.", "clz.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("brev", "9.7.8.15", "Reverse the order of the bits.", "brev.type d, a;", (2, 2), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("sqrt", "9.7.3.11", "Square root.", "sqrt{.approx,.rnd}{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, FLOAT, required), g!(Round, ROUND), g!(Approx, &[".approx"]), g!(Ftz, &[".ftz"])]),
    op!("rcp", "9.7.3.9", "Reciprocal.", "rcp{.approx,.rnd}{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, FLOAT, required), g!(Round, ROUND), g!(Approx, &[".approx"]), g!(Ftz, &[".ftz"])]),
    op!("rsqrt", "9.7.3.12", "Reciprocal of the square root.", "rsqrt.approx{.ftz}.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, FLOAT, required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("sin", "9.7.3.14", "Sine (approximate).", "sin.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("cos", "9.7.3.15", "Cosine (approximate).", "cos.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("lg2", "9.7.3.16", "Base-2 logarithm (approximate).", "lg2.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("ex2", "9.7.3.17", "Base-2 exponential (approximate).", "ex2.approx{.ftz}.f32 d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".f32"], required), g!(Approx, &[".approx"], required), g!(Ftz, &[".ftz"])]),
    op!("atom", "9.7.13.5", "Atomic read-modify-write; d receives the old value.", "atom{.sem}{.scope}{.space}.op.type d, [a], b{, c};", (3, 4), ptx (1, 1), sm 11, types 1,
        [g!(Type, ATOMTY, required), g!(Op, ATOMOP, required), g!(Space, &[".global", ".shared", ".shared::cta"]),
         g!(Sem, &[".relaxed", ".acquire", ".release", ".acq_rel"]), g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"])]),
    op!("red", "9.7.13.6", "Atomic reduction into memory, without a result.", "red{.sem}{.scope}{.space}.op.type [a], b;", (2, 2), ptx (1, 2), sm 11, types 1,
        [g!(Type, ATOMTY, required), g!(Op, ATOMOP, required), g!(Space, &[".global", ".shared", ".shared::cta"]),
         g!(Sem, &[".relaxed", ".release"]), g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"])]),
    op!("shf", "9.7.8.10", "Funnel shift of the 64-bit pair b:a.", "shf.{l,r}{.clamp,.wrap}.b32 d, a, b, c;", (4, 4), ptx (3, 1), sm 32, types 1,
        [g!(Type, &[".b32"], required), g!(Dir, &[".l", ".r"], required), g!(Mode2, &[".clamp", ".wrap"], required)]),
    op!("lop3", "9.7.8.6", "Any logic function of three inputs, given as a truth table.", "lop3.b32 d, a, b, c, immLut;", (5, 5), ptx (4, 3), sm 50, types 1,
        [g!(Type, &[".b32"], required)]),
    op!("bfe", "9.7.8.16", "Extract a bit field (sign-extended for signed types).", "bfe.type d, a, b, c;", (4, 4), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".u32", ".u64", ".s32", ".s64"], required)]),
    op!("bfi", "9.7.8.17", "Insert a bit field.", "bfi.type f, a, b, c, d;", (5, 5), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32", ".b64"], required)]),
    op!("membar", "9.7.13.4", "Memory barrier at a scope.", "membar.{cta,gl,sys};", (0, 0), ptx (1, 4), sm 10, types 0,
        [g!(Scope, &[".cta", ".gl", ".sys"], required)]),
    op!("fence", "9.7.13.4", "Memory fence with the given semantics and scope.", "fence{.sem}.scope;", (0, 0), ptx (6, 0), sm 70, types 0,
        [g!(Sem, &[".sc", ".acq_rel"]), g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"], required)]),
    op!("mov", "9.7.9.1", "Copy a register, immediate, special register or the address of a variable.", "mov.type d, a;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, ANY, required)]),
    op!("ld", "9.7.9.8", "Load from a state space.", "ld{.weak,.volatile}{.ss}{.cop}{.vec}.type d, [a];", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, MEMTY, required), g!(Space, SPACES), g!(Sem, &[".weak", ".volatile", ".relaxed", ".acquire"]),
         g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"]), g!(Cache, &[".ca", ".cg", ".cs", ".lu", ".cv", ".nc"]),
         g!(Vec, &[".v2", ".v4"])]),
    op!("st", "9.7.9.10", "Store to a state space.", "st{.weak,.volatile}{.ss}{.cop}{.vec}.type [a], b;", (2, 2), ptx (1, 0), sm 10, types 1,
        [g!(Type, MEMTY, required), g!(Space, SPACES), g!(Sem, &[".weak", ".volatile", ".relaxed", ".release"]),
         g!(Scope, &[".cta", ".cluster", ".gpu", ".sys"]), g!(Cache, &[".wb", ".cg", ".cs", ".wt"]), g!(Vec, &[".v2", ".v4"])]),
    op!("cvt", "9.7.9.21", "Convert between types, with rounding and saturation.", "cvt{.irnd,.frnd}{.ftz}{.sat}.dtype.atype d, a; cvt.frnd.f16x2.f32 d, a, b;", (2, 3), ptx (1, 0), sm 10, types 2,
        [g!(Type, CVTTY, required), g!(Round, CVT_ROUND), g!(Ftz, &[".ftz"]), g!(Sat, &[".sat"])]),
    op!("cvta", "9.7.9.19", "Convert between a state-space address and a generic address.", "cvta{.to}.space.size d, a;", (2, 2), ptx (2, 0), sm 20, types 0,
        [g!(To, &[".to"]), g!(Space, &[".global", ".shared", ".shared::cta", ".local", ".const", ".param", ".param::entry"], required),
         g!(Size, &[".u32", ".u64"], required)]),
    op!("setp", "9.7.7.2", "Compare two values and set a predicate, optionally combined with another.", "setp.CmpOp{.BoolOp}{.ftz}.type p[|q], a, b{, {!}c};", (3, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required),
         g!(Cmp, CMP, required), g!(BoolOp, &[".and", ".or", ".xor"]), g!(Ftz, &[".ftz"])]),
    op!("set", "9.7.7.1", "Compare and write all ones (or 1.0f) or zero, optionally combined with a predicate.", "set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c};", (3, 4), ptx (1, 0), sm 10, types 2,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required),
         g!(Cmp, CMP, required), g!(BoolOp, &[".and", ".or", ".xor"]), g!(Ftz, &[".ftz"])]),
    op!("prmt", "9.7.10.7", "Permute bytes of the pair b:a.", "prmt.b32{.mode} d, a, b, c;", (4, 4), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".b32"], required), g!(Dir, &[".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"])]),
    op!("griddepcontrol", "9.7.14.13", "Signal or wait for programmatic dependent launches.", "griddepcontrol.{launch_dependents,wait};", (0, 0), ptx (7, 8), sm 90, types 0,
        [g!(Sync, &[".launch_dependents", ".wait"], required)]),
    op!("selp", "9.7.7.3", "Select between two values by a predicate.", "selp.type d, a, b, c;", (4, 4), ptx (1, 0), sm 10, types 1,
        [g!(Type, &[".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f32", ".f64"], required)]),
    op!("bra", "9.7.12.2", "Branch to a label, optionally under a predicate.", "@p bra{.uni} target;", (1, 1), ptx (1, 0), sm 10, types 0,
        [g!(Uni, &[".uni"])]),
    op!("call", "9.7.12.4", "Call a function, passing .param arguments.", "call{.uni} (ret), func, (args);", (1, 3), ptx (1, 0), sm 10, types 0,
        [g!(Uni, &[".uni"])]),
    op!("ret", "9.7.12.5", "Return from a function (ends the thread in a kernel).", "ret{.uni};", (0, 0), ptx (1, 0), sm 10, types 0,
        [g!(Uni, &[".uni"])]),
    op!("exit", "9.7.12.6", "End the thread.", "exit;", (0, 0), ptx (1, 0), sm 10, types 0, []),
    op!("bar", "9.7.13.1", "Barrier synchronisation of the threads of a CTA (or, with .warp, of a warp).", "bar{.cta}.sync a{, b}; bar.warp.sync membermask;", (1, 2), ptx (1, 0), sm 10, types 0,
        [g!(Sync, &[".sync", ".arrive", ".red"], required), g!(Scope, &[".cta", ".warp"]), g!(Uni, &[".aligned"])]),
    op!("shfl", "9.7.10.6", "Exchange a register between the threads of a warp.", "shfl.sync.mode.b32 d[|p], a, b, c, membermask;", (4, 5), ptx (3, 0), sm 30, types 1,
        [g!(Type, &[".b32"], required), g!(Dir, &[".up", ".down", ".bfly", ".idx"], required), g!(Sync, &[".sync"])]),
    op!("vote", "9.7.13.8", "Vote across the threads of a warp.", "vote.sync.mode.pred d, {!}a, membermask; vote.sync.ballot.b32 d, {!}a, membermask;", (2, 3), ptx (2, 0), sm 20, types 1,
        [g!(Type, &[".pred", ".b32"], required), g!(Dir, &[".all", ".any", ".uni", ".ballot"], required), g!(Sync, &[".sync"])]),
    op!("barrier", "9.7.13.1", "Barrier synchronisation; the non-aligned form of bar.", "barrier{.cta}.sync{.aligned} a{, b};", (1, 2), ptx (6, 0), sm 30, types 0,
        [g!(Sync, &[".sync", ".arrive", ".red"], required), g!(Scope, &[".cta"]), g!(Uni, &[".aligned"])]),
];

/// Which operand of a memory instruction is its `[address]`.
pub fn address_operand(opcode: &str) -> Option<usize> {
    match opcode {
        "ld" | "atom" => Some(1),
        "st" | "red" => Some(0),
        _ => None,
    }
}

pub fn lookup(opcode: &str) -> Option<&'static OpSpec> {
    TABLE.iter().find(|s| s.name == opcode)
}

/// An instruction's modifiers, each placed in its group.
#[derive(Clone, Debug)]
pub struct Decoded {
    pub spec: &'static OpSpec,
    pub mods: Vec<(G, &'static str)>,
}

impl Decoded {
    pub fn get(&self, g: G) -> Option<&'static str> {
        self.mods.iter().find(|(k, _)| *k == g).map(|&(_, v)| v)
    }
    pub fn has(&self, m: &str) -> bool {
        self.mods.iter().any(|&(_, v)| v == m)
    }
    /// Types in the order written: for `cvt.f32.s32` that is destination, source.
    pub fn types(&self) -> impl Iterator<Item = Type> + '_ {
        self.mods
            .iter()
            .filter(|(k, _)| *k == G::Type || *k == G::Size)
            .filter_map(|&(_, v)| Type::from_dot(v))
    }
    pub fn ty(&self) -> Option<Type> {
        self.types().next()
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

pub fn decode<'m>(opcode: &str, mods: &[&'m str]) -> Result<Decoded, DecodeError<'m>> {
    let spec = lookup(opcode).ok_or(DecodeError::UnknownOpcode)?;
    let mut out = Vec::with_capacity(mods.len());
    let mut types = 0u8;
    for (index, &m) in mods.iter().enumerate() {
        let found = spec
            .groups
            .iter()
            .find_map(|g| g.values.iter().find(|&&v| v == m).map(|&v| (g.kind, v)));
        match found {
            Some((G::Type, v)) => {
                types += 1;
                if types > spec.types {
                    return Err(DecodeError::Repeated { index, text: m });
                }
                out.push((G::Type, v));
            }
            Some((k, v)) => {
                if out.iter().any(|(g, _)| *g == k) {
                    return Err(DecodeError::Repeated { index, text: m });
                }
                out.push((k, v));
            }
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
    for g in spec.groups.iter().filter(|g| g.required) {
        let n = out.iter().filter(|(k, _)| *k == g.kind).count();
        let want = if g.kind == G::Type { spec.types as usize } else { 1 };
        if n < want {
            return Err(DecodeError::Missing {
                group: g.kind,
                values: g.values,
            });
        }
    }
    Ok(Decoded { spec, mods: out })
}

/// The `explain OPCODE` text, generated from the table entry.
pub fn describe(spec: &OpSpec) -> String {
    let mut s = format!(
        "{} — {}\n  syntax:   {}\n  manual:   PTX ISA 8.5 section {}\n  requires: PTX {}.{}, sm_{}\n  operands: {}\n",
        spec.name,
        spec.summary,
        spec.syntax,
        spec.section,
        spec.ptx.0,
        spec.ptx.1,
        spec.sm,
        if spec.operands.0 == spec.operands.1 {
            spec.operands.0.to_string()
        } else {
            format!("{} to {}", spec.operands.0, spec.operands.1)
        }
    );
    for g in spec.groups {
        s.push_str(&format!(
            "  {:<9} {}{}\n",
            format!("{:?}:", g.kind).to_lowercase(),
            g.values.join(" "),
            if g.required { "  (required)" } else { "" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn every_entry_is_unique() {
        for (i, a) in TABLE.iter().enumerate() {
            assert!(TABLE[i + 1..].iter().all(|b| b.name != a.name), "{} twice", a.name);
        }
    }
}
