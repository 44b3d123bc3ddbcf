//! The ABI between host-flavour code and ptx-jit's runtime, defined once and free of LLVM: the
//! environment every block entry receives (`Env`, whose field numbers the lowering's GEPs use through
//! `EnvField`), the record a region-cut kernel's scheduler shares with it (`Steps`), the codes of the
//! runtime calls (`collective`, `builtin`) and the states a region returns (`regions`). The lowering
//! builds its LLVM types from the field lists here, and a test checks LLVM's layout of them against
//! `offset_of!` of these `repr(C)` structs.

use std::ffi::c_void;

/// Metadata kind on the host flavour's reads of `%tid.x/y/z` (an `i32` load from the environment; the
/// node holds the dimension). The host optimiser finds thread-index comparisons through it.
pub const TID_METADATA: &str = "ptxjit.tid";

/// A `#[repr(u32)]` enum whose variants are the codes 0, 1, … in order, with `ALL` (every variant at
/// the index of its code) and `from_code`: the codes generated code passes to the runtime.
macro_rules! codes {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $v:ident,)* }) => {
        $(#[$m])*
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name { $($(#[$vm])* $v,)* }

        impl $name {
            /// Every variant, at the index of its code.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];

            /// The variant whose code is `code`.
            pub fn from_code(code: u32) -> Option<$name> {
                $name::ALL.get(code as usize).copied()
            }
        }
    };
}

/// What a host kernel asks of the runtime through `env->collective(env->sync, kind, a, b, c, mask)`.
/// These are the operations that need other threads: CTA barriers and warp collectives. `mask` is the
/// member mask of `.sync` warp collectives.
pub mod collective {
    codes! {
        /// Which collective, the call's second argument (`Kind as u32`).
        pub enum Kind {
            /// `bar.sync`/`bar.red`: a = barrier, b = thread count (0: the whole CTA), c = reduction
            /// ([`Reduction`]), mask = the thread's predicate; the result is the reduction's.
            BarSync,
            WarpSync,
            /// `shfl` modes; the result is `value | valid << 32`.
            ShflUp,
            ShflDown,
            ShflBfly,
            ShflIdx,
            /// `vote` modes.
            VoteAll,
            VoteAny,
            VoteUni,
            VoteBallot,
            /// `bar.arrive`: a = barrier, b = thread count.
            BarArrive,
            /// `activemask`: the lanes that reach the same site (c) together.
            Activemask,
            /// `redux.sync` operations; b = 1 for signed min/max.
            ReduxAdd,
            ReduxMin,
            ReduxMax,
            ReduxAnd,
            ReduxOr,
            ReduxXor,
            /// `match.any`/`match.all` on the 64-bit value a | b << 32; the result is `mask | pred << 32`.
            MatchAny,
            MatchAll,
            /// Let the other threads run (`nanosleep`, polling an `mbarrier`).
            Yield,
            /// Warp matrix instructions. a | b << 32 is the lane's buffer of 32-bit words:
            /// `Mma`: [the form (`ptx_front::isa::MmaForm::code`, 2 words), A, B, C words, then room for
            /// D]; `Ldmatrix`: [row address (2 words), room for the result]; `Stmatrix`: [row address (2
            /// words), the registers]. For ldmatrix/stmatrix c = count | trans << 8.
            Mma,
            Ldmatrix,
            Stmatrix,
            /// `movmatrix`: a = the lane's register; the result is the transposed matrix's.
            Movmatrix,
            /// Wait on barrier a without arriving (`barrier.cluster.wait` after its `.arrive`).
            BarWait,
            /// `wmma.mma`: a | b << 32 is the lane's buffer [the form (`ptx_front::isa::WmmaForm::code`, 2
            /// words), words of A, B, C and D (4 words), A, B, C, room for D].
            Wmma,
            /// `wgmma.mma_async`: a | b << 32 is the lane's buffer, a [`crate::abi::WgmmaHead`] then the
            /// lane's A registers (when A is in registers) and D registers, 32-bit words; the runtime writes
            /// the new D over the old. The result is 1 when the launch faulted (the thread stops).
            Wgmma,
            /// Before a `volatile` access of shared memory: the lanes of the warp that reach
            /// this site (c) together go on together, so each such access is made by all of them before
            /// any makes the next, as a GPU's warp executes in lockstep. Warp-synchronous code written
            /// before `__syncwarp` (a reduction unrolled over a warp through `volatile` shared memory)
            /// depends on it.
            Lockstep,
        }
    }

    impl Kind {
        /// The mode of a `shfl` (0..4: up, down, bfly, idx).
        pub fn shfl_mode(self) -> Option<u32> {
            self.offset_in(Kind::ShflUp, 4)
        }

        /// The mode of a `vote` (0..4: all, any, uni, ballot).
        pub fn vote_mode(self) -> Option<u32> {
            self.offset_in(Kind::VoteAll, 4)
        }

        /// The operation of a `redux.sync` (0..6: add, min, max, and, or, xor).
        pub fn redux_op(self) -> Option<u32> {
            self.offset_in(Kind::ReduxAdd, 6)
        }

        /// A `shfl` or `vote`: what lane-vectorised regions compute in place.
        pub fn is_shfl_or_vote(self) -> bool {
            self.shfl_mode().is_some() || self.vote_mode().is_some()
        }

        fn offset_in(self, first: Kind, len: u32) -> Option<u32> {
            let k = (self as u32).wrapping_sub(first as u32);
            (k < len).then_some(k)
        }
    }

    /// The reduction of `bar.red` (`c` of [`Kind::BarSync`]).
    #[repr(u32)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Reduction {
        None,
        Popc,
        And,
        Or,
    }

    impl Reduction {
        pub fn from_code(code: u32) -> Reduction {
            [Reduction::None, Reduction::Popc, Reduction::And, Reduction::Or][code as usize & 3]
        }
    }

    /// The barrier `barrier.cluster` uses: the CTA's own, past the sixteen named ones.
    pub const CLUSTER_BARRIER: u32 = 16;

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_kind_is_at_its_code() {
            for (k, kind) in Kind::ALL.iter().enumerate() {
                assert_eq!(*kind as usize, k);
                assert_eq!(Kind::from_code(k as u32), Some(*kind));
            }
            assert_eq!(Kind::from_code(Kind::ALL.len() as u32), None);
            assert_eq!(
                (Kind::ShflUp.shfl_mode(), Kind::ShflIdx.shfl_mode()),
                (Some(0), Some(3))
            );
            assert_eq!(
                (Kind::VoteAll.vote_mode(), Kind::VoteBallot.vote_mode()),
                (Some(0), Some(3))
            );
            assert_eq!(
                (Kind::ReduxAdd.redux_op(), Kind::ReduxXor.redux_op()),
                (Some(0), Some(5))
            );
            assert_eq!((Kind::MatchAny.redux_op(), Kind::VoteAll.shfl_mode()), (None, None));
            assert!(!Kind::BarSync.is_shfl_or_vote() && Kind::VoteAll.is_shfl_or_vote());
        }
    }
}

/// Host-flavour calls into Rust for operations too intricate to inline: floating point with directed
/// rounding or in the 16- and 8-bit formats, conversions between any two types, and rare integer
/// operations. `ptxjit_fp(code, a, b, c)` and `ptxjit_int(code, a, b, c)` take and return raw bits
/// (zero-extended to 64); `code` packs the operation, types, rounding and flags.
pub mod builtin {
    pub const FP: &str = "ptxjit_fp";
    pub const INT: &str = "ptxjit_int";
    /// Checked mode: `i32 ptxjit_check(env, addr, bytes, site, space)` is 0 when the access may go
    /// ahead; otherwise the thread stops (the launch has faulted). `site` is the instruction's byte
    /// offset in the PTX text; `space` is a `SPACE_*` code.
    pub const CHECK: &str = "ptxjit_check";
    pub const SPACE_GENERIC: u32 = 0;
    pub const SPACE_GLOBAL: u32 = 1;
    pub const SPACE_SHARED: u32 = 2;
    pub const SPACE_LOCAL: u32 = 3;
    pub const SPACE_CONST: u32 = 4;
    /// Added to a checked access's space code: how it touches memory (`ACCESS_READ` is 0), for the
    /// sanitizers.
    pub const ACCESS_WRITE: u32 = 1 << 8;
    pub const ACCESS_ATOMIC: u32 = 2 << 8;
    /// With a null address: no access, but the site of the barrier or warp collective the thread is
    /// about to reach (checked code, for synccheck); `bytes` is 1 for a barrier every thread of the
    /// CTA must reach at this same instruction (`.aligned`, or any barrier before sm_70).
    pub const ACCESS_SITE: u32 = 4 << 8;
    /// Added to a read or write of the memory model (`.volatile`, `.relaxed`, `.acquire`,
    /// `.release`): like atomics, such accesses do not race with each other.
    pub const ACCESS_ORDERED: u32 = 8 << 8;
    /// Added to a load that no race can involve ([`ptx_front::intervals`]): racecheck need not see it.
    pub const ACCESS_UNRACED: u32 = 16 << 8;
    /// Counters, with a null address: the thread enters the counted block (`ptx_front::mix`) whose
    /// first instruction is at `site`.
    pub const ACCESS_BLOCK: u32 = 32 << 8;
    /// Counters, with a null address: the conditional branch at `site` goes to its target (`bytes`
    /// 1) or falls through (0).
    pub const ACCESS_BRANCH: u32 = 64 << 8;
    /// Added to an access of the memory model that releases (`st.release`, `red.release`,
    /// `atom.release`, `atom.acq_rel`) or acquires (`ld.acquire`, `atom.acquire`, `atom.acq_rel`):
    /// racecheck orders what the releasing thread did before it with what a thread that acquires the
    /// released value does after.
    pub const ACCESS_RELEASE: u32 = 128 << 8;
    pub const ACCESS_ACQUIRE: u32 = 256 << 8;
    /// With a null address: the thread executes a fence (`fence`, `membar`). With its strong
    /// (`.volatile`, `.relaxed`, atomic) accesses it makes the manual's release and acquire patterns:
    /// a fence then a strong write releases, a strong read then a fence acquires.
    pub const ACCESS_FENCE: u32 = 512 << 8;
    /// The watch word: the first `u32` of a launch's fault record (`Env::fault`), bits saying which
    /// checked accesses a sanitizer follows, so that generated code cannot decide them alone. With
    /// none, an aligned shared-memory access inside the window needs no call. racecheck: every
    /// access but the `ACCESS_UNRACED` loads calls the runtime.
    pub const WATCH_RACE: u32 = 1;
    /// initcheck: a shared-memory load calls the runtime unless `Env::written` shows its bytes
    /// written; a store marks them there.
    pub const WATCH_INIT: u32 = 2;
    /// racecheck, once a barrier of the launch has completed with threads at different instructions:
    /// the `ACCESS_UNRACED` loads call the runtime too (their proof assumes every thread of an epoch
    /// started it at one barrier instruction).
    pub const WATCH_UNRACED: u32 = 4;

    /// The watch bit under which racecheck follows an access with this space code: `WATCH_UNRACED`
    /// for a load proved race-free, `WATCH_RACE` for the rest (generated code and the runtime
    /// decide alike).
    pub const fn race_bit(space: u32) -> u32 {
        if space & ACCESS_UNRACED != 0 {
            WATCH_UNRACED
        } else {
            WATCH_RACE
        }
    }
    /// The space code's own bits.
    pub const SPACE_MASK: u32 = 0xff;
    /// The functions of NVIDIA's device runtime that kernels call by name without defining them: the
    /// runtime binds them (`ptx_jit::runtime_symbols`). Any other function a module only declares
    /// must come from a linked module.
    pub const DEVICE_FUNCTIONS: [&str; 4] = ["vprintf", "__assertfail", "malloc", "free"];
    /// Operations with memory or launch effects: `i64 ptxjit_mem(code, env, addr, a, b)`, `code` being
    /// a [`Mem`] (with a `ptxjit_fp` code in `b` for [`Mem::AtomicFp`]).
    pub const MEM: &str = "ptxjit_mem";

    codes! {
        /// The operation of a `ptxjit_mem` call, its first argument (`Mem as u32`).
        pub enum Mem {
            /// `isspacep`: a = `SPACE_*`, b = bytes of the shared window.
            Isspacep,
            /// `mbarrier` of one CTA at `addr`: init (a = count), arrive (a = count, b = `MBAR_*` flags;
            /// the result is the state before), expect_tx / complete_tx (a = bytes), test (a = state or
            /// parity, b = 1 for parity; 1 when that phase is complete), inval.
            MbarInit,
            MbarArrive,
            MbarExpectTx,
            MbarCompleteTx,
            MbarTest,
            MbarInval,
            /// Atomic read-modify-write of a 16-bit float or packed pair (and the f32 min and max of
            /// vector atomics) at `addr`: a = operand bits, b = the `ptxjit_fp` code of the operation; the
            /// result is the old value.
            AtomicFp,
            /// `trap`: a = the instruction's byte offset; the launch fails. b = 0 for `trap` itself, else
            /// a `TRAP_*` reason the GPU gives an illegal instruction for.
            Trap,
            /// Copy `b & 0xffffffff` bytes from a to addr, of which only `b >> 32` come from a; the rest
            /// are zeros (`cp.async` with a source size).
            Copy,
            /// `wmma.load` / `wmma.store` of the calling lane: addr = the matrix, a = the lane's buffer
            /// [the form (`ptx_front::isa::WmmaForm::code`, 2 words), register words n (1 word), n words],
            /// b = the stride (0: the default).
            WmmaLoad,
            WmmaStore,
            /// `cp.reduce.async.bulk`: reduce `b & 0xffffffff` bytes at a into addr, element by element
            /// and atomically per element; `b >> 32` is the operation (`BULK_OPS` index) | the element's
            /// type code << 8.
            BulkReduce,
            /// `cp.async.bulk.tensor` and `cp.reduce.async.bulk.tensor`: addr points at a
            /// [`crate::abi::TensorArgs`], a = the operation ([`TENSOR_LOAD`], [`TENSOR_STORE`], or
            /// [`TENSOR_REDUCE`] | a [`BULK_OPS`] index) | the instruction's dimensions << 16, b = the
            /// instruction's byte offset. Returns 1 when the launch faulted.
            Tensor,
            /// `tensormap.replace`: addr = the map, a = the new value, b = the field's index in
            /// [`TENSORMAP_FIELDS`] | the ordinal << 8.
            TensormapReplace,
        }
    }

    /// `st.async`/`red.async` outside a cluster launch (b of [`Mem::Trap`]).
    pub const TRAP_NO_CLUSTER: u32 = 1;
    pub const TENSORMAP_FIELDS: [&str; 10] = [
        ".global_address",
        ".rank",
        ".box_dim",
        ".global_dim",
        ".global_stride",
        ".element_stride",
        ".elemtype",
        ".interleave_layout",
        ".swizzle_mode",
        ".fill_mode",
    ];
    pub const TENSOR_LOAD: u32 = 0;
    pub const TENSOR_STORE: u32 = 1;
    pub const TENSOR_REDUCE: u32 = 0x100;
    /// Added to the operation by checked code: the runtime checks each global element's access.
    pub const TENSOR_CHECKED: u32 = 0x200;
    pub const BULK_OPS: [&str; 8] = [".and", ".or", ".xor", ".add", ".inc", ".dec", ".min", ".max"];
    pub const MBAR_DROP: u32 = 1;
    /// The bits of an mbarrier state: pending arrivals, then the phase in bit 63.
    pub const MBAR_PENDING_MASK: u64 = (1 << 21) - 1;
    /// `%globaltimer`: nanoseconds since the Unix epoch.
    pub const GLOBALTIMER: &str = "ptxjit_globaltimer";

    /// `code = op | dty << 8 | sty << 13 | rnd << 18 | flags << 22`.
    /// Scalar video instructions: `i64 ptxjit_video(code, a, b, c)` with `code` from [`Video::pack`];
    /// a, b and c are the 32-bit registers whole (the selectors are in the code).
    pub const VIDEO: &str = "ptxjit_video";

    /// A scalar video instruction's form (PTX ISA 9.7.18.1).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct Video {
        /// `VIDEO_*`.
        pub op: u32,
        pub d_signed: bool,
        pub a_signed: bool,
        pub b_signed: bool,
        pub sat: bool,
        /// vshl/vshr: `.wrap` (else `.clamp`).
        pub wrap: bool,
        /// Secondary operation: 0 none, 1 `.add`, 2 `.min`, 3 `.max`.
        pub op2: u32,
        /// Part selectors: 0 the whole word, else `ptx_front::isa::scalar_selector`'s 1–4 (`.b0`–`.b3`), 5 (`.h0`), 6 (`.h1`).
        pub asel: u32,
        pub bsel: u32,
        pub dsel: u32,
        /// vmad: 0, 1 `.shr7`, 2 `.shr15`; `.po`; negated operands (bit 0 a, 1 b, 2 c).
        pub scale: u32,
        pub po: bool,
        pub neg: u32,
        /// vset: 0–5 for `.eq .ne .lt .le .gt .ge`.
        pub cmp: u32,
    }

    pub const VIDEO_ADD: u32 = 0;
    pub const VIDEO_SUB: u32 = 1;
    pub const VIDEO_ABSDIFF: u32 = 2;
    pub const VIDEO_MIN: u32 = 3;
    pub const VIDEO_MAX: u32 = 4;
    pub const VIDEO_SHL: u32 = 5;
    pub const VIDEO_SHR: u32 = 6;
    pub const VIDEO_MAD: u32 = 7;
    pub const VIDEO_SET: u32 = 8;
    pub const VIDEO_OPS: [&str; 9] = [
        "vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr", "vmad", "vset",
    ];
    pub const VIDEO_CMPS: [&str; 6] = [".eq", ".ne", ".lt", ".le", ".gt", ".ge"];

    impl Video {
        pub const fn pack(self) -> u32 {
            self.op
                | (self.d_signed as u32) << 4
                | (self.a_signed as u32) << 5
                | (self.b_signed as u32) << 6
                | (self.sat as u32) << 7
                | (self.wrap as u32) << 8
                | self.op2 << 9
                | self.asel << 11
                | self.bsel << 14
                | self.dsel << 17
                | self.scale << 20
                | (self.po as u32) << 22
                | self.neg << 23
                | self.cmp << 26
        }
        pub const fn unpack(c: u32) -> Video {
            Video {
                op: c & 15,
                d_signed: c >> 4 & 1 == 1,
                a_signed: c >> 5 & 1 == 1,
                b_signed: c >> 6 & 1 == 1,
                sat: c >> 7 & 1 == 1,
                wrap: c >> 8 & 1 == 1,
                op2: c >> 9 & 3,
                asel: c >> 11 & 7,
                bsel: c >> 14 & 7,
                dsel: c >> 17 & 7,
                scale: c >> 20 & 3,
                po: c >> 22 & 1 == 1,
                neg: c >> 23 & 7,
                cmp: c >> 26 & 7,
            }
        }
    }

    /// Texture and surface instructions (`tex`, `tld4`, `txq`, `suld`, `sust`, `suq`):
    /// `i64 ptxjit_tex(code, env, handle, buf)` with `code` from [`TexOp::pack`] and `buf` the
    /// calling thread's [`TEX_BUF_WORDS`] words: the coordinates from [`TEX_COORDS`] (a layer index
    /// first for layered geometries, as in the instruction), the data read or to be written from
    /// [`TEX_DATA`] (4 words), the LOD at [`TEX_LOD`], the gradients `dPdx` and `dPdy` (4 words
    /// each) from [`TEX_GRAD`]. The result is 0, or 1 when the launch faulted.
    pub const TEX: &str = "ptxjit_tex";
    pub const TEX_COORDS: u32 = 0;
    pub const TEX_DATA: u32 = 4;
    pub const TEX_LOD: u32 = 8;
    pub const TEX_GRAD: u32 = 9;
    pub const TEX_BUF_WORDS: u32 = 17;
    pub const TEX_SAMPLE: u32 = 0;
    pub const TEX_GATHER: u32 = 1;
    pub const TEX_QUERY: u32 = 2;
    pub const SURF_LOAD: u32 = 3;
    pub const SURF_STORE: u32 = 4;
    pub const SURF_QUERY: u32 = 5;
    /// `sured`: an atomic reduction into the surface element, [`TexOp::red`] saying which.
    pub const SURF_RED: u32 = 6;
    /// [`TexOp::red`]: the data is signed (`.s32`, `.s64`).
    pub const SURF_RED_SIGNED: u32 = 8;
    /// [`TexOp::red`]: sample addressing (`.p`): x counts elements, and the surface's format says
    /// whether `.b32`/`.b64` data is signed.
    pub const SURF_RED_SAMPLE: u32 = 16;
    /// Geometries, by their index in a [`TexOp`].
    pub const TEX_GEOMS: [&str; 9] = ["1d", "2d", "3d", "a1d", "a2d", "cube", "acube", "2dms", "a2dms"];
    /// `txq` and `suq` queries, by their index in a [`TexOp`].
    pub const TEX_QUERIES: [&str; 15] = [
        "width",
        "height",
        "depth",
        "channel_data_type",
        "channel_order",
        "normalized_coords",
        "array_size",
        "num_mipmap_levels",
        "num_samples",
        "force_unnormalized_coords",
        "filter_mode",
        "addr_mode_0",
        "addr_mode_1",
        "addr_mode_2",
        "memory_layout",
    ];

    /// One texture or surface instruction's form.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct TexOp {
        /// `TEX_SAMPLE` .. `SURF_QUERY`.
        pub kind: u32,
        /// Index in [`TEX_GEOMS`].
        pub geom: u32,
        /// tex, tld4: what the destination reads, 0 `.u32`, 1 `.s32`, 2 `.f32`. Surfaces: log2 of
        /// an element's bytes (`.b8` 0 .. `.b64` 3).
        pub dtype: u32,
        /// Float coordinates (`.f32` ctype) rather than `.s32`.
        pub float_coords: bool,
        /// tld4: the component, 0..=3 for `.r .g .b .a`.
        pub comp: u32,
        /// txq, suq: index in [`TEX_QUERIES`].
        pub query: u32,
        /// Surfaces: elements per access, 1, 2 or 4.
        pub vec: u32,
        /// Surfaces out of bounds: 0 `.trap`, 1 `.clamp`, 2 `.zero`.
        pub clamp: u32,
        /// `tex.level`: the LOD word is set.
        pub level: bool,
        /// `tex.grad`: the gradient words are set.
        pub grad: bool,
        /// `sured`: the operation's index in [`BULK_OPS`] | [`SURF_RED_SIGNED`] | [`SURF_RED_SAMPLE`].
        pub red: u32,
    }

    impl TexOp {
        pub const fn pack(self) -> u32 {
            self.kind
                | self.geom << 3
                | self.dtype << 7
                | (self.float_coords as u32) << 9
                | self.comp << 10
                | self.query << 12
                | self.vec << 16
                | self.clamp << 19
                | (self.level as u32) << 21
                | (self.grad as u32) << 22
                | self.red << 23
        }
        pub const fn unpack(c: u32) -> TexOp {
            TexOp {
                kind: c & 7,
                geom: c >> 3 & 15,
                dtype: c >> 7 & 3,
                float_coords: c >> 9 & 1 == 1,
                comp: c >> 10 & 3,
                query: c >> 12 & 15,
                vec: c >> 16 & 7,
                clamp: c >> 19 & 3,
                level: c >> 21 & 1 == 1,
                grad: c >> 22 & 1 == 1,
                red: c >> 23 & 31,
            }
        }
    }

    pub const fn code(op: u32, dty: u32, sty: u32, rnd: u32, flags: u32) -> u32 {
        op | dty << 8 | sty << 13 | rnd << 18 | flags << 22
    }
    pub const fn parts(code: u32) -> (u32, u32, u32, u32, u32) {
        (
            code & 0xff,
            code >> 8 & 31,
            code >> 13 & 31,
            code >> 18 & 15,
            code >> 22,
        )
    }

    // Floating-point operations (`ptxjit_fp`); `dty` is the operation's type.
    pub const ADD: u32 = 0;
    pub const SUB: u32 = 1;
    pub const MUL: u32 = 2;
    pub const FMA: u32 = 3;
    pub const DIV: u32 = 4;
    pub const MIN: u32 = 5;
    pub const MAX: u32 = 6;
    pub const SQRT: u32 = 7;
    pub const RCP: u32 = 8;
    pub const RSQRT: u32 = 9;
    pub const EX2: u32 = 10;
    pub const LG2: u32 = 11;
    pub const SIN: u32 = 12;
    pub const COS: u32 = 13;
    pub const TANH: u32 = 14;
    pub const ABS: u32 = 15;
    pub const NEG: u32 = 16;
    /// `cvt` from `sty` to `dty`; packed destinations take `a` into the upper half and `b` into the lower.
    pub const CVT: u32 = 17;
    /// `testp`: the property is in `rnd` (see `TESTP_*`).
    pub const TESTP: u32 = 18;
    /// `setp`: the comparison is in `rnd` (see `CMP_*`); the result has one bit per lane.
    pub const CMP: u32 = 19;

    pub const TESTP_FINITE: u32 = 0;
    pub const TESTP_INFINITE: u32 = 1;
    pub const TESTP_NUMBER: u32 = 2;
    pub const TESTP_NAN: u32 = 3;
    pub const TESTP_NORMAL: u32 = 4;
    pub const TESTP_SUBNORMAL: u32 = 5;
    /// `.eq .ne .lt .le .gt .ge .equ .neu .ltu .leu .gtu .geu .num .nan`, in this order.
    pub const CMPS: [&str; 14] = [
        ".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".equ", ".neu", ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan",
    ];

    // Types.
    pub const F16: u32 = 0;
    pub const BF16: u32 = 1;
    pub const F32: u32 = 2;
    pub const F64: u32 = 3;
    pub const F16X2: u32 = 4;
    pub const BF16X2: u32 = 5;
    pub const TF32: u32 = 6;
    pub const E4M3X2: u32 = 7;
    pub const E5M2X2: u32 = 8;
    /// The narrow floats of PTX 8.6: fp4 and fp6 pairs (no infinity or NaN; an fp6 value sits in the
    /// low 6 bits of its byte) and pairs of power-of-two scales (2^(e-127); 0xff is NaN).
    pub const E2M1X2: u32 = 9;
    pub const E2M3X2: u32 = 10;
    pub const E3M2X2: u32 = 11;
    pub const UE8M0X2: u32 = 12;
    /// PTX 8.6's pairs of f32 in a 64-bit register, lane 0 low.
    pub const F32X2: u32 = 13;
    pub const U8: u32 = 16;
    pub const U16: u32 = 17;
    pub const U32: u32 = 18;
    pub const U64: u32 = 19;
    pub const S8: u32 = 20;
    pub const S16: u32 = 21;
    pub const S32: u32 = 22;
    pub const S64: u32 = 23;
    pub const U16X2: u32 = 24;
    pub const S16X2: u32 = 25;
    pub const U4: u32 = 26;
    pub const S4: u32 = 27;

    // Rounding.
    pub const RN: u32 = 0;
    pub const RZ: u32 = 1;
    pub const RM: u32 = 2;
    pub const RP: u32 = 3;
    pub const RNA: u32 = 4;
    pub const RNI: u32 = 5;
    pub const RZI: u32 = 6;
    pub const RMI: u32 = 7;
    pub const RPI: u32 = 8;
    /// No rounding modifier: the instruction's default (`.approx` for the transcendentals).
    pub const RDEFAULT: u32 = 9;

    // Flags.
    pub const FTZ: u32 = 1;
    pub const SAT: u32 = 2;
    pub const RELU: u32 = 4;
    /// `min`/`max.NaN`: a NaN input gives the canonical NaN.
    pub const NAN: u32 = 8;
    pub const XORSIGN: u32 = 16;
    pub const SATFINITE: u32 = 32;

    // Integer operations (`ptxjit_int`): `dty` is the type, `rnd` a mode.
    pub const MUL24_LO: u32 = 0;
    pub const MUL24_HI: u32 = 1;
    pub const MAD24_LO: u32 = 2;
    pub const MAD24_HI: u32 = 3;
    pub const SAD: u32 = 4;
    /// `bfind`; `rnd` = 1 for `.shiftamt`.
    pub const BFIND: u32 = 5;
    pub const FNS: u32 = 6;
    /// `bmsk`; `rnd` = 1 for `.clamp`.
    pub const BMSK: u32 = 7;
    /// `szext`; `rnd` = 1 for `.clamp`.
    pub const SZEXT: u32 = 8;
    /// `dp4a`/`dp2a`: `dty` is a's type, `sty` b's type; for dp2a `rnd` = 1 for `.hi`.
    pub const DP4A: u32 = 9;
    pub const DP2A: u32 = 10;
    /// `prmt` with mode `rnd`: 0 default, then `.f4e .b4e .rc8 .ecl .ecr .rc16`.
    pub const PRMT: u32 = 11;
    /// `mad.hi.sat.s32`.
    pub const MAD_HI_SAT: u32 = 12;
    /// `cvt.pack.sat`: `dty` the narrow type, `sty` the source type; c holds the lower packed bits.
    pub const CVT_PACK: u32 = 13;
    /// `add`/`sub`/`min`/`max` on packed `.u16x2`/`.s16x2`, and `.relu` forms: `rnd` selects the op.
    pub const PACKED: u32 = 14;
    /// `PACKED` operations, in `rnd`.
    pub const PACKED_ADD: u32 = 0;
    pub const PACKED_SUB: u32 = 1;
    pub const PACKED_MIN: u32 = 2;
    pub const PACKED_MAX: u32 = 3;
    pub const PRMT_MODES: [&str; 7] = ["", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"];

    // What `cvt` makes of a NaN on an H100 (tests/gpu/probes/cvt_nan_more.ptx), where the manual is
    // silent or says 0. Both the JIT's inline code and the runtime builtins take them from here.

    /// Float to integer: 0 from a 16- or 32-bit float into at most 32 bits; otherwise only the
    /// destination's top bit set (from f64 into 16 or 32 bits, and into 64 bits from any float).
    pub const fn nan_to_int(src_bits: u32, dst_bits: u32) -> u64 {
        if src_bits < 64 && dst_bits <= 32 {
            0
        } else {
            1 << (dst_bits - 1)
        }
    }

    /// f64 to a narrower float with `man` mantissa bits in `width` bits: the sign, an all-ones
    /// exponent, the quiet bit and the payload's top bits, as x86's `cvtsd2ss` also does.
    pub const fn narrow_f64_nan(bits: u64, width: u32, man: u32) -> u64 {
        let sign = (bits >> 63) << (width - 1);
        let exp_and_quiet = ((1u64 << (width - 1)) - 1) & !((1u64 << (man - 1)) - 1);
        sign | exp_and_quiet | (bits & ((1u64 << 52) - 1)) >> (52 - man)
    }

    /// f16 or bf16 (`man` mantissa bits in `width` bits) to f64: the sign and payload, made quiet.
    pub const fn widen_nan_to_f64(bits: u64, width: u32, man: u32) -> u64 {
        (bits >> (width - 1) & 1) << 63 | 0xfff << 51 | (bits & ((1u64 << man) - 1)) << (52 - man)
    }

    /// f32 to tf32 (kept in f32 bits): `.rna` truncates the NaN's bits, `.rna.satfinite` then takes one
    /// unit off them (the step that brings an overflowed result back to the largest finite value), and
    /// the other roundings give tf32's canonical NaN.
    pub const fn tf32_nan(bits: u32, rnd: u32, flags: u32) -> u32 {
        match (rnd, flags & SATFINITE != 0) {
            (RNA, false) => bits & 0xffff_e000,
            (RNA, true) => (bits & 0xffff_e000) - 0x2000,
            _ => 0x7fff_e000,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_mem_operation_is_at_its_code() {
            for (k, op) in Mem::ALL.iter().enumerate() {
                assert_eq!((*op as usize, Mem::from_code(k as u32)), (k, Some(*op)));
            }
            assert_eq!(Mem::from_code(Mem::ALL.len() as u32), None);
        }
    }
}

/// The states a thread body cut into regions returns (see `Exec::Regions`): `k | WAIT` when it stopped
/// at stop number k (1-based), with `WARP` when that is a warp collective rather than a CTA barrier;
/// `DONE` when it finished. A region starts from state 0 or a stop's `k | WARP?` value.
pub mod regions {
    pub const DONE: u32 = u32::MAX;
    pub const WAIT: u32 = 1 << 31;
    pub const WARP: u32 = 1 << 30;
}

/// `kernel(env, params)`: a kernel's block entry (or, for fiber kernels, one thread's entry).
pub type BlockFn = unsafe extern "C" fn(*const Env, *const u8);

/// `collective(sync, kind, a, b, c, mask)`: barriers and warp collectives (`collective::*` kinds).
pub type Collective = unsafe extern "C" fn(*mut c_void, u32, u32, u32, u32, u32) -> u64;

/// The environment of one thread (or, for loop kernels, of the CTAs one call runs).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Env {
    pub params: *const u8,
    pub shared: *mut u8,
    pub tid: [u32; 3],
    pub ntid: [u32; 3],
    pub ctaid: [u32; 3],
    pub nctaid: [u32; 3],
    /// Passed to `collective`: the calling thread's fiber, or a region kernel's `Steps`.
    pub sync: *mut c_void,
    /// Barriers and warp collectives, for kernels that synchronise.
    pub collective: Collective,
    /// Bytes of dynamic shared memory of this launch (`%dynamic_smem_size`).
    pub dynamic_shared: u32,
    /// The worker running this CTA (`%smid`), and how many there are (`%nsmid`).
    pub smid: u32,
    pub nsmid: u32,
    /// The launch's number in this process (`%gridid`).
    pub gridid: u64,
    /// Checked kernels: the launch's fault record (null otherwise).
    pub fault: *const c_void,
    /// `Exec::Loop` kernels: how many CTAs along x, from `ctaid` on, one call runs.
    pub ctas: u32,
    /// initcheck: the running CTA's shared bytes written, one bit each (null where generated code
    /// cannot keep them, which then calls the runtime).
    pub written: *mut u64,
    /// A cooperative launch's grid workspace (0 otherwise), as the driver hands it to kernels in
    /// `%envreg1` (high half) and `%envreg2` (low half): cooperative groups' grid barrier counts CTAs
    /// in its second 32-bit word.
    pub grid_workspace: u64,
    /// 1 in a cluster launch (the kernel's `.reqnctapercluster`, or cluster dimensions given at
    /// launch), else 0: `%is_explicit_cluster`, and whether `st.async`/`red.async` may run.
    pub cluster: u32,
    /// The cluster's shape in CTAs (1, 1, 1 outside cluster launches): `%cluster_nctaid`, and what
    /// the other cluster special registers derive from `ctaid`.
    pub cluster_dim: [u32; 3],
    /// The shared windows of the cluster's CTAs by rank, [`CLUSTER_TABLE`] entries (null past the
    /// cluster's size; all null where a CTA runs alone, outside the fiber scheduler): where a
    /// `.shared::cluster` address of another CTA goes (see [`cluster_address`]). As many entries
    /// follow for the runtime: each CTA's initcheck map of shared bytes written (`written`), which
    /// a store into its window from another CTA marks.
    pub cluster_shared: *const *mut u8,
}

