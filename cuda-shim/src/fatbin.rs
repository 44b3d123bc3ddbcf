//! NVIDIA's fat binary container: finds the PTX entries and picks the one for the presented device.
//!
//! Layout (all little-endian), as nvcc 13 writes it:
//! - wrapper (`__fatBinC_Wrapper_t`, in `.nvFatBinSegment`): u32 magic 0x466243b1, u32 version (1, or 2
//!   for a list of prelinked fatbins), u64 pointer to the fatbin, u64 pointer (v1: file name, v2: a
//!   NULL-terminated array of fatbin pointers);
//! - fatbin header (16 bytes): u32 magic 0xba55ed50, u16 version 1, u16 header size, u64 size of the
//!   entries that follow the header;
//! - each entry: u16 kind (1 PTX, 2 ELF cubin), u16 version 0x101, u32 header size, u64 payload size
//!   as stored (padded), u32 compressed size, u32 (unknown), u32 PTX version (major << 16 | minor),
//!   u32 sm, u32 name offset, u32 name length, u64 flags, u64 (unknown), u64 uncompressed size.
//!   Flag 0x2000 marks an LZ4 block (`--compress-mode=speed`), 0x8000 a zstd frame (nvcc's default).

use crate::errors::*;

pub const WRAPPER_MAGIC: u32 = 0x466243b1;
pub const FATBIN_MAGIC: u32 = 0xba55ed50;
pub const KIND_PTX: u16 = 1;
pub const KIND_ELF: u16 = 2;
pub const FLAG_LZ4: u64 = 0x2000;
pub const FLAG_ZSTD: u64 = 0x8000;
/// Bounds on what we accept from a pointer whose extent nobody told us: a corrupt size field must be an
/// error, not a read across the address space.
const MAX_FATBIN: u64 = 1 << 30;
const MAX_PTX: u64 = 256 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: u16,
    pub sm: u32,
    pub flags: u64,
    /// Offset of the stored payload inside the fatbin and its stored length.
    pub offset: usize,
    pub stored: usize,
    pub compressed: u32,
    pub uncompressed: u64,
}

/// Why no PTX came out of a fatbin.
#[derive(Debug, PartialEq, Eq)]
pub enum FatbinError {
    /// Bad magic, version or sizes.
    Malformed(String),
    /// Well-formed, but only machine code (or PTX for a newer device) inside.
    NoPtx { cubins: Vec<u32>, ptx: Vec<u32> },
    /// A compressed entry that does not decompress.
    Decompress(String),
}

impl FatbinError {
    pub fn code(&self) -> CUresult {
        match self {
            FatbinError::Malformed(_) | FatbinError::Decompress(_) => CUDA_ERROR_INVALID_IMAGE,
            FatbinError::NoPtx { .. } => CUDA_ERROR_NO_BINARY_FOR_GPU,
        }
    }
}

impl std::fmt::Display for FatbinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FatbinError::Malformed(m) => write!(f, "malformed fat binary: {m}"),
            FatbinError::Decompress(m) => write!(f, "fat binary entry does not decompress: {m}"),
            FatbinError::NoPtx { cubins, ptx } => {
                write!(f, "no PTX in the fat binary for compute capability ")?;
                write!(f, "{}.{}", crate::device::cc().0, crate::device::cc().1)?;
                write!(
                    f,
                    " (cubins for sm {cubins:?}, PTX for sm {ptx:?}); the CPU backend needs PTX"
                )
            }
        }
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Reads the entry headers of one fatbin (header included in `b`).
pub fn entries(b: &[u8]) -> Result<Vec<Entry>, FatbinError> {
    let bad = |m: &str| FatbinError::Malformed(m.to_string());
    if b.len() < 16 || u32_at(b, 0) != FATBIN_MAGIC {
        return Err(bad("no fatbin header magic 0xba55ed50"));
    }
    if u16_at(b, 4) != 1 {
        return Err(bad(&format!("fatbin version {} (1 expected)", u16_at(b, 4))));
    }
    let hs = u16_at(b, 6) as usize;
    let end = (hs as u64)
        .checked_add(u64_at(b, 8))
        .filter(|&e| e <= b.len() as u64)
        .ok_or_else(|| bad("size beyond the data"))? as usize;
    let mut out = vec![];
    let mut o = hs;
    while o < end {
        if end - o < 64 {
            return Err(bad("truncated entry header"));
        }
        let ehs = u32_at(b, o + 4) as usize;
        let stored = u64_at(b, o + 8);
        if u16_at(b, o + 2) != 0x101 || ehs < 64 || (ehs as u64).saturating_add(stored) > (end - o) as u64 {
            return Err(bad(&format!(
                "entry at byte {o} has version {:#x}, header size {ehs}, payload {stored}",
                u16_at(b, o + 2)
            )));
        }
        out.push(Entry {
            kind: u16_at(b, o),
            sm: u32_at(b, o + 28),
            flags: u64_at(b, o + 40),
            offset: o + ehs,
            stored: stored as usize,
            compressed: u32_at(b, o + 16),
            uncompressed: if ehs >= 64 { u64_at(b, o + 56) } else { 0 },
        });
        o += ehs + stored as usize;
    }
    Ok(out)
}

