//! Texture and surface references: a module's `.texref` and `.surfref` variables, which the driver
//! binds to memory (`cuModuleGetTexRef`, `cuTexRefSetArray`, `cuTexRefSetAddress`, … — the API
//! PyCUDA and pre-CUDA-12 programs use; CUDA 12's runtime no longer has it).
//!
//! Each reference is 8 bytes of the module's memory, which the lowering reads as the handle of a
//! texture or surface object (`ptx_llvm` `lower/texture.rs`). A reference gets its object when it is
//! first bound, and keeps that handle: binding it anew, or changing its format, filtering or address
//! modes, replaces the object in place. Until bound it holds 0, and a kernel using it ends with an
//! illegal address. A reference made with `cuTexRefCreate` (bound to no module) is not supported.

use crate::errors::*;
use crate::state::*;
use crate::texture::{array_resource, linear_resource, pitched_resource, ArrayDescriptor, Elements};
use crate::{init_check, out, CUdeviceptr, Handle};
use parking_lot::Mutex;
use ptx_jit::emu::texture::{Address, Format, Resource, Sampler};
use ptx_jit::runtime::texture::{self as rt, Object};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, CStr};
use std::sync::Arc;

/// What a reference is bound to.
#[derive(Clone, Copy)]
enum Binding {
    None,
    Array(usize),
    Linear {
        ptr: CUdeviceptr,
        bytes: u64,
    },
    Pitched {
        ptr: CUdeviceptr,
        width: u64,
        height: u64,
        pitch: u64,
    },
}

/// A reference's state, as the `cuTexRefSet*` calls leave it.
#[derive(Clone)]
struct State {
    binding: Binding,
    format: Format,
    channels: u32,
    address: [Address; 3],
    linear: bool,
    flags: c_uint,
    border: [f32; 4],
    /// The object the reference holds; 0 until first bound.
    handle: u64,
}

pub struct Reference {
    module: usize,
    /// The module whose memory holds the reference, alive while the reference is.
    _owner: Arc<ModuleObj>,
    /// The variable's 8 bytes.
    storage: u64,
    surface: bool,
    st: Mutex<State>,
}

const READ_AS_INTEGER: c_uint = 0x01;
const NORMALIZED_COORDINATES: c_uint = 0x02;
/// `CU_TRSA_OVERRIDE_FORMAT`: the flag `cuTexRefSetArray` requires.
const OVERRIDE_FORMAT: c_uint = 0x01;

pub static REFERENCES: once_cell::sync::Lazy<Table<Reference>> =
    once_cell::sync::Lazy::new(|| Table::new(Tag::Reference));

/// Each module's references already handed out: (module, name) → handle.
static BY_NAME: Mutex<Option<HashMap<(usize, String), usize>>> = Mutex::new(None);

/// The reference `name` of `module`, of the kind `surface` says, made on first request.
unsafe fn get(module: Handle, name: *const c_char, surface: bool) -> Result<Handle, CUresult> {
    init_check()?;
    if name.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let m = MODULES.get(module as usize)?;
    let name = CStr::from_ptr(name).to_str().map_err(|_| CUDA_ERROR_NOT_FOUND)?;
    if !m.host.references.iter().any(|(n, s)| n == name && *s == surface) {
        return Err(CUDA_ERROR_NOT_FOUND);
    }
    let storage = m
        .host
        .globals
        .iter()
        .find(|g| g.0 == name)
        .ok_or(CUDA_ERROR_NOT_FOUND)?
        .1;
    let mut by_name = BY_NAME.lock();
    let map = by_name.get_or_insert_with(HashMap::new);
    let key = (module as usize, name.to_string());
    if let Some(&h) = map.get(&key) {
        return Ok(h as Handle);
    }
    let h = REFERENCES.insert(Reference {
        module: module as usize,
        _owner: m.clone(),
        storage,
        surface,
        st: Mutex::new(State {
            binding: Binding::None,
            // Until `cuTexRefSetFormat` says otherwise (an array brings its own).
            format: Format::F32,
            channels: 1,
            address: [Address::Wrap; 3],
            linear: false,
            flags: 0,
            border: [0.0; 4],
            handle: 0,
        }),
    });
    map.insert(key, h);
    Ok(h as Handle)
}

/// The references of an unloaded module go, with their objects.
pub(crate) fn release_module(module: usize) {
    if let Some(map) = BY_NAME.lock().as_mut() {
        map.retain(|(m, _), _| *m != module);
    }
    REFERENCES.retain(|_, r| {
        if r.module == module {
            rt::destroy(r.st.lock().handle);
        }
        r.module != module
    });
}