/// Entries of a cluster's table of shared windows: the most CTAs a cluster may have (16, with
/// non-portable sizes).
pub const CLUSTER_TABLE: usize = 16;

/// `.shared::cluster` addresses on the host. A CTA's own shared addresses are offsets into its
/// window, as ever, and stay valid in the cluster window; `mapa` makes another CTA's by putting its
/// rank plus one in bits 24..28 (a window is below 2^24 bytes): `cluster_address(rank, offset)`.
/// Accesses in `.shared::cluster` decode them through `Env::cluster_shared`.
pub const fn cluster_address(rank: u32, offset: u32) -> u32 {
    ((rank & (CLUSTER_TABLE as u32 - 1)) + 1) << CLUSTER_RANK_SHIFT | offset & ((1 << CLUSTER_RANK_SHIFT) - 1)
}

/// Where a `.shared::cluster` address keeps its rank (plus one; 0: the CTA's own window).
pub const CLUSTER_RANK_SHIFT: u32 = 24;

/// What an LLVM struct field of the ABI holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Ptr,
    I32,
    I64,
    I32x3,
}

/// The argument block of `builtin::Mem::Tensor`, which generated code fills word by word.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TensorArgs {
    /// The box's place in shared memory: a load's destination, a store's source.
    pub shared: u64,
    /// The tensor map's generic address.
    pub map: u64,
    /// A load's mbarrier, or 0.
    pub mbar: u64,
    /// Bytes of the CTA's shared window, static and dynamic: the box must lie inside it.
    pub window: u64,
    /// The instruction's coordinates, sign-extended (0 past its dimensions).
    pub coords: [i64; 5],
    /// A load's `.multicast::cluster` mask of CTA ranks, with [`TensorArgs::MULTICAST_BIT`]; 0 for
    /// a load into the one CTA its addresses name.
    pub multicast: u64,
}

