//! Kernel arguments written on a command line or in a test directive:
//! - a scalar: `u32:7`, `f32:2.5`, `s64:-3`;
//! - a buffer, passed as a device pointer: `f32[1,2,3]`, `u32*1024` (zeros), `f32*1024=1.5`, `u32*64=iota`.

use ptx_front::types::{Kind, Type};
use ptx_llvm::KernelInfo;

/// Element types are PTX types (one source of truth); the CLI also accepts Rust-style `i32`.
pub type Elem = Type;

/// `u8`…`u64`, `s8`…`s64` (or `i8`…`i64`), `f32`, `f64`.
pub fn parse_elem(s: &str) -> Option<Elem> {
    let s = s.strip_prefix('i').map_or(s.to_string(), |bits| format!("s{bits}"));
    Type::from_dot(&format!(".{s}"))
        .filter(|t| matches!(t.kind(), Kind::Unsigned | Kind::Signed) || matches!(t, Type::F32 | Type::F64))
}

/// Encoding and printing of buffer elements.
pub trait ElemExt: Sized {
    fn size(self) -> usize;
    fn encode(self, v: &str) -> Result<Vec<u8>, String>;
    fn format(self, b: &[u8]) -> String;
}

impl ElemExt for Elem {
    fn size(self) -> usize {
        self.bytes() as usize
    }
    /// Little-endian bytes of a value written in text.
    fn encode(self, v: &str) -> Result<Vec<u8>, String> {
        let bad = || format!("`{v}` is not a valid {self:?} value");
        let int = |v: &str| -> Result<i128, String> {
            if let Some(h) = v.strip_prefix("0x") {
                i128::from_str_radix(h, 16).map_err(|_| bad())
            } else {
                v.parse::<i128>().map_err(|_| bad())
            }
        };
        let bytes = match self {
            Type::F32 => v.parse::<f32>().map_err(|_| bad())?.to_le_bytes().to_vec(),
            Type::F64 => v.parse::<f64>().map_err(|_| bad())?.to_le_bytes().to_vec(),
            _ => {
                let i = int(v)?;
                let bits = self.bits();
                let signed = self.is_signed();
                let (lo, hi) = if signed {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                if i < lo || i > hi {
                    return Err(format!("`{v}` does not fit in {self:?}"));
                }
                (i as u128).to_le_bytes()[..self.size()].to_vec()
            }
        };
        Ok(bytes)
    }
    fn format(self, b: &[u8]) -> String {
        let mut a = [0u8; 8];
        a[..b.len()].copy_from_slice(b);
        let u = u64::from_le_bytes(a);
        match self {
            Type::F32 => format!("{:?}", f32::from_bits(u as u32)),
            Type::F64 => format!("{:?}", f64::from_bits(u)),
            t if t.is_signed() => (((u << (64 - t.bits())) as i64) >> (64 - t.bits())).to_string(),
            _ => u.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Scalar(Elem, Vec<u8>),
    Buffer(Elem, Vec<u8>),
}

impl Arg {
    pub fn parse(s: &str) -> Result<Arg, String> {
        let s = s.trim();
        if let Some((t, v)) = s.split_once(':') {
            let e = parse_elem(t).ok_or_else(|| format!("unknown element type `{t}`"))?;
            return Ok(Arg::Scalar(e, e.encode(v)?));
        }
        if let Some((t, rest)) = s.split_once('[') {
            let e = parse_elem(t).ok_or_else(|| format!("unknown element type `{t}`"))?;
            let body = rest.strip_suffix(']').ok_or_else(|| format!("`{s}`: missing `]`"))?;
            let mut bytes = vec![];
            for v in body.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                bytes.extend(e.encode(v)?);
            }
            return Ok(Arg::Buffer(e, bytes));
        }
        if let Some((t, rest)) = s.split_once('*') {
            let e = parse_elem(t).ok_or_else(|| format!("unknown element type `{t}`"))?;
            let (n, fill) = rest.split_once('=').map_or((rest, None), |(n, f)| (n, Some(f)));
            let n: usize = n.parse().map_err(|_| format!("`{n}` is not an element count"))?;
            if n > (1 << 31) {
                return Err(format!("{n} elements is too many"));
            }
            let mut bytes = Vec::with_capacity(n * e.size());
            match fill {
                None => bytes.resize(n * e.size(), 0),
                Some("iota") => {
                    for i in 0..n {
                        bytes.extend(e.encode(&i.to_string())?);
                    }
                }
                Some(v) => {
                    let one = e.encode(v)?;
                    for _ in 0..n {
                        bytes.extend_from_slice(&one);
                    }
                }
            }
            return Ok(Arg::Buffer(e, bytes));
        }
        Err(format!(
            "`{s}` is not an argument (expected e.g. `u32:7`, `f32[1,2]` or `f32*1024=1.5`)"
        ))
    }
}

/// A buffer aligned as `cuMemAlloc` aligns device memory (256 bytes), so that a kernel's accesses
/// fall on 32-byte sectors and shared-memory banks as they do on a GPU.
pub struct DeviceBuffer {
    chunks: Vec<Chunk>,
    len: usize,
}

#[repr(C, align(256))]
#[derive(Clone, Copy)]
struct Chunk([u8; 256]);

impl DeviceBuffer {
    pub fn from_bytes(b: &[u8]) -> DeviceBuffer {
        let mut d = DeviceBuffer {
            chunks: vec![Chunk([0; 256]); b.len().div_ceil(256)],
            len: b.len(),
        };
        d.copy_from_slice(b);
        d
    }
}

impl std::ops::Deref for DeviceBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the chunks hold at least `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.chunks.as_ptr() as *const u8, self.len) }
    }
}

impl std::ops::DerefMut for DeviceBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.chunks.as_mut_ptr() as *mut u8, self.len) }
    }
}

impl AsMut<[u8]> for DeviceBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

/// Lays out the argument buffer. Buffers are passed by the address of their storage in `bufs`,
/// which must stay alive and unmoved during the launch.
pub fn param_buffer(k: &KernelInfo, args: &[Arg], bufs: &mut [impl AsMut<[u8]>]) -> Result<Vec<u8>, String> {
    if args.len() != k.params.len() {
        return Err(format!(
            "`{}` takes {} arguments, {} given",
            k.name,
            k.params.len(),
            args.len()
        ));
    }
    let mut out = vec![0u8; k.param_bytes as usize];
    for (i, (a, p)) in args.iter().zip(&k.params).enumerate() {
        let bytes = match a {
            Arg::Scalar(_, b) => b.clone(),
            Arg::Buffer(..) => (bufs[i].as_mut().as_mut_ptr() as u64).to_le_bytes()[..p.size.min(8) as usize].to_vec(),
        };
        if bytes.len() as u64 != p.size {
            return Err(format!(
                "argument {} (`{}`) is {} bytes but the parameter takes {}",
                i + 1,
                p.name,
                bytes.len(),
                p.size
            ));
        }
        out[p.offset as usize..(p.offset + p.size) as usize].copy_from_slice(&bytes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_buffers_are_aligned_as_cu_mem_alloc_aligns() {
        for n in [0, 1, 255, 256, 4097] {
            let bytes: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let b = DeviceBuffer::from_bytes(&bytes);
            assert_eq!((b.as_ptr() as usize % 256, &b[..]), (0, &bytes[..]));
        }
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(Arg::parse("u32:7").unwrap(), Arg::Scalar(Type::U32, vec![7, 0, 0, 0]));
        assert_eq!(Arg::parse("s8:-1").unwrap(), Arg::Scalar(Type::S8, vec![0xff]));
        assert_eq!(
            Arg::parse("f32[1,2]").unwrap(),
            Arg::Buffer(Type::F32, [1f32.to_le_bytes(), 2f32.to_le_bytes()].concat())
        );
        assert_eq!(
            Arg::parse("u16*3=iota").unwrap(),
            Arg::Buffer(Type::U16, vec![0, 0, 1, 0, 2, 0])
        );
        assert_eq!(Arg::parse("u8*2=9").unwrap(), Arg::Buffer(Type::U8, vec![9, 9]));
        assert!(Arg::parse("u8:256").unwrap_err().contains("does not fit"));
        assert!(Arg::parse("q32:1").is_err());
        assert!(Arg::parse("b32:1").is_err());
        assert_eq!(Arg::parse("i16:-2").unwrap(), Arg::Scalar(Type::S16, vec![0xfe, 0xff]));
        assert_eq!(Type::S16.format(&[0xfe, 0xff]), "-2");
        assert_eq!(Type::U16.format(&[0xfe, 0xff]), "65534");
    }
}