/// The reference `h`, of the kind `surface` says.
fn reference(h: Handle, surface: bool) -> Result<Arc<Reference>, CUresult> {
    init_check()?;
    let r = REFERENCES.get(h as usize)?;
    if r.surface != surface {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    }
    Ok(r)
}

/// Array `array` is destroyed: the references bound to it hold a freed object, which faults when a
/// kernel reads it (as a texture object of a destroyed array does), until bound anew.
pub(crate) fn array_destroyed(array: Handle) {
    REFERENCES.retain(|_, r| {
        let st = r.st.lock();
        if matches!(st.binding, Binding::Array(a) if a == array as usize) && st.handle != 0 {
            rt::replace(st.handle, Object::Freed, None);
        }
        true
    });
}

/// Runs `f` on a reference's state, then makes its object match (when bound).
fn update(h: Handle, surface: bool, f: impl FnOnce(&mut State) -> Result<(), CUresult>) -> Result<(), CUresult> {
    let r = reference(h, surface)?;
    let mut held = r.st.lock();
    // Changed on a copy, kept only if the reference can be made so: a refused call changes nothing.
    let mut st = held.clone();
    f(&mut st)?;
    let (resource, keep): (Resource, Option<Arc<Elements>>) = match st.binding {
        Binding::None => {
            *held = st;
            return Ok(());
        }
        Binding::Array(a) => {
            let (res, elements) = array_resource(a as Handle)?;
            (res, Some(elements))
        }
        Binding::Linear { ptr, bytes } => (linear_resource(ptr, (st.format, st.channels), bytes, 1)?, None),
        Binding::Pitched {
            ptr,
            width,
            height,
            pitch,
        } => (
            pitched_resource(ptr, (st.format, st.channels), width, height, pitch)?,
            None,
        ),
    };
    let object = if surface {
        Object::Surface { resource }
    } else {
        Object::Texture {
            resource,
            sampler: Sampler {
                address: st.address,
                linear: st.linear,
                normalized: st.flags & NORMALIZED_COORDINATES != 0,
                integer_read: st.flags & READ_AS_INTEGER != 0,
                border: st.border,
                mip_linear: false,
                lod_bias: 0.0,
                lod_range: [0.0, f32::MAX],
            },
            levels: vec![],
        }
    };
    let keep = keep.map(|k| k as rt::Keep);
    if st.handle == 0 || !rt::replace(st.handle, object.clone(), keep.clone()) {
        st.handle = rt::create(object, keep);
    }
    // SAFETY: the reference's 8 bytes of module memory, which the reference keeps alive.
    unsafe { (r.storage as *mut u64).write_volatile(st.handle) };
    *held = st;
    Ok(())
}

/// Reads a reference's state.
fn read<R>(h: Handle, surface: bool, f: impl FnOnce(&State) -> R) -> Result<R, CUresult> {
    let r = reference(h, surface)?;
    let st = r.st.lock();
    Ok(f(&st))
}

fn format_of(f: c_uint) -> Result<Format, CUresult> {
    Format::from_cuda(f).ok_or(CUDA_ERROR_INVALID_VALUE)
}

/// `cuTexRefSetAddress2D` (both ABIs): `desc` says the texels' size and format.
unsafe fn bind_2d(r: Handle, desc: *const ArrayDescriptor, ptr: CUdeviceptr, pitch: usize) -> Result<(), CUresult> {
    let d = *desc.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let (width, height, format, channels) = d.parts();
    let format = format_of(format)?;
    update(r, false, |st| {
        (st.format, st.channels) = (format, channels);
        st.binding = Binding::Pitched {
            ptr,
            width: width as u64,
            height: height as u64,
            pitch: pitch as u64,
        };
        Ok(())
    })
}

