//! Texture and surface objects: the handles kernels pass to `tex`, `tld4`, `txq`, `suld`, `sust` and
//! `suq`, and `ptxjit_tex`, which generated code calls for them (`ptx_llvm::builtin::TEX`). The
//! driver creates and destroys objects; sampling itself is `crate::emu::texture`.
//!
//! A handle names a slot of one table of live objects and the slot's generation. A kernel holding a
//! handle that was never created, or was destroyed, ends its launch with an illegal address, as does
//! a surface access out of bounds under `.trap`.

use crate::emu::texture::{self as tex, Clamp, Coords, Resource, Sampler};
use crate::runtime::checked::FaultKind;
use crate::runtime::Env;
use parking_lot::RwLock;
use ptx_llvm::builtin::*;
use std::any::Any;
use std::sync::Arc;

/// What an object keeps alive while it lives (an array's elements).
pub type Keep = Arc<dyn Any + Send + Sync>;

/// What a handle names.
#[derive(Clone)]
pub enum Object {
    /// `levels`: a mipmap's levels, level 0 (`resource`) first; empty for a texture without.
    Texture {
        resource: Resource,
        sampler: Sampler,
        levels: Vec<Resource>,
    },
    Surface {
        resource: Resource,
    },
    /// An object whose array was destroyed under it: any use faults, as on an H200, which ends such
    /// a launch with an illegal address.
    Freed,
}

struct Entry {
    object: Object,
    /// Keeps the memory the object reads alive (an array), whatever the driver does with it.
    _keep: Option<Keep>,
}

/// Live objects. A handle is a slot's index plus one in its low 32 bits and the slot's generation in
/// its high 32 bits: a freed slot is reused, and a stale handle to it names nothing.
static OBJECTS: RwLock<Vec<(u32, Option<Arc<Entry>>)>> = RwLock::new(Vec::new());

/// Bumped by every change to [`OBJECTS`]: a thread's cached entry ([`LAST`]) is good while it holds.
static CHANGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// The entry this thread used last (changes seen, handle, entry): kernels fetch from one texture
    /// over and over, and the table's lock and the entry's count would otherwise be shared by every
    /// thread on every fetch. Emptied when the thread's CTA ends ([`release_cached`]).
    static LAST: std::cell::RefCell<Option<(u64, u64, Arc<Entry>)>> = const { std::cell::RefCell::new(None) };
}

/// A CTA (or run of CTAs) is done: this thread lets go of the object it kept, so a destroyed
/// object's memory goes back when its last launch ends.
pub(crate) fn release_cached() {
    LAST.with(|l| l.borrow_mut().take());
}

fn changed() {
    CHANGES.fetch_add(1, std::sync::atomic::Ordering::Release);
}

fn slot(handle: u64) -> Option<(usize, u32)> {
    let index = (handle as u32).checked_sub(1)? as usize;
    Some((index, (handle >> 32) as u32))
}

/// Registers an object; its handle.
pub fn create(object: Object, keep: Option<Keep>) -> u64 {
    let mut t = OBJECTS.write();
    let e = Some(Arc::new(Entry { object, _keep: keep }));
    let i = match t.iter().position(|(_, e)| e.is_none()) {
        Some(i) => i,
        None => {
            t.push((0, None));
            t.len() - 1
        }
    };
    t[i].1 = e;
    changed();
    (t[i].0 as u64) << 32 | (i as u64 + 1)
}

/// Destroys the object `handle` names; false if none is live.
pub fn destroy(handle: u64) -> bool {
    let mut t = OBJECTS.write();
    match slot(handle).and_then(|(i, g)| t.get_mut(i).filter(|(gen, e)| *gen == g && e.is_some())) {
        Some(entry) => {
            *entry = (entry.0.wrapping_add(1), None);
            changed();
            true
        }
        None => false,
    }
}

/// Replaces the object `handle` names, keeping the handle (a texture reference bound anew); false if
/// none is live.
pub fn replace(handle: u64, object: Object, keep: Option<Keep>) -> bool {
    let mut t = OBJECTS.write();
    match slot(handle).and_then(|(i, g)| t.get_mut(i).filter(|(gen, e)| *gen == g && e.is_some())) {
        Some(entry) => {
            entry.1 = Some(Arc::new(Entry { object, _keep: keep }));
            changed();
            true
        }
        None => false,
    }
}