impl TensorArgs {
    /// The words of the block, and each field's first word.
    pub const WORDS: u32 = 10;
    pub const SHARED: u32 = 0;
    pub const MAP: u32 = 1;
    pub const MBAR: u32 = 2;
    pub const WINDOW: u32 = 3;
    pub const COORDS: u32 = 4;
    pub const MULTICAST: u32 = 9;
    /// Marks `multicast` as a multicast load (a mask may be 0).
    pub const MULTICAST_BIT: u64 = 1 << 32;
}

/// The head of a lane's buffer for `collective::Kind::Wgmma`, which generated code fills word by word.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WgmmaHead {
    /// The form (`ptx_front::isa::WgmmaForm::code`).
    pub form: u64,
    /// The thread's `Env`: its CTA's shared window, and the launch's fault record.
    pub env: u64,
    /// A's matrix descriptor (when A is in shared memory) and B's.
    pub a_desc: u64,
    pub b_desc: u64,
    /// Bytes of the CTA's shared window, static and dynamic: the matrices must lie inside it.
    pub window: u64,
    /// `SCALE_D | NEGATE_A | NEGATE_B | TRANS_A | TRANS_B | A_REGS`, as the operands say.
    pub flags: u64,
    /// The warp's rank in its warpgroup (0..4): which 16 rows of A and D are its.
    pub rank: u64,
    /// The instruction's byte offset in the PTX text, for a fault's report.
    pub site: u64,
}

