//! CUDA arrays, texture objects and surface objects.
//!
//! An array's elements live in a buffer of the shim's own, row after row and slice (depth plane or
//! layer) after slice with no padding, counted against the device's memory. Copies reach them
//! through `cuMemcpy2D`/`3D` and the 1D array copies (`crate::memory`); kernels reach them only
//! through texture and surface objects. Objects are registered with the runtime
//! (`ptx_jit::runtime::texture`), whose handles are the ones kernels get; an object keeps the
//! buffer it reads alive, so destroying an array under a live texture cannot leave a kernel
//! reading freed memory.
//!
//! A cubemap is a layered 2D array whose layers are its faces, six per cube.
//!
//! A mipmapped array is a list of arrays, one per level.
//!
//! Not supported (`CUDA_ERROR_NOT_SUPPORTED`): mipmapped cubemaps, sparse arrays, resource views, sRGB
//! reads, and formats other than the 8-, 16- and 32-bit integers, half and float. Texture references
//! are `crate::texref`.

use crate::errors::*;
use crate::memory::ArrayPeer;
use crate::state::*;
use crate::{init_check, out, CUdeviceptr, Handle};
use ptx_jit::emu::texture::{Address, Format, Resource, Sampler};
use ptx_jit::runtime::texture::{self as rt, Object};
use std::collections::HashMap;
use std::ffi::{c_uint, c_void};
use std::sync::Arc;

/// `CUDA_ARRAY_DESCRIPTOR` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArrayDescriptor {
    width: usize,
    height: usize,
    format: c_uint,
    channels: c_uint,
}

impl ArrayDescriptor {
    /// Width, height, format and channels.
    pub(crate) fn parts(&self) -> (usize, usize, c_uint, c_uint) {
        (self.width, self.height, self.format, self.channels)
    }
}

/// `CUDA_ARRAY3D_DESCRIPTOR` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Array3DDescriptor {
    width: usize,
    height: usize,
    depth: usize,
    format: c_uint,
    channels: c_uint,
    flags: c_uint,
}

const LAYERED: c_uint = 0x01;
const SURFACE_LDST: c_uint = 0x02;
const CUBEMAP: c_uint = 0x04;
const TEXTURE_GATHER: c_uint = 0x08;
const DEPTH_TEXTURE: c_uint = 0x10;
const COLOR_ATTACHMENT: c_uint = 0x20;

/// An array's elements: a buffer counted against the device's memory while it lives.
pub(crate) struct Elements {
    buf: Box<[u128]>,
    bytes: u64,
}

impl Drop for Elements {
    fn drop(&mut self) {
        crate::memory::unreserve(self.bytes);
    }
}

impl Elements {
    fn base(&self) -> u64 {
        self.buf.as_ptr() as u64
    }
}

pub struct Array {
    /// The context that made it, whose destruction destroys it.
    ctx: usize,
    /// A mipmap's level, which goes with its mipmap, not on its own.
    level: bool,
    desc: Array3DDescriptor,
    format: Format,
    elements: Arc<Elements>,
}

impl Array {
    fn texel_bytes(&self) -> usize {
        self.format.bytes() as usize * self.desc.channels as usize
    }
    fn pitch(&self) -> usize {
        self.desc.width * self.texel_bytes()
    }
    /// Rows per slice, and slices (depth planes or layers).
    fn rows(&self) -> usize {
        self.desc.height.max(1)
    }
    fn slices(&self) -> usize {
        self.desc.depth.max(1)
    }