/// The payload of one entry, decompressed, without the trailing NULs of its padding.
pub fn payload(b: &[u8], e: &Entry) -> Result<Vec<u8>, FatbinError> {
    let stored = &b[e.offset..e.offset + e.stored];
    let mut data = if e.flags & (FLAG_LZ4 | FLAG_ZSTD) != 0 {
        let n = (e.compressed as usize).min(stored.len());
        if e.uncompressed > MAX_PTX {
            return Err(FatbinError::Decompress(format!(
                "claims {} bytes uncompressed",
                e.uncompressed
            )));
        }
        if e.flags & FLAG_LZ4 != 0 {
            lz4_flex::block::decompress(&stored[..n], e.uncompressed as usize)
                .map_err(|err| FatbinError::Decompress(format!("LZ4: {err}")))?
        } else {
            use std::io::Read;
            let mut dec = zstd::stream::read::Decoder::with_buffer(&stored[..n])
                .map_err(|err| FatbinError::Decompress(format!("zstd: {err}")))?;
            let mut v = Vec::with_capacity(e.uncompressed as usize);
            (&mut dec)
                .take(MAX_PTX)
                .read_to_end(&mut v)
                .map_err(|err| FatbinError::Decompress(format!("zstd: {err}")))?;
            v
        }
    } else {
        stored.to_vec()
    };
    while data.last() == Some(&0) {
        data.pop();
    }
    Ok(data)
}

/// The PTX for a device of compute capability `sm` (major*10+minor): the entry with the highest sm not
/// above the device's, as the driver's JIT picks it.
pub fn best_ptx(b: &[u8], sm: u32) -> Result<String, FatbinError> {
    best_ptx_packed(b, sm).map(|p| p.text)
}

/// The PTX a fat binary holds for the device, and its compressed entry (when it is one), copied out.
pub struct Ptx {
    pub text: String,
    pub packed: Option<PackedPtx>,
}

/// A compressed PTX entry copied out of its fat binary: a tenth of the text's size or less, and the
/// text again on demand (`ptx_jit::Retain::Again`).
pub struct PackedPtx {
    stored: Vec<u8>,
    entry: Entry,
}

impl PackedPtx {
    pub fn text(&self) -> Result<String, FatbinError> {
        ptx_text(&self.stored, &self.entry)
    }
}

fn ptx_text(b: &[u8], e: &Entry) -> Result<String, FatbinError> {
    String::from_utf8(payload(b, e)?).map_err(|_| FatbinError::Decompress("PTX entry is not UTF-8 text".into()))
}

/// [`best_ptx`], with the entry it came from when that is compressed.
pub fn best_ptx_packed(b: &[u8], sm: u32) -> Result<Ptx, FatbinError> {
    let all = entries(b)?;
    let best = all
        .iter()
        .filter(|e| e.kind == KIND_PTX && e.sm <= sm)
        .max_by_key(|e| e.sm);
    let Some(e) = best else {
        return Err(FatbinError::NoPtx {
            cubins: all.iter().filter(|e| e.kind == KIND_ELF).map(|e| e.sm).collect(),
            ptx: all.iter().filter(|e| e.kind == KIND_PTX).map(|e| e.sm).collect(),
        });
    };
    let packed = (e.flags & (FLAG_LZ4 | FLAG_ZSTD) != 0).then(|| PackedPtx {
        stored: b[e.offset..e.offset + e.stored].to_vec(),
        entry: Entry { offset: 0, ..e.clone() },
    });
    Ok(Ptx {
        text: ptx_text(b, e)?,
        packed,
    })
}