impl WgmmaHead {
    /// The 64-bit words of the head, and each field's word.
    pub const WORDS: u32 = 8;
    pub const FORM: u32 = 0;
    pub const ENV: u32 = 1;
    pub const A_DESC: u32 = 2;
    pub const B_DESC: u32 = 3;
    pub const WINDOW: u32 = 4;
    pub const FLAGS: u32 = 5;
    pub const RANK: u32 = 6;
    pub const SITE: u32 = 7;
    /// scale-d is true: D = A * B + D (else D = A * B).
    pub const SCALE_D: u64 = 1;
    /// imm-scale-a, imm-scale-b are -1.
    pub const NEGATE_A: u64 = 2;
    pub const NEGATE_B: u64 = 4;
    /// imm-trans-a, imm-trans-b are 1: the matrix in shared memory is M- or N-major, not K-major.
    pub const TRANS_A: u64 = 8;
    pub const TRANS_B: u64 = 16;
    /// A is in registers (after the head), not in shared memory.
    pub const A_REGS: u64 = 32;
}

/// The fields of `Env`, in order: the lowering's GEP indices.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvField {
    Params,
    Shared,
    Tid,
    Ntid,
    Ctaid,
    Nctaid,
    Sync,
    Collective,
    DynamicShared,
    Smid,
    Nsmid,
    Gridid,
    Fault,
    Ctas,
    Written,
    GridWorkspace,
    Cluster,
    ClusterDim,
    ClusterShared,
}

