//! The lanes' memory accesses: one vector access where the lane addresses are consecutive, one scalar
//! access where they are all the same, a gather or scatter otherwise.

use super::*;

/// One memory access of the lanes of mask `m` (`full`: every lane is in it) at the thread body's
/// address `at`, with elements of `bytes` where a vector access can load them as a whole, and how to
/// build each form of it: a vector access from `base` (masked by `mask` if some), one scalar access
/// at `address`, a gather or scatter at the lanes' addresses; `ty` is a load's vector type.
#[derive(Clone)]
pub(super) struct Access<'a> {
    bytes: Option<u64>,
    at: LLVMValueRef,
    m: LLVMValueRef,
    full: LLVMValueRef,
    vector: Rc<VectorAccess<'a>>,
    one: Rc<LaneAccess<'a>>,
    spread: Rc<LaneAccess<'a>>,
    ty: Option<LLVMTypeRef>,
}

/// Builds a vector access from a base address, masked by the mask when there is one.
pub(super) type VectorAccess<'a> = dyn Fn(&Lanes, LLVMValueRef, Option<LLVMValueRef>) -> LLVMValueRef + 'a;
/// Builds a scalar access at one address, or a gather or scatter at the lanes' addresses.
pub(super) type LaneAccess<'a> = dyn Fn(&Lanes, LLVMValueRef) -> LLVMValueRef + 'a;