/// Runs `f` on the object `handle` names, if it is live. The table is not locked while `f` runs: a
/// fault in a kernel's sampling leaves its coroutine without unwinding, and must not leave a lock
/// held.
pub fn with<R>(handle: u64, f: impl FnOnce(&Object) -> R) -> Option<R> {
    let now = CHANGES.load(std::sync::atomic::Ordering::Acquire);
    // The entry stays alive in `LAST` while `f` runs (nothing `f` calls changes `LAST`), so it is
    // used through a pointer: no count to change, no lock, and no borrow left behind if `f` faults.
    let cached = LAST.with(|l| match &*l.borrow() {
        Some((seen, h, e)) if *seen == now && *h == handle => Some(Arc::as_ptr(e)),
        _ => None,
    });
    let e = match cached {
        Some(e) => e,
        None => {
            let e = {
                let t = OBJECTS.read();
                let (i, g) = slot(handle)?;
                t.get(i).filter(|(gen, _)| *gen == g)?.1.clone()?
            };
            let p = Arc::as_ptr(&e);
            LAST.with(|l| *l.borrow_mut() = Some((now, handle, e)));
            p
        }
    };
    // SAFETY: held by `LAST` (above) until this thread looks up another object.
    Some(f(unsafe { &(*e).object }))
}

/// Called by JIT code: one texture or surface instruction of the calling thread (see
/// `ptx_llvm::builtin::TEX` for the buffer).
pub(crate) extern "C" fn ptxjit_tex(code: u32, env: *const Env, handle: u64, buf: *mut u32) -> u64 {
    // SAFETY: JIT code passes its own environment and a buffer of TEX_BUF_WORDS words.
    let (env, buf) = unsafe { (&*env, std::slice::from_raw_parts_mut(buf, TEX_BUF_WORDS as usize)) };
    let op = TexOp::unpack(code);
    let fault = |what: &'static str, addr: u64| {
        if let Some(cell) = unsafe { (env.fault as *const crate::runtime::checked::FaultCell).as_ref() } {
            cell.record(crate::runtime::checked::Fault {
                addr,
                tid: Some(env.tid),
                ctaid: Some(env.ctaid),
                ..crate::runtime::checked::Fault::of(FaultKind::Texture(what))
            });
        }
        1
    };
    let result = with(handle, |o| run(op, o, buf, env));
    if !matches!(result, Some(Ok(()))) {
        // The thread stops, but what its registers get must not be stack garbage.
        buf[TEX_DATA as usize..TEX_DATA as usize + 4].fill(0);
    }
    match result {
        Some(Ok(())) => 0,
        Some(Err(Misuse::Kind)) => fault(
            "used a texture object as a surface or a surface object as a texture",
            handle,
        ),
        Some(Err(Misuse::Bounds(at))) => fault("accessed a surface out of bounds under `.trap`; the address", at),
        Some(Err(Misuse::Freed)) => fault("used a texture or surface object whose array was destroyed", handle),
        None if handle == 0 => fault("used a null texture or surface object (or a reference never bound)", 0),
        None => fault(
            "used a texture or surface object that does not exist (never created, or destroyed)",
            handle,
        ),
    }
}

/// A texture or surface instruction's misuse of a live object.
enum Misuse {
    /// A texture instruction on a surface, or the other way round (or a cube geometry on a texture
    /// that is no cubemap).
    Kind,
    /// A surface access out of bounds under `.trap`, at this address.
    Bounds(u64),
    /// An object whose array is gone.
    Freed,
}

/// Where a geometry's coordinates start in the buffer (after a layer or cube index) and how many
/// there are.
fn geometry(op: TexOp) -> (usize, usize) {
    match TEX_GEOMS[op.geom as usize] {
        "a1d" => (1, 1),
        "a2d" => (1, 2),
        // A direction; an array's cube first.
        "acube" => (1, 3),
        "1d" => (0, 1),
        "2d" => (0, 2),
        _ => (0, 3),
    }
}