/// The fatbins behind a pointer to a fatbin header or to a wrapper (version 1: one fatbin; version 2: a
/// NULL-terminated list of prelinked fatbins), as slices bounded by their own size fields.
pub unsafe fn from_pointer<'a>(p: *const u8) -> Result<Vec<&'a [u8]>, FatbinError> {
    let bad = |m: &str| FatbinError::Malformed(m.to_string());
    if p.is_null() {
        return Err(bad("null image"));
    }
    let magic = (p as *const u32).read_unaligned();
    if magic == FATBIN_MAGIC {
        return Ok(vec![header_slice(p)?]);
    }
    if magic != WRAPPER_MAGIC {
        return Err(bad("neither a fatbin (0xba55ed50) nor a fatbin wrapper (0x466243b1)"));
    }
    let version = (p.add(4) as *const u32).read_unaligned();
    let data = (p.add(8) as *const *const u8).read_unaligned();
    match version {
        1 => Ok(vec![header_slice(data)?]),
        2 => {
            let mut list = (p.add(16) as *const *const *const u8).read_unaligned();
            let mut out = vec![];
            while !list.is_null() && !(*list).is_null() && out.len() < 4096 {
                out.push(header_slice(*list)?);
                list = list.add(1);
            }
            // No prelinked units: the wrapper's own fatbin is the program's.
            if out.is_empty() {
                out.push(header_slice(data)?);
            }
            Ok(out)
        }
        v => Err(bad(&format!("wrapper version {v} (1 or 2 expected)"))),
    }
}

unsafe fn header_slice<'a>(p: *const u8) -> Result<&'a [u8], FatbinError> {
    if p.is_null() || (p as *const u32).read_unaligned() != FATBIN_MAGIC {
        return Err(FatbinError::Malformed("no fatbin header magic 0xba55ed50".into()));
    }
    let hs = (p.add(6) as *const u16).read_unaligned() as u64;
    let size = (p.add(8) as *const u64).read_unaligned();
    let total = hs
        .checked_add(size)
        .filter(|&t| t <= MAX_FATBIN && hs >= 16)
        .ok_or_else(|| FatbinError::Malformed(format!("header size {hs}, entries {size} bytes")))?;
    Ok(std::slice::from_raw_parts(p, total as usize))
}

/// The PTX for the presented device out of whatever `p` points at: one text for a fatbin or a version 1
/// wrapper, one per unit for a version 2 wrapper's prelinked fatbins (a program built with relocatable
/// device code, `nvcc -rdc`: its units call each other, so each must bring PTX and the caller links
/// them, as NVIDIA's linker linked their machine code into the wrapper's own fatbin).
/// A unit without PTX for the device is left out while another has some: if the others call into it,
/// the link names what is missing.
pub unsafe fn ptx_for_device(p: *const u8) -> Result<Vec<Ptx>, FatbinError> {
    let sm = crate::device::sm();
    let mut units = vec![];
    let mut last = None;
    for fb in from_pointer(p)? {
        match best_ptx_packed(fb, sm) {
            Ok(ptx) => units.push(ptx),
            Err(e) => last = Some(e),
        }
    }
    match (units.is_empty(), last) {
        (true, Some(e)) => Err(e),
        _ => Ok(units),
    }
}