    /// The array as a resource for textures and surfaces.
    fn resource(&self) -> Resource {
        let d = &self.desc;
        // A cubemap's faces are the layers of a layered 2D array.
        let cube = d.flags & CUBEMAP != 0;
        let layered = d.flags & LAYERED != 0 || cube;
        let dims = match (layered, d.height, d.depth) {
            (true, 0, _) | (false, 0, 0) => 1,
            (true, _, _) | (false, _, 0) => 2,
            _ => 3,
        };
        Resource {
            base: self.elements.base(),
            format: self.format,
            channels: d.channels,
            width: d.width as u32,
            height: d.height.max(1) as u32,
            depth: if layered { 1 } else { d.depth.max(1) as u32 },
            layers: if layered { d.depth as u32 } else { 0 },
            dims,
            pitch: self.pitch() as u64,
            slice: (self.pitch() * self.rows()) as u64,
            linear: false,
            cube,
        }
    }
}

pub static ARRAYS: once_cell::sync::Lazy<Table<Array>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Array));

/// A mipmapped array: its levels, arrays of their own (`cuMipmappedArrayGetLevel`), level 0 first.
pub struct Mipmapped {
    levels: Vec<usize>,
}

impl Drop for Mipmapped {
    fn drop(&mut self) {
        for &l in &self.levels {
            let _ = ARRAYS.remove(l);
        }
    }
}

pub static MIPMAPS: once_cell::sync::Lazy<Table<Mipmapped>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Mipmapped));

/// The descriptor of level `i` of a mipmap whose level 0 is `d`: each dimension it has halves, down
/// to 1 (a layered array keeps its layers).
fn level_of(d: &Array3DDescriptor, i: u32) -> Array3DDescriptor {
    let half = |n: usize| if n == 0 { 0 } else { (n >> i).max(1) };
    Array3DDescriptor {
        width: half(d.width),
        height: half(d.height),
        depth: if d.flags & LAYERED != 0 { d.depth } else { half(d.depth) },
        ..*d
    }
}

/// The texture and surface limits an H100 reports (`tests/gpu/probes_c/device_attributes.h100.txt`),
/// by `CUdevice_attribute`: what arrays and resources may measure here too.
pub(crate) const LIMITS: [(i32, u64); 44] = [
    (14, 512),       // TEXTURE_ALIGNMENT
    (21, 131072),    // MAXIMUM_TEXTURE1D_WIDTH
    (22, 131072),    // MAXIMUM_TEXTURE2D_WIDTH
    (23, 65536),     // MAXIMUM_TEXTURE2D_HEIGHT
    (24, 16384),     // MAXIMUM_TEXTURE3D_WIDTH
    (25, 16384),     // MAXIMUM_TEXTURE3D_HEIGHT
    (26, 16384),     // MAXIMUM_TEXTURE3D_DEPTH
    (27, 32768),     // MAXIMUM_TEXTURE2D_LAYERED_WIDTH
    (28, 32768),     // MAXIMUM_TEXTURE2D_LAYERED_HEIGHT
    (29, 2048),      // MAXIMUM_TEXTURE2D_LAYERED_LAYERS
    (30, 512),       // SURFACE_ALIGNMENT
    (42, 32768),     // MAXIMUM_TEXTURE1D_LAYERED_WIDTH
    (43, 2048),      // MAXIMUM_TEXTURE1D_LAYERED_LAYERS
    (44, 1),         // CAN_TEX2D_GATHER
    (45, 32768),     // MAXIMUM_TEXTURE2D_GATHER_WIDTH
    (46, 32768),     // MAXIMUM_TEXTURE2D_GATHER_HEIGHT
    (47, 8192),      // MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE
    (48, 8192),      // MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE
    (49, 32768),     // MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE
    (51, 32),        // TEXTURE_PITCH_ALIGNMENT
    (52, 32768),     // MAXIMUM_TEXTURECUBEMAP_WIDTH
    (53, 32768),     // MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH
    (54, 2046),      // MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS
    (55, 32768),     // MAXIMUM_SURFACE1D_WIDTH
    (56, 131072),    // MAXIMUM_SURFACE2D_WIDTH
    (57, 65536),     // MAXIMUM_SURFACE2D_HEIGHT
    (58, 16384),     // MAXIMUM_SURFACE3D_WIDTH
    (59, 16384),     // MAXIMUM_SURFACE3D_HEIGHT
    (60, 16384),     // MAXIMUM_SURFACE3D_DEPTH
    (61, 32768),     // MAXIMUM_SURFACE1D_LAYERED_WIDTH
    (62, 2048),      // MAXIMUM_SURFACE1D_LAYERED_LAYERS
    (63, 32768),     // MAXIMUM_SURFACE2D_LAYERED_WIDTH
    (64, 32768),     // MAXIMUM_SURFACE2D_LAYERED_HEIGHT
    (65, 2048),      // MAXIMUM_SURFACE2D_LAYERED_LAYERS
    (66, 32768),     // MAXIMUM_SURFACECUBEMAP_WIDTH
    (67, 32768),     // MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH
    (68, 2046),      // MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS
    (69, 268435456), // MAXIMUM_TEXTURE1D_LINEAR_WIDTH
    (70, 131072),    // MAXIMUM_TEXTURE2D_LINEAR_WIDTH
    (71, 65000),     // MAXIMUM_TEXTURE2D_LINEAR_HEIGHT
    (72, 2097120),   // MAXIMUM_TEXTURE2D_LINEAR_PITCH
    (73, 32768),     // MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH
    (74, 32768),     // MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
    (77, 32768),     // MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
];