/// The instruction's coordinates: a layered geometry's start with the layer, and those past the
/// geometry's dimensions are 0 (the lowering writes only the ones the instruction has).
fn coords(op: TexOp, buf: &[u32]) -> Coords {
    let c = &buf[TEX_COORDS as usize..TEX_COORDS as usize + 4];
    let (from, dims) = geometry(op);
    let mut xyz = [0u32; 3];
    xyz[..dims].copy_from_slice(&c[from..from + dims]);
    Coords {
        xyz,
        float: op.float_coords,
        layer: if from > 0 { c[0] } else { 0 },
    }
}

/// Whether a plain geometry (`.1d`, `.2d`, `.3d`) has fewer dimensions than the texture, which is
/// neither layered nor a cubemap: an H200 returns 0 in every channel then (`tex.1d` of a 3D array).
/// A geometry with more dimensions reads the texture's first row or plane (its coordinates past the
/// texture's are not used): warp-lang fetches texels of 1D textures with `tex.level.2d` at row 0,
/// and its tests pass on GPUs.
fn mismatched(op: TexOp, r: &tex::Resource) -> bool {
    let dims = match TEX_GEOMS[op.geom as usize] {
        "1d" => 1,
        "2d" => 2,
        "3d" => 3,
        _ => return false,
    };
    r.layers == 0 && !r.cube && r.dims > dims
}