/// A fatbin with the given entries, laid out as the header above says: (kind, sm, flags, stored
/// payload, uncompressed size). The reader's inverse, for its tests and the fuzz harness's seeds.
pub fn image(entries: &[(u16, u32, u64, &[u8], u64)]) -> Vec<u8> {
    let mut body = vec![];
    for &(kind, sm, flags, data, unc) in entries {
        let padded = data.len().div_ceil(8) * 8;
        body.extend(kind.to_le_bytes());
        body.extend(0x101u16.to_le_bytes());
        body.extend(64u32.to_le_bytes());
        body.extend((padded as u64).to_le_bytes());
        let comp = if flags & (FLAG_LZ4 | FLAG_ZSTD) != 0 {
            data.len() as u32
        } else {
            0
        };
        body.extend(comp.to_le_bytes());
        body.extend(0u32.to_le_bytes());
        body.extend(((8u32 << 16) | 5).to_le_bytes());
        body.extend(sm.to_le_bytes());
        body.extend([0u8; 8]);
        body.extend(flags.to_le_bytes());
        body.extend(0u64.to_le_bytes());
        body.extend(unc.to_le_bytes());
        body.extend(data);
        body.resize(body.len() + padded - data.len(), 0);
    }
    let mut out = FATBIN_MAGIC.to_le_bytes().to_vec();
    out.extend(1u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend((body.len() as u64).to_le_bytes());
    out.extend(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_highest_ptx_not_above_the_device() {
        let fb = image(&[
            (KIND_PTX, 75, 0x11, b"// sm_75\0", 0),
            (KIND_ELF, 80, 0x11, b"\x7fELF....", 0),
            (KIND_PTX, 80, 0x11, b"// sm_80\0", 0),
            (KIND_PTX, 90, 0x11, b"// sm_90\0", 0),
        ]);
        assert_eq!(best_ptx(&fb, 80).unwrap(), "// sm_80");
        assert_eq!(best_ptx(&fb, 86).unwrap(), "// sm_80");
        assert_eq!(best_ptx(&fb, 75).unwrap(), "// sm_75");
        assert_eq!(
            best_ptx(&fb, 70),
            Err(FatbinError::NoPtx {
                cubins: vec![80],
                ptx: vec![75, 80, 90]
            })
        );
    }

    #[test]
    fn decompresses_lz4_entries() {
        let text = b"// some PTX, some PTX, some PTX, some PTX\n";
        let packed = lz4_flex::block::compress(text);
        let fb = image(&[(KIND_PTX, 75, 0x11 | FLAG_LZ4, &packed, text.len() as u64)]);
        assert_eq!(best_ptx(&fb, 80).unwrap().as_bytes(), text);
        let mut broken = packed.clone();
        broken.truncate(packed.len() / 2);
        let fb = image(&[(KIND_PTX, 75, 0x11 | FLAG_LZ4, &broken, text.len() as u64)]);
        assert!(matches!(best_ptx(&fb, 80), Err(FatbinError::Decompress(_))));
    }

    #[test]
    fn decompresses_zstd_entries() {
        let text = b"// PTX text, PTX text, PTX text, PTX text, PTX text\n";
        let packed = zstd::bulk::compress(&text[..], 1).unwrap();
        let fb = image(&[(KIND_PTX, 80, 0x11 | FLAG_ZSTD, &packed, text.len() as u64)]);
        assert_eq!(best_ptx(&fb, 80).unwrap().as_bytes(), text);
        let fb = image(&[(
            KIND_PTX,
            80,
            0x11 | FLAG_ZSTD,
            &packed[..packed.len() - 3],
            text.len() as u64,
        )]);
        assert!(matches!(best_ptx(&fb, 80), Err(FatbinError::Decompress(_))));
    }

    #[test]
    fn rejects_bad_headers_and_sizes() {
        let mut fb = image(&[(KIND_PTX, 75, 0x11, b"// x\0", 0)]);
        assert!(matches!(entries(&fb[..20]), Err(FatbinError::Malformed(_))));
        fb[8] = 0xff; // entries size beyond the data
        assert!(matches!(entries(&fb), Err(FatbinError::Malformed(_))));
        let mut fb = image(&[(KIND_PTX, 75, 0x11, b"// x\0", 0)]);
        fb[16 + 8] = 0xff; // entry payload beyond the fatbin
        assert!(matches!(entries(&fb), Err(FatbinError::Malformed(_))));
        assert!(matches!(
            entries(b"not a fatbin at all"),
            Err(FatbinError::Malformed(_))
        ));
    }
}
