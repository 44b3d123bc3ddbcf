//! The runtime side of the warp matrix collectives (`ptx_llvm::collective::Kind::Mma`, `Ldmatrix`,
//! `Stmatrix`): each lane's buffer holds its operands; every lane computes its own result from all
//! 32 buffers with `crate::emu::mma` and writes it after its operands.

use crate::emu::mma::MmaDesc;
use ptx_front::isa::{MmaForm, WmmaForm};
use ptx_llvm::collective::Kind;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

thread_local! {
    /// The layouts of each `mma` form met, by its code: built once, looked up on every call.
    static DESCS: RefCell<HashMap<u64, Option<Rc<MmaDesc>>>> = RefCell::new(HashMap::new());
}

/// The descriptor of the `mma` form whose code is `code` (`ptx_front::isa::MmaForm::code`); None for
/// a word no form makes.
fn descriptor(code: u64) -> Option<Rc<MmaDesc>> {
    DESCS.with(|d| {
        d.borrow_mut()
            .entry(code)
            .or_insert_with(|| MmaForm::from_code(code).map(|f| Rc::new(MmaDesc::new(f))))
            .clone()
    })
}

/// Words of header before a lane's operands: a form's code or an address.
const HEADER: usize = 2;

/// # Safety
/// `bufs` points at 32 lane buffer addresses laid out as `ptx_llvm::collective::Kind` describes.
pub unsafe fn warp_op(kind: Kind, c: u32, bufs: *const u64, lane: u32) -> u64 {
    let lane = lane as usize;
    let buf = |l: usize| unsafe { *bufs.add(l) as *mut u32 };
    let head = |l: usize| unsafe { (buf(l) as *const u64).read_unaligned() };
    if kind == Kind::Mma {
        let Some(desc) = descriptor(head(lane)) else { return 1 };
        let (wa, wb, wc, _) = desc.words();
        let n = wa + wb + wc;
        let slices: [&[u32]; 32] =
            std::array::from_fn(|l| unsafe { std::slice::from_raw_parts(buf(l).add(HEADER), n) });
        let d = crate::emu::mma::mma_lane(&desc, &slices, lane);
        unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), buf(lane).add(HEADER + n), d.len()) };
        return 0;
    }
    let (num, trans) = ((c & 0xff) as usize, c >> 8 & 1 == 1);
    let rows: [u64; 32] = std::array::from_fn(head);
    if kind == Kind::Ldmatrix {
        let r = unsafe { crate::emu::mma::ldmatrix_lane(num, trans, &rows, lane) };
        unsafe { std::ptr::copy_nonoverlapping(r.as_ptr(), buf(lane).add(HEADER), r.len()) };
    } else {
        let regs: [&[u32]; 32] =
            std::array::from_fn(|l| unsafe { std::slice::from_raw_parts(buf(l).add(HEADER), num) });
        unsafe { crate::emu::mma::stmatrix_lane(num, trans, &rows, &regs, lane) };
    }
    0
}

/// `wmma.mma`: every lane's buffer is [form (2 words), words of A, B, C, D, then A, B, C, D].
///
/// # Safety
/// `bufs` points at 32 lane buffer addresses laid out as `ptx_llvm::collective::Kind::Wmma` describes.
pub unsafe fn wmma(bufs: *const u64, lane: u32) -> u64 {
    let buf = |l: usize| unsafe { *bufs.add(l) as *mut u32 };
    let counts = |l: usize| -> [usize; 4] { std::array::from_fn(|k| unsafe { *buf(l).add(HEADER + k) } as usize) };
    let frags: [[&[u32]; 3]; 32] = std::array::from_fn(|l| {
        let [na, nb, nc, _] = counts(l);
        let base = unsafe { buf(l).add(HEADER + 4) };
        unsafe {
            [
                std::slice::from_raw_parts(base, na),
                std::slice::from_raw_parts(base.add(na), nb),
                std::slice::from_raw_parts(base.add(na + nb), nc),
            ]
        }
    });
    let lane = lane as usize;
    let [na, nb, nc, nd] = counts(lane);
    let form = WmmaForm::from_code(unsafe { (buf(lane) as *const u64).read_unaligned() });
    match form.map(|f| crate::emu::wmma::mma_lane(&f, &frags, lane, nd)) {
        Some(d) => {
            unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), buf(lane).add(HEADER + 4 + na + nb + nc), nd) };
            0
        }
        None => 1,
    }
}