/// Runs one instruction on an object.
fn run(op: TexOp, o: &Object, buf: &mut [u32], env: &Env) -> Result<(), Misuse> {
    let data = TEX_DATA as usize;
    match (op.kind, o) {
        (_, Object::Freed) => Err(Misuse::Freed),
        (TEX_SAMPLE | TEX_GATHER, Object::Texture { resource, .. }) if mismatched(op, resource) => {
            buf[data..data + 4].fill(0);
            Ok(())
        }
        (TEX_SAMPLE | TEX_GATHER, Object::Texture { resource, sampler, .. }) if matches!(op.geom, 5 | 6) => {
            // A cube or cube-array geometry on a cubemap: float coordinates, a direction.
            if !resource.cube {
                return Err(Misuse::Kind);
            }
            let c = coords(op, buf);
            let dir = c.xyz.map(f32::from_bits);
            let comp = (op.kind == TEX_GATHER).then_some(op.comp as usize);
            // SAFETY: as for any texture, below.
            let t = unsafe { tex::sample_cube(resource, sampler, dir, c.layer, comp) };
            buf[data..data + 4].copy_from_slice(&t);
            Ok(())
        }
        (
            TEX_SAMPLE,
            Object::Texture {
                resource,
                sampler,
                levels,
            },
        ) if op.level || op.grad => {
            let c = coords(op, buf);
            let levels = if levels.is_empty() {
                std::slice::from_ref(resource)
            } else {
                levels
            };
            let lod = if op.grad {
                // Only the geometry's components were written.
                let dims = geometry(op).1;
                let g = |at: u32, k: usize| {
                    if k < dims {
                        f32::from_bits(buf[at as usize + k])
                    } else {
                        0.0
                    }
                };
                let (dx, dy) = ([0, 1, 2].map(|k| g(TEX_GRAD, k)), [0, 1, 2].map(|k| g(TEX_GRAD + 4, k)));
                tex::lod_of_gradients(&levels[0], sampler, dx, dy)
            } else if op.float_coords {
                f32::from_bits(buf[TEX_LOD as usize])
            } else {
                buf[TEX_LOD as usize] as i32 as f32
            };
            // SAFETY: as for any texture, below.
            let t = unsafe { tex::sample_lod(levels, sampler, c, lod) };
            buf[data..data + 4].copy_from_slice(&t);
            Ok(())
        }
        // A mipmap sampled without a LOD: LOD 0, with the sampler's bias and clamp.
        (TEX_SAMPLE, Object::Texture { sampler, levels, .. }) if !levels.is_empty() => {
            // SAFETY: as for any texture, below.
            let t = unsafe { tex::sample_lod(levels, sampler, coords(op, buf), 0.0) };
            buf[data..data + 4].copy_from_slice(&t);
            Ok(())
        }
        (TEX_SAMPLE | TEX_GATHER, Object::Texture { resource, sampler, .. }) => {
            let c = coords(op, buf);
            // SAFETY: the resource's memory lives while the object does (the driver keeps arrays
            // alive; linear memory is the application's, as on a GPU).
            let t = unsafe {
                if op.kind == TEX_SAMPLE {
                    tex::sample(resource, sampler, c)
                } else {
                    tex::gather(resource, sampler, c, op.comp as usize)
                }
            };
            buf[data..data + 4].copy_from_slice(&t);
            Ok(())
        }
        (
            TEX_QUERY,
            Object::Texture {
                resource,
                sampler,
                levels,
            },
        ) => {
            buf[data] = match TEX_QUERIES[op.query as usize] {
                "num_mipmap_levels" => levels.len() as u32,
                _ => query(op.query, resource, Some(sampler)),
            };
            Ok(())
        }
        (SURF_QUERY, Object::Surface { resource }) => {
            buf[data] = query(op.query, resource, None);
            Ok(())
        }
        (SURF_LOAD | SURF_STORE | SURF_RED, Object::Surface { resource }) => {
            let c = coords(op, buf);
            let bytes = (op.vec as u64) << op.dtype;
            let clamp = match op.clamp {
                1 => Clamp::Clamp,
                2 => Clamp::Zero,
                _ => Clamp::Trap,
            };
            let [x, y, z] = c.xyz.map(|v| v as i32);
            // Sample addressing (`sured.p`) counts elements along x, not bytes.
            let x = if op.red & SURF_RED_SAMPLE != 0 {
                // Far outside stays outside: no wrap back into the surface.
                (x as i64 * resource.texel_bytes() as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32
            } else {
                x
            };
            let y = if resource.dims >= 2 { y } else { 0 };
            let z = if resource.dims == 3 { z } else { 0 };
            let at = tex::surface_address(resource, x, y, z, c.layer, bytes, clamp)
                .map_err(|tex::OutOfBounds| Misuse::Bounds(resource.base.wrapping_add(x as i64 as u64)))?;
            let words = bytes.div_ceil(4) as usize;
            match (op.kind, at) {
                (SURF_LOAD, None) => buf[data..data + words].fill(0),
                // SAFETY: inside the resource, whose memory lives while the object does.
                (SURF_LOAD, Some(a)) => unsafe {
                    let mut raw = [0u8; 16];
                    std::ptr::copy_nonoverlapping(a as *const u8, raw.as_mut_ptr(), bytes as usize);
                    unpack(&raw, op, &mut buf[data..data + 4]);
                },
                // SAFETY: inside the resource, whose memory lives while the object does.
                (SURF_RED, Some(a)) => unsafe {
                    reduce(a, op, &buf[data..data + 2], resource.format);
                    if let Some(cell) = (env.fault as *const crate::runtime::checked::FaultCell).as_ref() {
                        crate::runtime::sanitize::copied(env, cell, a, bytes);
                    }
                },
                (_, Some(a)) => unsafe {
                    let mut raw = [0u8; 16];
                    pack(&buf[data..data + 4], op, &mut raw);
                    std::ptr::copy_nonoverlapping(raw.as_ptr(), a as *mut u8, bytes as usize);
                    if let Some(cell) = (env.fault as *const crate::runtime::checked::FaultCell).as_ref() {
                        crate::runtime::sanitize::copied(env, cell, a, bytes);
                    }
                },
                (_, None) => {}
            }
            Ok(())
        }
        // A texture instruction on a surface or the other way round.
        _ => Err(Misuse::Kind),
    }
}

/// `sured`: the element at `a` (4 or 8 bytes) combined atomically with the data words, as `atom`
/// would; `.p` data is signed when the surface's format is.
///
/// # Safety
/// `a` must address a naturally aligned element of live surface memory.
unsafe fn reduce(a: u64, op: TexOp, words: &[u32], format: tex::Format) {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    let k = (op.red & 7) as usize;
    let signed = if op.red & SURF_RED_SAMPLE != 0 {
        matches!(format, tex::Format::S8 | tex::Format::S16 | tex::Format::S32)
    } else {
        op.red & SURF_RED_SIGNED != 0
    };
    let combine = crate::runtime::memops::combine;
    if op.dtype == 3 {
        let v = words[0] as u64 | (words[1] as u64) << 32;
        let ty = if signed { S64 } else { U64 };
        let cell = unsafe { AtomicU64::from_ptr(a as *mut u64) };
        let _ = cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |o| Some(combine(k, ty, o, v)));
    } else {
        let ty = if signed { S32 } else { U32 };
        let cell = unsafe { AtomicU32::from_ptr(a as *mut u32) };
        let _ = cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |o| {
            Some(combine(k, ty, o as u64, words[0] as u64) as u32)
        });
    }
}