impl EnvField {
    /// The field's name, as generated code's values that point at it are named.
    pub const fn name(self) -> &'static str {
        match self {
            EnvField::Params => "params",
            EnvField::Shared => "shared",
            EnvField::Tid => "tid",
            EnvField::Ntid => "ntid",
            EnvField::Ctaid => "ctaid",
            EnvField::Nctaid => "nctaid",
            EnvField::Sync => "sync",
            EnvField::Collective => "collective",
            EnvField::DynamicShared => "dynamic_shared",
            EnvField::Smid => "smid",
            EnvField::Nsmid => "nsmid",
            EnvField::Gridid => "gridid",
            EnvField::Fault => "fault",
            EnvField::Ctas => "ctas",
            EnvField::Written => "written",
            EnvField::GridWorkspace => "grid_workspace",
            EnvField::Cluster => "cluster",
            EnvField::ClusterDim => "cluster_dim",
            EnvField::ClusterShared => "cluster_shared",
        }
    }

    /// Every field with its type, in order.
    pub const ALL: [(EnvField, FieldType); 19] = [
        (EnvField::Params, FieldType::Ptr),
        (EnvField::Shared, FieldType::Ptr),
        (EnvField::Tid, FieldType::I32x3),
        (EnvField::Ntid, FieldType::I32x3),
        (EnvField::Ctaid, FieldType::I32x3),
        (EnvField::Nctaid, FieldType::I32x3),
        (EnvField::Sync, FieldType::Ptr),
        (EnvField::Collective, FieldType::Ptr),
        (EnvField::DynamicShared, FieldType::I32),
        (EnvField::Smid, FieldType::I32),
        (EnvField::Nsmid, FieldType::I32),
        (EnvField::Gridid, FieldType::I64),
        (EnvField::Fault, FieldType::Ptr),
        (EnvField::Ctas, FieldType::I32),
        (EnvField::Written, FieldType::Ptr),
        (EnvField::GridWorkspace, FieldType::I64),
        (EnvField::Cluster, FieldType::I32),
        (EnvField::ClusterDim, FieldType::I32x3),
        (EnvField::ClusterShared, FieldType::Ptr),
    ];

    /// The field's index in the LLVM struct.
    pub const fn index(self) -> u32 {
        self as u32
    }
}