/// One of [`LIMITS`] (0 for an attribute it does not list).
pub(crate) fn limit(attr: i32) -> u64 {
    LIMITS.iter().find(|(a, _)| *a == attr).map_or(0, |(_, v)| *v)
}

/// Whether an array of this shape fits the device's texture limits (width, height, depth or layers).
fn shape_fits(d: &Array3DDescriptor) -> bool {
    let layered = d.flags & LAYERED != 0;
    let (w, h, dd) = (d.width as u64, d.height as u64, d.depth as u64);
    let within = |attrs: &[i32], dims: &[u64]| attrs.iter().zip(dims).all(|(&a, &v)| v <= limit(a));
    if d.flags & CUBEMAP != 0 {
        // Square faces, six per cube.
        return w == h
            && dd > 0
            && dd % 6 == 0
            && if layered {
                within(&[53, 54], &[w, dd])
            } else {
                dd == 6 && within(&[52], &[w])
            };
    }
    match (layered, h, dd) {
        (true, 0, _) => within(&[42, 43], &[w, dd]),
        (true, _, _) => within(&[27, 28, 29], &[w, h, dd]),
        (false, 0, 0) => within(&[21], &[w]),
        (false, _, 0) => within(&[22, 23], &[w, h]),
        _ => within(&[24, 25, 26], &[w, h, dd]) || within(&[47, 48, 49], &[w, h, dd]),
    }
}