impl Lanes {
    /// The active lanes' first address, and for an access of `bytes`-wide elements whether the lanes'
    /// addresses are consecutive from `base`.
    pub(super) fn shape(
        &self,
        p: LLVMValueRef,
        m: LLVMValueRef,
        bytes: Option<u64>,
    ) -> (LLVMValueRef, LLVMValueRef, Option<LLVMValueRef>) {
        use inkwell::llvm_sys::LLVMIntPredicate::*;
        unsafe {
            let bits = self.bits(m);
            let it = LLVMTypeOf(bits);
            let cttz = self.intrinsic("llvm.cttz", &mut [it]).expect("cttz");
            let first = self.call(cttz, &mut [bits, LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 0, 0)]);
            let first = LLVMBuildIntCast2(self.b, first, self.i32t, 0, c"first".as_ptr());
            let p_first = LLVMBuildExtractElement(self.b, p, first, c"p".as_ptr());
            let not_m = LLVMBuildNot(self.b, m, c"".as_ptr());
            let consecutive = bytes.map(|k| {
                let i8t = LLVMInt8TypeInContext(self.ctx);
                let back = LLVMBuildMul(
                    self.b,
                    LLVMBuildZExt(self.b, first, self.i64t, c"".as_ptr()),
                    LLVMConstInt(self.i64t, k, 0),
                    c"".as_ptr(),
                );
                let mut neg = [LLVMBuildNeg(self.b, back, c"".as_ptr())];
                let base = LLVMBuildGEP2(self.b, i8t, p_first, neg.as_mut_ptr(), 1, c"base".as_ptr());
                let mut steps = [self.iota(self.i64t, k)];
                let want = LLVMBuildGEP2(self.b, i8t, base, steps.as_mut_ptr(), 1, c"".as_ptr());
                let eq = LLVMBuildICmp(self.b, LLVMIntEQ, p, want, c"".as_ptr());
                (base, self.all(LLVMBuildOr(self.b, eq, not_m, c"".as_ptr())))
            });
            match consecutive {
                Some((base, ok)) => (p_first, base, Some(ok)),
                None => (p_first, p_first, None),
            }
        }
    }

    /// Whether the active lanes of `m` all have address `p_first`.
    pub(super) fn one_address(&self, p: LLVMValueRef, p_first: LLVMValueRef, m: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            let not_m = LLVMBuildNot(self.b, m, c"".as_ptr());
            let same = LLVMBuildICmp(
                self.b,
                inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                p,
                self.splat(p_first),
                c"".as_ptr(),
            );
            self.all(LLVMBuildOr(self.b, same, not_m, c"".as_ptr()))
        }
    }

    /// Memory access `a` at an address whose affine form (`aff`) may tell its shape without looking
    /// at the lanes' addresses: consecutive (stride the element's size) or one address (stride 0),
    /// where the form holds; otherwise `general`.
    pub(super) fn access<'a>(&self, a: Access<'a>) -> Option<LLVMValueRef> {
        let bytes = a.bytes.map(|b| b as i64);
        let Some(af) = self
            .affine(a.at)
            .filter(|af| af.stride == 0 || Some(af.stride) == bytes)
        else {
            return self.general(a.clone(), self.value(a.at)?);
        };
        let (first, m, full) = (af.first, a.m, a.full);
        let mut arms: Vec<Arm<'a>> = vec![];
        let holds = move |this: &Self, and: Option<LLVMValueRef>| {
            let yes = unsafe { LLVMConstInt(LLVMInt1TypeInContext(this.ctx), 1, 0) };
            this.and(and.unwrap_or(yes), af.holds)
        };
        if af.stride == 0 {
            let one = a.one.clone();
            arms.push((
                Box::new(move |this: &Self| holds(this, None)),
                Box::new(move |this: &Self| one(this, first)),
            ));
        } else {
            let every = (const_int(full) != Some(1)).then_some(full);
            let v = a.vector.clone();
            arms.push((
                Box::new(move |this: &Self| holds(this, every)),
                Box::new(move |this: &Self| v(this, first, None)),
            ));
            if every.is_some() {
                let v = a.vector.clone();
                arms.push((
                    Box::new(move |this: &Self| holds(this, None)),
                    Box::new(move |this: &Self| v(this, first, Some(m))),
                ));
            }
        }
        if af.holds.is_none() {
            // The last arm always applies.
            let (_, code) = arms.pop().expect("an arm");
            if arms.is_empty() {
                let v = code(self);
                return a.ty.map(|_| v);
            }
            return self.choose(arms, code, a.ty, false);
        }
        let ty = a.ty;
        let otherwise = move |this: &Self| {
            let p = this.rebuild(a.at, a.m).expect("built once already");
            this.general(a.clone(), p).unwrap_or(std::ptr::null_mut())
        };
        self.choose(arms, Box::new(otherwise), ty, true)
    }

    /// Memory access `a` as the first of these that applies, found from the lanes' addresses: a vector
    /// access where they are consecutive (unmasked where every lane is active), one scalar access
    /// where they are one address, else a gather or scatter.
    pub(super) fn general<'a>(&self, a: Access<'a>, p: LLVMValueRef) -> Option<LLVMValueRef> {
        let (m, full) = (a.m, a.full);
        let (p_first, base, consecutive) = self.shape(p, m, a.bytes);
        let mut arms: Vec<Arm<'a>> = vec![];
        if let Some(ok) = consecutive {
            let v = a.vector.clone();
            arms.push((
                Box::new(move |this: &Self| unsafe { LLVMBuildAnd(this.b, ok, full, c"".as_ptr()) }),
                Box::new(move |this: &Self| v(this, base, None)),
            ));
            if const_int(full) != Some(1) {
                let v = a.vector.clone();
                arms.push((
                    Box::new(move |_: &Self| ok),
                    Box::new(move |this: &Self| v(this, base, Some(m))),
                ));
            }
        }
        let one = a.one.clone();
        arms.push((
            Box::new(move |this: &Self| this.one_address(p, p_first, m)),
            Box::new(move |this: &Self| one(this, p_first)),
        ));
        let spread = a.spread.clone();
        self.choose(arms, Box::new(move |this: &Self| spread(this, p)), a.ty, false)
    }

    pub(super) fn load(
        &mut self,
        ty: LLVMTypeRef,
        at: LLVMValueRef,
        align: u32,
        m: LLVMValueRef,
        full: LLVMValueRef,
    ) -> Option<LLVMValueRef> {
        let vt = self.vt(ty);
        let vptr = self.vt(self.ptr);
        // Declared up front: the arms only build calls.
        self.intrinsic("llvm.masked.load", &mut [vt, self.ptr])?;
        self.intrinsic("llvm.masked.gather", &mut [vt, vptr])?;
        let poison = unsafe { LLVMGetPoison(vt) };
        let a = Access {
            bytes: element_bytes(ty),
            at,
            m,
            full,
            vector: Rc::new(move |this: &Self, base, mask| match mask {
                None => unsafe {
                    let l = LLVMBuildLoad2(this.b, vt, base, c"".as_ptr());
                    LLVMSetAlignment(l, align);
                    l
                },
                Some(m) => this
                    .masked("llvm.masked.load", &mut [vt, this.ptr], &[base, m, poison], 0)
                    .expect("declared"),
            }),
            one: Rc::new(move |this: &Self, at| unsafe {
                let s = LLVMBuildLoad2(this.b, ty, at, c"".as_ptr());
                LLVMSetAlignment(s, align);
                this.splat(s)
            }),
            spread: Rc::new(move |this: &Self, p| {
                this.masked("llvm.masked.gather", &mut [vt, this.vt(this.ptr)], &[p, m, poison], 0)
                    .expect("declared")
            }),
            ty: Some(vt),
        };
        self.access(a)
    }

    /// A store of the lanes to one address: the highest active lane's value, as when threads run in
    /// order.
    pub(super) fn store_one(&self, v: LLVMValueRef, p: LLVMValueRef, align: u32, m: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            let ctlz = self
                .intrinsic("llvm.ctlz", &mut [LLVMIntTypeInContext(self.ctx, LANES)])
                .expect("ctlz");
            let lead = self.call(
                ctlz,
                &mut [self.bits(m), LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 0, 0)],
            );
            let lead = LLVMBuildIntCast2(self.b, lead, self.i32t, 0, c"".as_ptr());
            let last = LLVMBuildSub(
                self.b,
                LLVMConstInt(self.i32t, LANES as u64 - 1, 0),
                lead,
                c"last".as_ptr(),
            );
            let s = LLVMBuildExtractElement(self.b, v, last, c"".as_ptr());
            let st = LLVMBuildStore(self.b, s, p);
            LLVMSetAlignment(st, align);
            st
        }
    }

    pub(super) fn store(
        &mut self,
        v: LLVMValueRef,
        at: LLVMValueRef,
        align: u32,
        m: LLVMValueRef,
        full: LLVMValueRef,
    ) -> Option<()> {
        let vt = unsafe { LLVMTypeOf(v) };
        let vptr = self.vt(self.ptr);
        self.intrinsic("llvm.masked.store", &mut [vt, self.ptr])?;
        self.intrinsic("llvm.masked.scatter", &mut [vt, vptr])?;
        let a = Access {
            bytes: element_bytes(unsafe { LLVMGetElementType(vt) }),
            at,
            m,
            full,
            vector: Rc::new(move |this: &Self, base, mask| match mask {
                None => unsafe {
                    let st = LLVMBuildStore(this.b, v, base);
                    LLVMSetAlignment(st, align);
                    st
                },
                Some(m) => this
                    .masked("llvm.masked.store", &mut [vt, this.ptr], &[v, base, m], 1)
                    .expect("declared"),
            }),
            one: Rc::new(move |this: &Self, at| this.store_one(v, at, align, m)),
            spread: Rc::new(move |this: &Self, p| {
                this.masked("llvm.masked.scatter", &mut [vt, this.vt(this.ptr)], &[v, p, m], 1)
                    .expect("declared")
            }),
            ty: None,
        };
        // Stores give no value: check up front that the lanes' addresses exist (an affine address's
        // are built only where an access needs them).
        if !self.available(at) {
            return None;
        }
        self.access(a);
        Some(())
    }
}