/// The words of `vec` elements of `1 << dtype` bytes from packed bytes (an element below 4 bytes
/// takes a word of its own).
fn unpack(raw: &[u8; 16], op: TexOp, words: &mut [u32]) {
    let size = 1usize << op.dtype;
    for k in 0..op.vec as usize {
        let el = &raw[k * size..(k + 1) * size];
        if size == 8 {
            words[2 * k] = u32::from_le_bytes(el[..4].try_into().expect("4 bytes"));
            words[2 * k + 1] = u32::from_le_bytes(el[4..].try_into().expect("4 bytes"));
        } else {
            let mut w = [0u8; 4];
            w[..size].copy_from_slice(el);
            words[k] = u32::from_le_bytes(w);
        }
    }
}

/// The inverse of [`unpack`].
fn pack(words: &[u32], op: TexOp, raw: &mut [u8; 16]) {
    let size = 1usize << op.dtype;
    for k in 0..op.vec as usize {
        let el = &mut raw[k * size..(k + 1) * size];
        if size == 8 {
            el[..4].copy_from_slice(&words[2 * k].to_le_bytes());
            el[4..].copy_from_slice(&words[2 * k + 1].to_le_bytes());
        } else {
            el.copy_from_slice(&words[k].to_le_bytes()[..size]);
        }
    }
}

/// `txq` / `suq`: one attribute (see `ptx_llvm::builtin::TEX_QUERIES`).
fn query(q: u32, r: &Resource, s: Option<&Sampler>) -> u32 {
    // A surface (no sampler) has no extent along the dimensions it lacks: an H200's `suq.depth` of a
    // 2D surface is 0.
    let surface = s.is_none();
    match TEX_QUERIES[q as usize] {
        "width" => r.width,
        "height" if surface && r.dims < 2 => 0,
        "height" => r.height,
        "depth" if surface && r.dims < 3 => 0,
        "depth" => r.depth,
        // CUDA's source-language enumerations: the array format and the channel count.
        "channel_data_type" => r.format.to_cuda(),
        "channel_order" => r.channels,
        "normalized_coords" => s.is_some_and(|s| s.normalized) as u32,
        "array_size" => r.layers,
        "filter_mode" => s.is_some_and(|s| s.linear) as u32,
        "addr_mode_0" => s.map_or(0, |s| s.address[0].ptx_code()),
        "addr_mode_1" => s.map_or(0, |s| s.address[1].ptx_code()),
        "addr_mode_2" => s.map_or(0, |s| s.address[2].ptx_code()),
        "memory_layout" => r.linear as u32,
        // No mipmaps, multi-sample textures or independent samplers.
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_words_round_trip() {
        let op = TexOp {
            dtype: 1,
            vec: 4,
            ..TexOp::default()
        };
        let mut raw = [0u8; 16];
        pack(&[0x1111, 0x2222, 0x3333, 0xffff_4444], op, &mut raw);
        assert_eq!(&raw[..8], &[0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44]);
        let mut words = [0u32; 4];
        unpack(&raw, op, &mut words);
        assert_eq!(words, [0x1111, 0x2222, 0x3333, 0x4444]);
        let wide = TexOp { dtype: 3, vec: 2, ..op };
        pack(&[1, 2, 3, 4], wide, &mut raw);
        unpack(&raw, wide, &mut words);
        assert_eq!(words, [1, 2, 3, 4]);
    }

    #[test]
    fn handles_are_reused_and_stale_ones_refused() {
        let r = Resource {
            base: 0,
            format: tex::Format::U8,
            channels: 1,
            width: 1,
            height: 1,
            depth: 1,
            layers: 0,
            dims: 1,
            pitch: 1,
            slice: 1,
            linear: false,
            cube: false,
        };
        let h = create(Object::Surface { resource: r.clone() }, None);
        assert!(with(h, |_| ()).is_some());
        assert!(destroy(h));
        assert!(!destroy(h), "destroyed twice");
        assert!(with(h, |_| ()).is_none());
        assert!(with(0, |_| ()).is_none());
        let again = create(Object::Surface { resource: r }, None);
        assert!(destroy(again));
    }
}