fn create_array(d: Array3DDescriptor, level: bool) -> Result<Handle, CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    if d.flags & !(LAYERED | SURFACE_LDST | CUBEMAP | TEXTURE_GATHER | DEPTH_TEXTURE | COLOR_ATTACHMENT) != 0 {
        return Err(CUDA_ERROR_NOT_SUPPORTED); // sparse and deferred-mapping arrays
    }
    let format = Format::from_cuda(d.format).ok_or(match d.format {
        0x01..=0xff => CUDA_ERROR_NOT_SUPPORTED,
        _ => CUDA_ERROR_INVALID_VALUE,
    })?;
    let layered = d.flags & LAYERED != 0;
    let shape_ok = d.width > 0
        && matches!(d.channels, 1 | 2 | 4)
        && (d.depth == 0 || d.height > 0 || layered)
        && (!layered || d.depth > 0)
        && shape_fits(&d);
    if !shape_ok {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let bytes = (d.width as u64)
        .checked_mul(d.height.max(1) as u64)
        .and_then(|n| n.checked_mul(d.depth.max(1) as u64))
        .and_then(|n| n.checked_mul(format.bytes() * d.channels as u64))
        .ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
    crate::memory::reserve(bytes)?;
    let words = bytes.div_ceil(16) as usize;
    let mut buf = Vec::new();
    if buf.try_reserve_exact(words).is_err() {
        crate::memory::unreserve(bytes);
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    buf.resize(words, 0u128);
    let elements = Arc::new(Elements {
        buf: buf.into_boxed_slice(),
        bytes,
    });
    Ok(ARRAYS.insert(Array {
        ctx,
        level,
        desc: d,
        format,
        elements,
    }) as Handle)
}

/// Destroys the arrays (mipmapped ones too) and the texture and surface objects context `ctx` made.
pub(crate) fn release_ctx(ctx: usize) {
    ARRAYS.retain(|_, a| a.ctx != ctx);
    MIPMAPS.retain(|_, m| m.levels.iter().all(|&l| ARRAYS.get(l).is_ok()));
    if let Some(m) = MADE.lock().as_mut() {
        m.retain(|&h, made| {
            let live = made.ctx != ctx;
            if !live {
                rt::destroy(h);
            }
            live
        });
    }
}

/// A copy's region of an array (byte `x`, row `y`, slice `z`; `extent` in bytes, rows, slices): its
/// first byte, the array's pitch and rows per slice, and its elements. Refused unless the region
/// lies inside.
pub(crate) fn array_region(
    h: Handle,
    [x, y, z]: [usize; 3],
    [w, rows, slices]: [usize; 3],
) -> Result<(u64, usize, usize, rt::Keep), CUresult> {
    let a = ARRAYS.get(h as usize)?;
    let fits = |at: usize, n: usize, size: usize| at.checked_add(n).is_some_and(|end| end <= size);
    if !(fits(x, w, a.pitch()) && fits(y, rows, a.rows()) && fits(z, slices, a.slices())) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let at = a.elements.base() + (z * a.pitch() * a.rows() + y * a.pitch() + x) as u64;
    Ok((at, a.pitch(), a.rows(), a.elements.clone()))
}

/// The address of bytes `[offset, offset + n)` of a 1D array's elements, all of them inside, and the
/// elements: what the 1D copies (`cuMemcpyHtoA`, `cuMemcpyAtoH`, ...) take. A 2D, 3D or layered
/// array is refused, as an H200 refuses `cuMemcpyAtoH` from a 2D array (cuMemcpy2D/3D copy those).
pub(crate) fn array_bytes(h: Handle, offset: usize, n: usize) -> Result<(u64, rt::Keep), CUresult> {
    let a = ARRAYS.get(h as usize)?;
    if a.desc.height != 0 || a.desc.depth != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    match offset.checked_add(n) {
        Some(end) if end as u64 <= a.elements.bytes => Ok((a.elements.base() + offset as u64, a.elements.clone())),
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

/// `CUDA_RESOURCE_DESC` (cuda.h): the resource type, a union of 128 bytes, flags.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ResourceDesc {
    res_type: c_uint,
    res: [u64; 16],
    flags: c_uint,
}

/// `CUDA_TEXTURE_DESC` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TextureDesc {
    address_mode: [c_uint; 3],
    filter_mode: c_uint,
    flags: c_uint,
    max_anisotropy: c_uint,
    mipmap_filter_mode: c_uint,
    mipmap_level_bias: f32,
    min_mipmap_level_clamp: f32,
    max_mipmap_level_clamp: f32,
    border_color: [f32; 4],
    reserved: [i32; 12],
}

const READ_AS_INTEGER: c_uint = 0x01;
const NORMALIZED_COORDINATES: c_uint = 0x02;
const SRGB: c_uint = 0x10;

/// What an object was made from, for `cuTexObjectGetResourceDesc` and kin (a surface has no
/// texture description), and the context whose destruction destroys it.
struct Made {
    resource: ResourceDesc,
    texture: Option<TextureDesc>,
    ctx: usize,
}

static MADE: parking_lot::Mutex<Option<HashMap<u64, Made>>> = parking_lot::Mutex::new(None);

/// The memory a resource description names: the resource and, for an array, its elements.
/// A mipmap's levels come as well (empty for other resources), and what the object keeps alive.
unsafe fn resource(d: &ResourceDesc, surface: bool) -> Result<(Resource, Vec<Resource>, Option<rt::Keep>), CUresult> {
    if d.flags != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE); // "must be zero"
    }
    let word = |k: usize| d.res[k];
    let format = |w: u64| -> Result<(Format, u32), CUresult> {
        let f = Format::from_cuda(w as u32).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        Ok((f, (w >> 32) as u32))
    };
    match d.res_type {
        0 => {
            let (r, elements) = array_resource(word(0) as Handle)?;
            Ok((r, vec![], Some(elements as rt::Keep)))
        }
        _ if surface => Err(CUDA_ERROR_INVALID_VALUE),
        1 => {
            let m = MIPMAPS.get(word(0) as usize)?;
            let (levels, kept): (Vec<Resource>, Vec<Arc<Elements>>) = m
                .levels
                .iter()
                .map(|&l| array_resource(l as Handle))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .unzip();
            Ok((levels[0].clone(), levels, Some(Arc::new(kept) as rt::Keep)))
        }
        // linear: devPtr, format and numChannels (two 32-bit words), sizeInBytes.
        2 => Ok((
            linear_resource(word(0), format(word(1))?, word(2), limit(14))?,
            vec![],
            None,
        )),
        // pitch2D: devPtr, format and numChannels, width, height, pitchInBytes.
        3 => Ok((
            pitched_resource(word(0), format(word(1))?, word(2), word(3), word(4))?,
            vec![],
            None,
        )),
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

/// An array as a resource, and its elements. A surface may be made of any array: an H200 makes a
/// surface object of an array made without `CUDA_ARRAY3D_SURFACE_LDST`.
pub(crate) fn array_resource(h: Handle) -> Result<(Resource, Arc<Elements>), CUresult> {
    let a = ARRAYS.get(h as usize)?;
    Ok((a.resource(), a.elements.clone()))
}

/// The texture and surface objects made of array or mipmap `h` (`res_type` 0 or 1), and the
/// references bound to an array, are freed with it: their memory goes back, and a kernel that uses
/// one faults (an H200 ends such a launch with an illegal address), while their handles stay until
/// destroyed.
fn free_objects_of(res_type: c_uint, h: Handle) {
    if res_type == 0 {
        crate::texref::array_destroyed(h);
    }
    if let Some(m) = MADE.lock().as_ref() {
        for (&obj, made) in m {
            if made.resource.res_type == res_type && made.resource.res[0] == h as u64 {
                rt::replace(obj, Object::Freed, None);
            }
        }
    }
}

/// Checks linear memory for a texture: a start aligned to `align` and 1, 2 or 4 channels.
fn linear_start(ptr: CUdeviceptr, channels: u32, align: u64) -> Result<(), CUresult> {
    if ptr == 0 || !ptr.is_multiple_of(align) || !matches!(channels, 1 | 2 | 4) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}

/// `bytes` of linear device memory at `ptr` as a 1D resource of `(format, channels)` texels. A texture
/// object needs a start aligned as the device says (`TEXTURE_ALIGNMENT`); a texture reference binds
/// anywhere (`cuTexRefSetAddress` reports an offset of 0): `align` is 1 for it.
pub(crate) fn linear_resource(
    ptr: CUdeviceptr,
    (format, channels): (Format, u32),
    bytes: u64,
    align: u64,
) -> Result<Resource, CUresult> {
    linear_start(ptr, channels, align)?;
    let texel = format.bytes() * channels as u64;
    let width = bytes / texel;
    if width == 0 || width > limit(69) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    check_range(ptr, width * texel)?;
    Ok(Resource {
        base: ptr,
        format,
        channels,
        width: width as u32,
        height: 1,
        depth: 1,
        layers: 0,
        dims: 1,
        pitch: width * texel,
        slice: width * texel,
        linear: true,
        cube: false,
    })
}

/// `h` rows of `w` texels, `pitch` bytes apart, at `ptr` as a 2D resource.
pub(crate) fn pitched_resource(
    ptr: CUdeviceptr,
    (format, channels): (Format, u32),
    w: u64,
    h: u64,
    pitch: u64,
) -> Result<Resource, CUresult> {
    linear_start(ptr, channels, limit(14))?;
    let texel = format.bytes() * channels as u64;
    let [max_w, max_h, max_pitch] = [70, 71, 72].map(limit);
    let bad = w == 0
        || h == 0
        || w > max_w
        || h > max_h
        || pitch > max_pitch
        || !pitch.is_multiple_of(limit(51))
        || pitch < w * texel;
    if bad {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // Bounded above, so none of this overflows.
    check_range(ptr, pitch * (h - 1) + w * texel)?;
    Ok(Resource {
        base: ptr,
        format,
        channels,
        width: w as u32,
        height: h as u32,
        depth: 1,
        layers: 0,
        dims: 2,
        pitch,
        slice: pitch * h,
        linear: true,
        cube: false,
    })
}

/// The sampler a texture description asks for.
pub(crate) fn sampler(t: &TextureDesc) -> Result<Sampler, CUresult> {
    if t.flags & SRGB != 0 {
        return Err(CUDA_ERROR_NOT_SUPPORTED);
    }
    let mut address = [Address::Wrap; 3];
    for (a, &m) in address.iter_mut().zip(&t.address_mode) {
        *a = Address::from_cuda(m).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    }
    if t.filter_mode > 1 || t.mipmap_filter_mode > 1 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(Sampler {
        address,
        linear: t.filter_mode == 1,
        normalized: t.flags & NORMALIZED_COORDINATES != 0,
        integer_read: t.flags & READ_AS_INTEGER != 0,
        border: t.border_color,
        mip_linear: t.mipmap_filter_mode == 1,
        lod_bias: t.mipmap_level_bias,
        lod_range: [t.min_mipmap_level_clamp, t.max_mipmap_level_clamp],
    })
}

/// `f` of what object `h` was made from, if it is live and of the kind `texture` says.
fn made<R>(h: u64, texture: bool, f: impl FnOnce(&Made) -> R) -> Result<R, CUresult> {
    MADE.lock()
        .as_ref()
        .and_then(|m| m.get(&h))
        .filter(|m| m.texture.is_some() == texture)
        .map(f)
        .ok_or(CUDA_ERROR_INVALID_VALUE)
}

/// Destroys an object of the kind `texture` says. The record of objects stays locked throughout, so
/// a handle cannot be destroyed twice, nor a new object's record lost meanwhile.
fn destroy(h: u64, texture: bool) -> Result<(), CUresult> {
    init_check()?;
    let mut made = MADE.lock();
    let known = made
        .as_ref()
        .and_then(|m| m.get(&h))
        .is_some_and(|m| m.texture.is_some() == texture);
    if !known || !rt::destroy(h) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    if let Some(m) = made.as_mut() {
        m.remove(&h);
    }
    Ok(())
}

/// Registers an object with the runtime and records what it was made from.
fn register(object: Object, keep: Option<rt::Keep>, made: Made) -> u64 {
    let mut all = MADE.lock();
    let h = rt::create(object, keep);
    all.get_or_insert_with(HashMap::new).insert(h, made);
    h
}

api! {
    exports = texture_exports;

    fn cuArrayCreate_v2(handle: *mut Handle, d: *const ArrayDescriptor) {
        let d = d.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if handle.is_null() || d.height == usize::MAX {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let h = create_array(
            Array3DDescriptor {
            width: d.width,
            height: d.height,
            depth: 0,
            format: d.format,
            channels: d.channels,
            flags: 0,
        },
            false,
        )?;
        out(handle, h)
    }
    fn cuArray3DCreate_v2(handle: *mut Handle, d: *const Array3DDescriptor) {
        let d = *d.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if handle.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        out(handle, create_array(d, false)?)
    }
    fn cuMipmappedArrayCreate(handle: *mut Handle, d: *const Array3DDescriptor, levels: c_uint) {
        let d = *d.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // At most down to 1 x 1 x 1 (a layered array's layers do not count).
        let longest = [d.width, d.height, if d.flags & LAYERED != 0 { 0 } else { d.depth }]
            .into_iter()
            .max()
            .unwrap_or(0)
            .max(1);
        // Mipmaps have limits of their own (1D and 2D).
        let fits = match (d.height, d.depth) {
            (0, 0) => d.width as u64 <= limit(77),
            (_, 0) => d.width as u64 <= limit(73) && d.height as u64 <= limit(74),
            _ => true,
        };
        if handle.is_null() || levels == 0 || !fits || d.flags & CUBEMAP != 0 {
            return Err(if d.flags & CUBEMAP != 0 { CUDA_ERROR_NOT_SUPPORTED } else { CUDA_ERROR_INVALID_VALUE });
        }
        // More levels than the size allows make as many as it allows (an H200: 4 asked of a 4 x 4
        // array give levels 0 to 2).
        let levels = levels.min(1 + longest.ilog2());
        let mut m = Mipmapped { levels: vec![] };
        for i in 0..levels {
            // On failure, dropping `m` destroys the levels made so far.
            m.levels.push(create_array(level_of(&d, i), true)? as usize);
        }
        out(handle, MIPMAPS.insert(m) as Handle)
    }
    fn cuMipmappedArrayGetLevel(level: *mut Handle, h: Handle, i: c_uint) {
        init_check()?;
        let m = MIPMAPS.get(h as usize)?;
        out(level, *m.levels.get(i as usize).ok_or(CUDA_ERROR_INVALID_VALUE)? as Handle)
    }
    fn cuMipmappedArrayDestroy(h: Handle) {
        init_check()?;
        let m = MIPMAPS.remove(h as usize)?;
        free_objects_of(1, h);
        // Objects made of one of its levels go with them.
        for &l in &m.levels {
            free_objects_of(0, l as Handle);
        }
        Ok(())
    }
    fn cuArrayDestroy(h: Handle) {
        init_check()?;
        if ARRAYS.get(h as usize)?.level {
            return Err(CUDA_ERROR_INVALID_VALUE); // a mipmap's level goes with its mipmap
        }
        ARRAYS.remove(h as usize)?;
        free_objects_of(0, h);
        Ok(())
    }
    fn cuArrayGetDescriptor_v2(d: *mut ArrayDescriptor, h: Handle) {
        init_check()?;
        // Of a 3D or layered array too (an H200 answers with its width, height, format and channels).
        let a = ARRAYS.get(h as usize)?;
        out(
            d,
            ArrayDescriptor {
                width: a.desc.width,
                height: a.desc.height,
                format: a.desc.format,
                channels: a.desc.channels,
            },
        )
    }
    fn cuArray3DGetDescriptor_v2(d: *mut Array3DDescriptor, h: Handle) {
        init_check()?;
        out(d, ARRAYS.get(h as usize)?.desc)
    }
    fn cuMemcpyHtoA_v2[cuMemcpyHtoA_v2_ptds](dst: Handle, offset: usize, src: *const c_void, n: usize) {
        crate::memory::array_copy(dst, offset, ArrayPeer::Host(src as u64), true, n, None)
    }
    fn cuMemcpyHtoAAsync_v2[cuMemcpyHtoAAsync_v2_ptsz](dst: Handle, offset: usize, src: *const c_void, n: usize, s: Handle) {
        crate::memory::array_copy(dst, offset, ArrayPeer::Host(src as u64), true, n, Some(s))
    }
    fn cuMemcpyAtoH_v2[cuMemcpyAtoH_v2_ptds](dst: *mut c_void, src: Handle, offset: usize, n: usize) {
        crate::memory::array_copy(src, offset, ArrayPeer::Host(dst as u64), false, n, None)
    }
    fn cuMemcpyAtoHAsync_v2[cuMemcpyAtoHAsync_v2_ptsz](dst: *mut c_void, src: Handle, offset: usize, n: usize, s: Handle) {
        crate::memory::array_copy(src, offset, ArrayPeer::Host(dst as u64), false, n, Some(s))
    }
    fn cuMemcpyDtoA_v2[cuMemcpyDtoA_v2_ptds](dst: Handle, offset: usize, src: CUdeviceptr, n: usize) {
        crate::memory::array_copy(dst, offset, ArrayPeer::Device(src), true, n, None)
    }
    fn cuMemcpyAtoD_v2[cuMemcpyAtoD_v2_ptds](dst: CUdeviceptr, src: Handle, offset: usize, n: usize) {
        crate::memory::array_copy(src, offset, ArrayPeer::Device(dst), false, n, None)
    }
    fn cuMemcpyAtoA_v2[cuMemcpyAtoA_v2_ptds](dst: Handle, dst_offset: usize, src: Handle, src_offset: usize, n: usize) {
        crate::memory::array_copy(dst, dst_offset, ArrayPeer::Array(src, src_offset), true, n, None)
    }
    fn cuTexObjectCreate(h: *mut u64, rd: *const ResourceDesc, td: *const TextureDesc, view: *const c_void) {
        init_check()?;
        let (rd, td) = (*rd.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?, *td.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?);
        if h.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if !view.is_null() {
            return Err(CUDA_ERROR_NOT_SUPPORTED); // resource views
        }
        let (resource, levels, keep) = resource(&rd, false)?;
        let sampler = sampler(&td)?;
        let made = Made {
            resource: rd,
            texture: Some(td),
            ctx: current_ctx()?,
        };
        out(h, register(Object::Texture { resource, sampler, levels }, keep, made))
    }
    fn cuTexObjectDestroy(h: u64) {
        destroy(h, true)
    }
    fn cuTexObjectGetResourceDesc(d: *mut ResourceDesc, h: u64) {
        init_check()?;
        out(d, made(h, true, |m| m.resource)?)
    }
    fn cuTexObjectGetTextureDesc(d: *mut TextureDesc, h: u64) {
        init_check()?;
        out(d, made(h, true, |m| m.texture)?.ok_or(CUDA_ERROR_INVALID_VALUE)?)
    }
    fn cuSurfObjectCreate(h: *mut u64, rd: *const ResourceDesc) {
        init_check()?;
        let rd = *rd.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if h.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (resource, _, keep) = resource(&rd, true)?;
        let made = Made {
            resource: rd,
            texture: None,
            ctx: current_ctx()?,
        };
        out(h, register(Object::Surface { resource }, keep, made))
    }
    fn cuSurfObjectDestroy(h: u64) {
        destroy(h, false)
    }
    fn cuSurfObjectGetResourceDesc(d: *mut ResourceDesc, h: u64) {
        init_check()?;
        out(d, made(h, false, |m| m.resource)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_have_cuda_h_layouts() {
        assert_eq!(std::mem::size_of::<ArrayDescriptor>(), 24);
        assert_eq!(std::mem::size_of::<Array3DDescriptor>(), 40);
        assert_eq!(std::mem::size_of::<ResourceDesc>(), 144);
        assert_eq!(std::mem::offset_of!(ResourceDesc, res), 8);
        assert_eq!(std::mem::offset_of!(ResourceDesc, flags), 136);
        assert_eq!(std::mem::size_of::<TextureDesc>(), 104);
        assert_eq!(std::mem::offset_of!(TextureDesc, border_color), 40);
    }
}