api! {
    exports = texref_exports;

    fn cuModuleGetTexRef(r: *mut Handle, module: Handle, name: *const c_char) {
        let h = get(module, name, false)?;
        out(r, h)
    }
    fn cuModuleGetSurfRef(r: *mut Handle, module: Handle, name: *const c_char) {
        let h = get(module, name, true)?;
        out(r, h)
    }
    fn cuTexRefSetArray(r: Handle, array: Handle, flags: c_uint) {
        if flags != OVERRIDE_FORMAT {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (res, _) = array_resource(array)?;
        update(r, false, |st| {
            st.binding = Binding::Array(array as usize);
            (st.format, st.channels) = (res.format, res.channels);
            Ok(())
        })
    }
    fn cuTexRefSetAddress_v2(offset: *mut usize, r: Handle, ptr: CUdeviceptr, bytes: usize) {
        update(r, false, |st| {
            st.binding = if ptr == 0 && bytes == 0 {
                Binding::None
            } else {
                Binding::Linear { ptr, bytes: bytes as u64 }
            };
            Ok(())
        })?;
        // Bound where asked: fetches need no offset.
        if !offset.is_null() {
            *offset = 0;
        }
        Ok(())
    }
    fn cuTexRefSetAddress2D_v2(r: Handle, desc: *const ArrayDescriptor, ptr: CUdeviceptr, pitch: usize) {
        bind_2d(r, desc, ptr, pitch)
    }
    fn cuTexRefSetAddress2D_v3(r: Handle, desc: *const ArrayDescriptor, ptr: CUdeviceptr, pitch: usize) {
        bind_2d(r, desc, ptr, pitch)
    }
    fn cuTexRefSetFormat(r: Handle, format: c_uint, channels: c_int) {
        let format = format_of(format)?;
        if !matches!(channels, 1 | 2 | 4) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        update(r, false, |st| {
            (st.format, st.channels) = (format, channels as u32);
            Ok(())
        })
    }
    fn cuTexRefSetAddressMode(r: Handle, dim: c_int, mode: c_uint) {
        let mode = Address::from_cuda(mode).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        update(r, false, |st| {
            *st.address.get_mut(dim as usize).ok_or(CUDA_ERROR_INVALID_VALUE)? = mode;
            Ok(())
        })
    }
    fn cuTexRefSetFilterMode(r: Handle, mode: c_uint) {
        if mode > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        update(r, false, |st| {
            st.linear = mode == 1;
            Ok(())
        })
    }
    fn cuTexRefSetFlags(r: Handle, flags: c_uint) {
        // CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION (0x20) changes nothing here; sRGB and seamless
        // cubemaps are not supported.
        if flags & !(READ_AS_INTEGER | NORMALIZED_COORDINATES | 0x20) != 0 {
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        update(r, false, |st| {
            st.flags = flags;
            Ok(())
        })
    }
    fn cuTexRefSetBorderColor(r: Handle, color: *const f32) {
        if color.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let c = std::slice::from_raw_parts(color, 4);
        update(r, false, |st| {
            st.border.copy_from_slice(c);
            Ok(())
        })
    }
    fn cuTexRefGetAddress_v2(ptr: *mut CUdeviceptr, r: Handle) {
        match read(r, false, |st| st.binding)? {
            Binding::Linear { ptr: p, .. } | Binding::Pitched { ptr: p, .. } => out(ptr, p),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    fn cuTexRefGetArray(array: *mut Handle, r: Handle) {
        match read(r, false, |st| st.binding)? {
            Binding::Array(a) => out(array, a as Handle),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    fn cuTexRefGetAddressMode(mode: *mut c_uint, r: Handle, dim: c_int) {
        let m = read(r, false, |st| st.address.get(dim as usize).copied())?.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        out(mode, m.to_cuda())
    }
    fn cuTexRefGetFilterMode(mode: *mut c_uint, r: Handle) {
        out(mode, read(r, false, |st| st.linear as c_uint)?)
    }
    fn cuTexRefGetFormat(format: *mut c_uint, channels: *mut c_int, r: Handle) {
        let (f, c) = read(r, false, |st| (st.format.to_cuda(), st.channels as c_int))?;
        if format.is_null() && channels.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if !format.is_null() {
            *format = f;
        }
        if !channels.is_null() {
            *channels = c;
        }
        Ok(())
    }
    fn cuTexRefGetFlags(flags: *mut c_uint, r: Handle) {
        out(flags, read(r, false, |st| st.flags)?)
    }
    fn cuTexRefGetBorderColor(color: *mut f32, r: Handle) {
        if color.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let b = read(r, false, |st| st.border)?;
        std::slice::from_raw_parts_mut(color, 4).copy_from_slice(&b);
        Ok(())
    }
    fn cuSurfRefSetArray(r: Handle, array: Handle, flags: c_uint) {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        array_resource(array)?;
        update(r, true, |st| {
            st.binding = Binding::Array(array as usize);
            Ok(())
        })
    }
    fn cuSurfRefGetArray(array: *mut Handle, r: Handle) {
        match read(r, true, |st| st.binding)? {
            Binding::Array(a) => out(array, a as Handle),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
}