/// The part of a region kernel's scheduling record (`env.sync`) that generated code reads and writes;
/// the runtime's own state follows it in `runtime`'s record.
#[repr(C)]
pub struct Steps {
    /// Each thread's state (`regions::*`).
    pub states: *mut u32,
    /// Each thread's frame of values live across stops.
    pub frames: *mut u8,
    /// The state the running region started from.
    pub state: u32,
    /// Whether the running region runs only the threads of `cur`'s mask.
    pub masked: u32,
    /// `bar.red` reductions over the region's threads.
    pub or: u32,
    pub and: u32,
    /// The thread being run.
    pub cur: u32,
    /// Warp collectives' exchange: the published values, the operands and each warp's parity.
    pub slots: *mut u32,
    pub args: *mut u32,
    pub parity: *mut u32,
}

/// The fields of `Steps`, in order.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepsField {
    States,
    Frames,
    State,
    Masked,
    Or,
    And,
    Cur,
    Slots,
    Args,
    Parity,
}

impl StepsField {
    /// Every field with its type, in order.
    pub const ALL: [(StepsField, FieldType); 10] = [
        (StepsField::States, FieldType::Ptr),
        (StepsField::Frames, FieldType::Ptr),
        (StepsField::State, FieldType::I32),
        (StepsField::Masked, FieldType::I32),
        (StepsField::Or, FieldType::I32),
        (StepsField::And, FieldType::I32),
        (StepsField::Cur, FieldType::I32),
        (StepsField::Slots, FieldType::Ptr),
        (StepsField::Args, FieldType::Ptr),
        (StepsField::Parity, FieldType::Ptr),
    ];

    /// The field's index in the LLVM struct.
    pub const fn index(self) -> u32 {
        self as u32
    }
}
