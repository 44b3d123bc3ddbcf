//! Thread block clusters on the host: the cluster special registers, from `ctaid` and the launch's
//! cluster shape (`Env::cluster_dim`); and distributed shared memory. `mapa` names another CTA's
//! shared memory by putting its rank in the address (`abi::cluster_address`), or, for a generic
//! address, by pointing into that CTA's window; `.shared::cluster` accesses decode the rank through
//! the cluster's table of windows (`Env::cluster_shared`).

use super::*;
use crate::abi::{CLUSTER_RANK_SHIFT, CLUSTER_TABLE};

impl<'ctx> Lowerer<'ctx> {
    /// A pointer field of the environment.
    fn env_pointer(&mut self, st: &Fn<'ctx, '_, '_>, field: EnvField) -> R<PointerValue<'ctx>> {
        let p = self.env_ptr(st.env.expect("env"), field)?;
        Ok(self.b.build_load(self.ptr(0), p, field.name())?.into_pointer_value())
    }

    /// Dimension `dim` of `%cluster_ctaid` (`within`: the CTA's place in its cluster) or of
    /// `%clusterid` (the cluster's place in the grid).
    pub(super) fn cluster_coordinate(&mut self, st: &Fn<'ctx, '_, '_>, dim: u64, within: bool) -> R<IntValue<'ctx>> {
        let ctaid = self.env_dim(st, EnvField::Ctaid, dim)?;
        let shape = self.env_dim(st, EnvField::ClusterDim, dim)?;
        Ok(if within {
            self.b.build_int_unsigned_rem(ctaid, shape, "cluster_ctaid")?
        } else {
            self.b.build_int_unsigned_div(ctaid, shape, "clusterid")?
        })
    }

    /// `%cluster_ctarank` (the CTA's rank in its cluster, x fastest) or `%cluster_nctarank`.
    pub(super) fn cluster_rank(&mut self, st: &Fn<'ctx, '_, '_>, count: bool) -> R<IntValue<'ctx>> {
        let mut v = self.i32().const_zero();
        for dim in (0..3).rev() {
            let shape = self.env_dim(st, EnvField::ClusterDim, dim)?;
            let at = if count {
                shape
            } else {
                self.cluster_coordinate(st, dim, true)?
            };
            v = if count {
                let one = if dim == 2 { self.i32().const_int(1, false) } else { v };
                self.b.build_int_mul(one, at, "nctarank")?
            } else {
                let scaled = self.b.build_int_mul(v, shape, "rank")?;
                self.b.build_int_add(scaled, at, "rank")?
            };
        }
        Ok(v)
    }

    /// What the rank bits of a `.shared::cluster` address (i64) say: whether they name the CTA's own
    /// window (none set), and the rank they name otherwise (the tag minus one).
    fn cluster_tag(&mut self, addr: IntValue<'ctx>) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let i64t = self.i64();
        let shift = i64t.const_int(CLUSTER_RANK_SHIFT as u64, false);
        let tag = self.b.build_right_shift(addr, shift, false, "rank1")?;
        let tag = self
            .b
            .build_and(tag, i64t.const_int(2 * CLUSTER_TABLE as u64 - 1, false), "rank1")?;
        let mine = self
            .b
            .build_int_compare(IntPredicate::EQ, tag, i64t.const_zero(), "own")?;
        Ok((mine, self.b.build_int_sub(tag, i64t.const_int(1, false), "rank")?))
    }

    /// The host pointer a `.shared::cluster` address (i64, from a 32- or 64-bit register) stands for:
    /// the CTA's own window below 2^24, else the window of the rank in its high bits.
    pub(super) fn cluster_pointer(&mut self, st: &Fn<'ctx, '_, '_>, addr: IntValue<'ctx>) -> R<PointerValue<'ctx>> {
        let (i64t, i8t) = (self.i64(), self.ctx.i8_type());
        let own = self.env_pointer(st, EnvField::Shared)?;
        let table = self.env_pointer(st, EnvField::ClusterShared)?;
        let (mine, idx) = self.cluster_tag(addr)?;
        let idx = self
            .b
            .build_and(idx, i64t.const_int(CLUSTER_TABLE as u64 - 1, false), "rank")?;
        let slot = unsafe { self.b.build_in_bounds_gep(self.ptr(0), table, &[idx], "slot")? };
        // A rank past the cluster finds a null window, and the access faults (an illegal address).
        let theirs = self.b.build_load(self.ptr(0), slot, "window")?.into_pointer_value();
        let base = self.b.build_select(mine, own, theirs, "base")?.into_pointer_value();
        let low = self
            .b
            .build_and(addr, i64t.const_int((1 << CLUSTER_RANK_SHIFT) - 1, false), "low")?;
        let off = self.b.build_select(mine, addr, low, "off")?.into_int_value();
        Ok(unsafe { self.b.build_in_bounds_gep(i8t, base, &[off], "p")? })
    }

    /// `mapa` and `getctarank` on the host.
    pub(super) fn cluster_map<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let t = d.ty().ok_or_else(|| unsupported(i.span, "missing type"))?;
        let i64t = self.i64();
        let a = self.read(st, &ops[1], t, scope)?.into_int_value();
        let a = self.b.build_int_z_extend_or_bit_cast(a, i64t, "a")?;
        let cluster_space = d.has(".shared::cluster");
        let own = self.env_field(st, EnvField::Shared, i64t)?;
        let v = if d.spec.name == "getctarank" {
            // The rank whose shared memory the address names.
            let me = self.cluster_rank(st, false)?;
            if !cluster_space {
                // The rank whose window holds the generic address (the CTA's own if none does).
                let table = self.env_pointer(st, EnvField::ClusterShared)?;
                let (_, window) = self.shared_offset(st, i64t.const_zero())?;
                let mut rank = me;
                for r in 0..CLUSTER_TABLE as u64 {
                    let slot = unsafe {
                        self.b
                            .build_in_bounds_gep(self.ptr(0), table, &[i64t.const_int(r, false)], "slot")?
                    };
                    let base = self.b.build_load(i64t, slot, "window")?.into_int_value();
                    let off = self.b.build_int_sub(a, base, "off")?;
                    let inside = self.b.build_int_compare(IntPredicate::ULT, off, window, "inside")?;
                    let some = self
                        .b
                        .build_int_compare(IntPredicate::NE, base, i64t.const_zero(), "some")?;
                    let here = self.b.build_and(inside, some, "here")?;
                    rank = self
                        .b
                        .build_select(here, self.i32().const_int(r, false), rank, "ctarank")?
                        .into_int_value();
                }
                rank.into()
            } else {
                let (mine, theirs) = self.cluster_tag(a)?;
                let theirs = self.b.build_int_truncate(theirs, self.i32(), "rank")?;
                self.b.build_select(mine, me, theirs, "ctarank")?
            }
        } else {
            let rank = self.read(st, &ops[2], Type::U32, scope)?.into_int_value();
            let rank = self
                .b
                .build_and(rank, self.i32().const_int(CLUSTER_TABLE as u64 - 1, false), "rank")?;
            if cluster_space {
                // Any rank bits `a` has already give way to the new ones.
                let low = self
                    .b
                    .build_and(a, i64t.const_int((1 << CLUSTER_RANK_SHIFT) - 1, false), "low")?;
                let rank = self.b.build_int_z_extend(rank, i64t, "rank")?;
                let tag = self.b.build_int_add(rank, i64t.const_int(1, false), "tag")?;
                let tag = self
                    .b
                    .build_left_shift(tag, i64t.const_int(CLUSTER_RANK_SHIFT as u64, false), "tag")?;
                self.b.build_or(tag, low, "mapa")?.into()
            } else {
                // A generic address in the CTA's window: the same place in the other CTA's window.
                let table = self.env_pointer(st, EnvField::ClusterShared)?;
                let idx = self.b.build_int_z_extend(rank, i64t, "idx")?;
                let slot = unsafe { self.b.build_in_bounds_gep(self.ptr(0), table, &[idx], "slot")? };
                let theirs = self.b.build_load(i64t, slot, "window")?.into_int_value();
                let off = self.b.build_int_sub(a, own, "off")?;
                self.b.build_int_add(theirs, off, "mapa")?.into()
            }
        };
        let v = self.to_bits(v, t.bits(), false)?;
        self.write(st, &ops[0], v.into(), false, scope)
    }
}
