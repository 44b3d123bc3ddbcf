//! The runtime side of the warp matrix collectives (`ptx_llvm::collective::MMA`, `LDMATRIX`,
//! `STMATRIX`): each lane's buffer holds its operands; every lane computes its own result from all
//! 32 buffers with `crate::emu::mma` and writes it after its operands.

use ptx_llvm::collective::{LDMATRIX, MMA};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::rc::Rc;

/// Forms parsed from the modifier texts the lowering emits, one constant per instruction site, by
/// the text's address, kept with the text itself: modules come and go, so an address may come back
/// with other text. A call then costs a comparison of its modifiers, not a parse.
pub(crate) struct Forms<T>(RefCell<HashMap<usize, Seen<T>>>);

/// A site's modifier text and its form.
type Seen<T> = (Box<[u8]>, Rc<Option<T>>);

impl<T> Forms<T> {
    pub(crate) fn new() -> Self {
        Forms(RefCell::new(HashMap::new()))
    }

    /// The form of the NUL-terminated text at `text`, parsed by `parse` the first time (None: a text
    /// `parse` refuses).
    ///
    /// # Safety
    /// `text` points at a NUL-terminated string.
    pub(crate) unsafe fn get(
        &self,
        text: *const std::ffi::c_char,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Rc<Option<T>> {
        let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
        let mut d = self.0.borrow_mut();
        match d.get(&(text as usize)) {
            Some((seen, form)) if **seen == *bytes => form.clone(),
            _ => {
                let form = Rc::new(parse(&String::from_utf8_lossy(bytes)));
                d.insert(text as usize, (bytes.into(), form.clone()));
                form
            }
        }
    }
}

thread_local! {
    static DESCS: Forms<crate::emu::mma::MmaDesc> = Forms::new();
}

/// The descriptor of the `mma` whose modifiers are the NUL-terminated text at `text` (`.sync.aligned…`).
///
/// # Safety
/// `text` points at a NUL-terminated string.
unsafe fn descriptor(text: *const std::ffi::c_char) -> Rc<Option<crate::emu::mma::MmaDesc>> {
    DESCS.with(|d| unsafe { d.get(text, crate::emu::mma::MmaDesc::from_text) })
}

/// Words of header before a lane's operands: a 64-bit pointer or address.
const HEADER: usize = 2;

/// # Safety
/// `bufs` points at 32 lane buffer addresses laid out as `ptx_llvm::collective` describes.
pub unsafe fn warp_op(kind: u32, c: u32, bufs: *const u64, lane: u32) -> u64 {
    let lane = lane as usize;
    let buf = |l: usize| unsafe { *bufs.add(l) as *mut u32 };
    let head = |l: usize| unsafe { (buf(l) as *const u64).read_unaligned() };
    if kind == MMA {
        let desc = unsafe { descriptor(head(lane) as *const std::ffi::c_char) };
        let Some(desc) = desc.as_ref() else { return 1 };
        let (wa, wb, wc, _) = desc.words();
        let n = wa + wb + wc;
        let slices: [&[u32]; 32] =
            std::array::from_fn(|l| unsafe { std::slice::from_raw_parts(buf(l).add(HEADER), n) });
        let d = crate::emu::mma::mma_lane(desc, &slices, lane);
        unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), buf(lane).add(HEADER + n), d.len()) };
        return 0;
    }
    let (num, trans) = ((c & 0xff) as usize, c >> 8 & 1 == 1);
    let rows: [u64; 32] = std::array::from_fn(head);
    if kind == LDMATRIX {
        let r = unsafe { crate::emu::mma::ldmatrix_lane(num, trans, &rows, lane) };
        unsafe { std::ptr::copy_nonoverlapping(r.as_ptr(), buf(lane).add(HEADER), r.len()) };
    } else {
        let regs: [&[u32]; 32] =
            std::array::from_fn(|l| unsafe { std::slice::from_raw_parts(buf(l).add(HEADER), num) });
        unsafe { crate::emu::mma::stmatrix_lane(num, trans, &rows, &regs, lane) };
    }
    0
}

/// `wmma.mma`: every lane's buffer is [text (2 words), words of A, B, C, D, then A, B, C, D].
///
/// # Safety
/// `bufs` points at 32 lane buffer addresses laid out as `ptx_llvm::collective::WMMA` describes.
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
    let text = unsafe { (buf(lane) as *const u64).read_unaligned() } as *const std::ffi::c_char;
    match crate::emu::wmma::mma_lane(text, &frags, lane, nd) {
        Some(d) => {
            unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), buf(lane).add(HEADER + 4 + na + nb + nc), nd) };
            0
        }
        None => 1,
    }
}
