//! Texture sampling and surface access on the CPU, as NVIDIA's texture units compute them.
//!
//! What the GPU does, measured on an H200 (`tests/gpu/probes_c/texture_probe.c`, whose recorded
//! answers this module reproduces bit for bit):
//! - A coordinate becomes fixed point with 8 fractional bits, rounded half up (the CUDA programming
//!   guide's 9-bit interpolation weights); linear filtering takes the texels below and above
//!   `x - 0.5`, with weight `a` (0..=256, in 256ths) on the upper one.
//! - Bilinear weights are not the products of the two axes' weights: the corner weight is
//!   `w11 = round(a·b / 256)` and the others follow from it (`w10 = a - w11`, `w01 = b - w11`,
//!   `w00 = 256 - a - b + w11`), so the four always sum to 256.
//! - 8- and 16-bit integer formats read as normalised floats are filtered in 16-bit fixed point (an
//!   8-bit unorm texel `v` counts as `v · 257`, an snorm16 texel is clamped to ±32767), the sum
//!   rounded half up to an integer, then divided by 65535 (32767) in single precision.
//! - A 1D texture is sampled as a 2D texture of height 1 at y = 0: with linear filtering and border
//!   addressing, half of the result is the border colour.
//! - Normalised coordinates are scaled by the size in single precision, after wrapping (`u - ⌊u⌋`)
//!   or mirroring; wrap and mirror apply to normalised coordinates only (otherwise they clamp, as
//!   the programming guide says).
//! - The channels a format lacks read as 0, alpha too, as floats and as integers.
//! - Integer coordinates index elements exactly, and one outside the texture reads 0 in every
//!   channel, whatever the address mode (a 3D array's z past its depth under clamp).
//!
//! Not measured, so chosen and documented: a layer index past the last layer (or negative) reads
//! the nearest layer, with float and integer coordinates alike; float texels are filtered exactly and rounded once to
//! single precision; 3D filtering splits each bilinear weight between the two slices the same way
//! the bilinear weights are split; snorm8 texels are filtered as floats.

/// `CUarray_format`: how one channel of a texel is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    U8,
    U16,
    U32,
    S8,
    S16,
    S32,
    F16,
    F32,
}

impl Format {
    /// From `CUarray_format`'s value; `None` for formats this module does not sample (block
    /// compressed, YUV).
    pub fn from_cuda(f: u32) -> Option<Format> {
        Some(match f {
            0x01 => Format::U8,
            0x02 => Format::U16,
            0x03 => Format::U32,
            0x08 => Format::S8,
            0x09 => Format::S16,
            0x0a => Format::S32,
            0x10 => Format::F16,
            0x20 => Format::F32,
            _ => return None,
        })
    }

    pub fn to_cuda(self) -> u32 {
        match self {
            Format::U8 => 0x01,
            Format::U16 => 0x02,
            Format::U32 => 0x03,
            Format::S8 => 0x08,
            Format::S16 => 0x09,
            Format::S32 => 0x0a,
            Format::F16 => 0x10,
            Format::F32 => 0x20,
        }
    }

    /// Bytes of one channel.
    pub fn bytes(self) -> u64 {
        match self {
            Format::U8 | Format::S8 => 1,
            Format::U16 | Format::S16 | Format::F16 => 2,
            Format::U32 | Format::S32 | Format::F32 => 4,
        }
    }

    /// Whether texels of this format read as normalised floats unless read as integers.
    fn normalisable(self) -> bool {
        matches!(self, Format::U8 | Format::U16 | Format::S8 | Format::S16)
    }
}

/// Memory a texture or surface reads: an array's elements or a range of linear device memory.
#[derive(Clone, Debug)]
pub struct Resource {
    /// Address of element (0, 0, 0) of layer 0.
    pub base: u64,
    pub format: Format,
    /// 1, 2 or 4.
    pub channels: u32,
    /// Size in elements; 1 along the dimensions the resource does not have.
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    /// Layers of a layered array; 0 when not layered.
    pub layers: u32,
    /// 1, 2 or 3.
    pub dims: u32,
    /// Bytes from one row to the next, and from one 2D slice (depth plane or layer) to the next.
    pub pitch: u64,
    pub slice: u64,
    /// Linear device memory rather than an array (`suq.memory_layout`).
    pub linear: bool,
    /// A cubemap (array): its layers are faces, six per cube.
    pub cube: bool,
}

impl Resource {
    pub fn texel_bytes(&self) -> u64 {
        self.format.bytes() * self.channels as u64
    }
}

/// `CUaddress_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Address {
    Wrap,
    Clamp,
    Mirror,
    Border,
}

impl Address {
    pub fn from_cuda(m: u32) -> Option<Address> {
        Some(match m {
            0 => Address::Wrap,
            1 => Address::Clamp,
            2 => Address::Mirror,
            3 => Address::Border,
            _ => return None,
        })
    }

    pub fn to_cuda(self) -> u32 {
        match self {
            Address::Wrap => 0,
            Address::Clamp => 1,
            Address::Mirror => 2,
            Address::Border => 3,
        }
    }

    /// `txq.addr_mode_N`'s enumeration: wrap, mirror, clamp_ogl, clamp_to_edge, clamp_to_border.
    pub fn ptx_code(self) -> u32 {
        match self {
            Address::Wrap => 0,
            Address::Mirror => 1,
            Address::Clamp => 3,
            Address::Border => 4,
        }
    }
}

/// How a texture is sampled (`CUDA_TEXTURE_DESC`).
#[derive(Clone, Debug)]
pub struct Sampler {
    pub address: [Address; 3],
    pub linear: bool,
    pub normalized: bool,
    /// 8- and 16-bit integer texels read as integers rather than normalised floats.
    pub integer_read: bool,
    pub border: [f32; 4],
    /// Mipmaps: linear filtering between levels (else the nearest level), a bias added to every
    /// LOD, and the range LODs are clamped to.
    pub mip_linear: bool,
    pub lod_bias: f32,
    pub lod_range: [f32; 2],
}

/// What a texture fetch returns: four 32-bit channels, floats or integers as the texture reads.
pub type Texel = [u32; 4];

/// Whether a texture of this format and sampler returns floats.
pub fn returns_float(r: &Resource, s: &Sampler) -> bool {
    matches!(r.format, Format::F16 | Format::F32) || (r.format.normalisable() && !s.integer_read)
}

/// A sample position along one axis in fixed point, 8 fractional bits, rounded half up.
fn fixed(x: f32) -> i64 {
    (x as f64 * 256.0 + 0.5)
        .floor()
        .clamp(-(1i64 << 40) as f64, (1i64 << 40) as f64) as i64
}

/// Applies normalisation and wrapping to a coordinate along an axis of `n` elements. Mirroring only
/// brings it into its period of two lengths here: [`address`] mirrors the element index, so a
/// position on an element boundary in a mirrored length picks the element a GPU picks (the one that
/// position starts, counted backwards), which reflecting the coordinate first would not.
fn unnormalise(u: f32, n: u32, normalized: bool, mode: Address) -> f32 {
    if !normalized {
        return u;
    }
    let u = match mode {
        Address::Wrap => u - u.floor(),
        Address::Mirror => u - 2.0 * (u * 0.5).floor(),
        _ => u,
    };
    u * n as f32
}

/// The element index `i` along an axis of `n` elements stands for, or `None` for the border.
fn address(i: i64, n: u32, mode: Address, normalized: bool) -> Option<u32> {
    let n = n as i64;
    if (0..n).contains(&i) {
        return Some(i as u32);
    }
    Some(match (mode, normalized) {
        (Address::Border, _) => return None,
        (Address::Wrap, true) => i.rem_euclid(n),
        (Address::Mirror, true) => {
            let p = i.rem_euclid(2 * n);
            if p < n {
                p
            } else {
                2 * n - 1 - p
            }
        }
        _ => i.clamp(0, n - 1),
    } as u32)
}

/// One texel's channels as raw integers (sign-extended) or float bits, 0 filling missing ones.
/// # Safety
/// `(x, y, z, layer)` must be inside the resource, whose memory must be readable.
unsafe fn load(r: &Resource, x: u32, y: u32, z: u32, layer: u32) -> [i64; 4] {
    let at = r.base + (layer as u64 + z as u64) * r.slice + y as u64 * r.pitch + x as u64 * r.texel_bytes();
    let mut out = [0i64; 4];
    for (c, o) in out.iter_mut().enumerate().take(r.channels as usize) {
        let p = at + c as u64 * r.format.bytes();
        *o = match r.format {
            Format::U8 => *(p as *const u8) as i64,
            Format::S8 => *(p as *const i8) as i64,
            Format::U16 => (p as *const u16).read_unaligned() as i64,
            Format::S16 => (p as *const i16).read_unaligned() as i64,
            Format::F16 => half::f16::from_bits((p as *const u16).read_unaligned())
                .to_f32()
                .to_bits() as i64,
            Format::U32 | Format::F32 => (p as *const u32).read_unaligned() as i64,
            Format::S32 => (p as *const i32).read_unaligned() as i64,
        };
    }
    out
}

/// Channel `c` of a raw texel as the texture returns it (no filtering).
fn convert(r: &Resource, s: &Sampler, raw: i64, c: usize) -> u32 {
    if c >= r.channels as usize {
        return 0;
    }
    if !returns_float(r, s) || matches!(r.format, Format::F16 | Format::F32) {
        return raw as u32;
    }
    let v = match r.format {
        Format::U8 => raw as f32 / 255.0,
        Format::U16 => raw as f32 / 65535.0,
        Format::S8 => (raw as f32 / 127.0).max(-1.0),
        _ => (raw as f32 / 32767.0).max(-1.0),
    };
    v.to_bits()
}

/// The border colour's channel `c` as the texture returns it.
fn border(r: &Resource, s: &Sampler, c: usize) -> u32 {
    if returns_float(r, s) {
        s.border[c].to_bits()
    } else {
        s.border[c] as i64 as u32
    }
}

/// The coordinates of a fetch: (x, y, z) as floats or integers, and the layer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coords {
    pub xyz: [u32; 3],
    pub float: bool,
    pub layer: u32,
}

impl Coords {
    fn axis(&self, k: usize) -> f32 {
        if self.float {
            f32::from_bits(self.xyz[k])
        } else {
            self.xyz[k] as i32 as f32
        }
    }
}

/// The texels around a sample position along one axis: (lower index, weight of the upper in 256ths,
/// 0..=255).
fn straddle(x: f32) -> (i64, i64) {
    let xb = fixed(x) - 128;
    (xb >> 8, xb & 255)
}

/// `tex`: samples the texture at `c`.
/// # Safety
/// The resource's memory must be readable.
pub unsafe fn sample(r: &Resource, s: &Sampler, c: Coords) -> Texel {
    let layer = if r.layers > 0 { c.layer.min(r.layers - 1) } else { 0 };
    let sizes = [r.width, r.height, r.depth];
    // A 1D texture is a 2D one of height 1 sampled at y = 0.
    let axes = r.dims.max(2) as usize;
    let mut pos = [0f32; 3];
    for (k, p) in pos.iter_mut().enumerate().take(axes) {
        let u = if k < r.dims as usize { c.axis(k) } else { 0.0 };
        *p = unnormalise(u, sizes[k], s.normalized, s.address[k]);
    }
    let linear = s.linear && returns_float(r, s) && c.float;
    // The texels that take part (at most 8), each with its weight in 256ths: on the stack, as this
    // runs once per fetch.
    let mut taps: smallvec::SmallVec<[([i64; 3], i64); 8]> = smallvec::SmallVec::new();
    if !c.float {
        // Integer coordinates (`tex1Dfetch`) index elements directly, exact at any size; outside
        // the texture they read 0.
        let mut at = [0i64; 3];
        for (k, (a, &v)) in at.iter_mut().zip(&c.xyz).take(r.dims as usize).enumerate() {
            *a = v as i32 as i64;
            if !(0..sizes[k] as i64).contains(a) {
                return [0; 4];
            }
        }
        taps.push((at, 256));
    } else if !linear {
        let mut at = [0i64; 3];
        for k in 0..axes {
            at[k] = pos[k].floor() as i64;
        }
        taps.push((at, 256));
    } else {
        let (i, a) = straddle(pos[0]);
        let (j, b) = straddle(pos[1]);
        let w11 = (a * b + 128) >> 8;
        let plane = [
            ([i, j], 256 - a - b + w11),
            ([i + 1, j], a - w11),
            ([i, j + 1], b - w11),
            ([i + 1, j + 1], w11),
        ];
        if axes == 3 {
            let (k, cz) = straddle(pos[2]);
            for ([x, y], w) in plane {
                let upper = (w * cz + 128) >> 8;
                taps.push(([x, y, k], w - upper));
                taps.push(([x, y, k + 1], upper));
            }
        } else {
            taps.extend(plane.iter().map(|&([x, y], w)| ([x, y, 0], w)));
        }
    }
    // Each tap's texel, or None for the border.
    let texels: smallvec::SmallVec<[(Option<[i64; 4]>, i64); 8]> = taps
        .iter()
        .map(|&(at, w)| {
            let mut idx = [0u32; 3];
            for k in 0..axes {
                match address(at[k], sizes[k], s.address[k], s.normalized && c.float) {
                    Some(v) => idx[k] = v,
                    None => return (None, w),
                }
            }
            let z = if r.dims == 3 { idx[2] } else { 0 };
            (Some(load(r, idx[0], idx[1], z, layer)), w)
        })
        .collect();
    let mut out = [0u32; 4];
    for (ch, o) in out.iter_mut().enumerate() {
        if ch >= r.channels as usize {
            continue;
        }
        if !linear {
            *o = match texels[0].0 {
                Some(t) => convert(r, s, t[ch], ch),
                None => border(r, s, ch),
            };
            continue;
        }
        *o = filter(r, s, &texels, ch);
    }
    out
}

/// Linear filtering of channel `ch` over weighted texels (None: the border).
fn filter(r: &Resource, s: &Sampler, texels: &[(Option<[i64; 4]>, i64)], ch: usize) -> u32 {
    // 16-bit fixed point for the normalised integer formats (snorm8 aside), exact otherwise.
    let fixed16 = match r.format {
        Format::U8 => Some((257i64, 65535.0f32, 0i64)),
        Format::U16 => Some((1, 65535.0, 0)),
        Format::S16 => Some((1, 32767.0, -32767)),
        _ => None,
    };
    if let Some((scale, full, lo)) = fixed16 {
        let border16 = (s.border[ch].clamp(if lo < 0 { -1.0 } else { 0.0 }, 1.0) * full).round() as i64;
        let sum: i64 = texels
            .iter()
            .map(|(t, w)| w * t.map_or(border16, |t| (t[ch] * scale).max(lo)))
            .sum();
        let v = (sum + 128) >> 8;
        return (v as f32 / full).max(-1.0).to_bits();
    }
    let sum: f64 = texels
        .iter()
        .map(|(t, w)| {
            let v = match t {
                Some(t) => f32::from_bits(convert(r, s, t[ch], ch)),
                None => s.border[ch],
            };
            *w as f64 * v as f64
        })
        .sum();
    ((sum / 256.0) as f32).to_bits()
}

/// `tld4.comp`: component `comp` of the four texels bilinear filtering at `c` would use, in the
/// order (i, j+1), (i+1, j+1), (i+1, j), (i, j).
/// # Safety
/// The resource's memory must be readable.
pub unsafe fn gather(r: &Resource, s: &Sampler, c: Coords, comp: usize) -> Texel {
    let layer = if r.layers > 0 { c.layer.min(r.layers - 1) } else { 0 };
    let x = unnormalise(c.axis(0), r.width, s.normalized, s.address[0]);
    let y = unnormalise(c.axis(1), r.height, s.normalized, s.address[1]);
    let ((i, _), (j, _)) = (straddle(x), straddle(y));
    let mut out = [0u32; 4];
    for (o, (di, dj)) in out.iter_mut().zip([(0, 1), (1, 1), (1, 0), (0, 0)]) {
        // A 1D texture gathers from its one row (a 2D geometry's y is not used on it).
        let row = match r.dims {
            1 => Some(0),
            _ => address(j + dj, r.height, s.address[1], s.normalized),
        };
        let at = (address(i + di, r.width, s.address[0], s.normalized), row);
        *o = match at {
            (Some(x), Some(y)) => convert(r, s, load(r, x, y, 0, layer)[comp], comp),
            _ => border(r, s, comp),
        };
    }
    out
}

/// The face of a cube a direction points at (its major axis and that axis's sign, in the order the
/// CUDA programming guide's cubemap table gives) and the normalised coordinates on that face.
pub fn cube_face([x, y, z]: [f32; 3]) -> (u32, f32, f32) {
    let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
    let (face, m, s, t) = if ax >= ay && ax >= az {
        if x >= 0.0 {
            (0, ax, -z, -y)
        } else {
            (1, ax, z, -y)
        }
    } else if ay >= az {
        if y >= 0.0 {
            (2, ay, x, z)
        } else {
            (3, ay, x, -z)
        }
    } else if z >= 0.0 {
        (4, az, x, -y)
    } else {
        (5, az, -x, -y)
    };
    (face, (s / m + 1.0) / 2.0, (t / m + 1.0) / 2.0)
}

/// `tex.cube`, `tex.acube` and `tld4` of them (`comp`): the texel(s) cube `cube` of a cubemap (array)
/// shows in direction `dir`, as a layered 2D texture sampled at normalised coordinates on the face.
/// Filtering stays within the face (no seamless filtering across edges).
/// # Safety
/// The resource's memory must be readable.
pub unsafe fn sample_cube(r: &Resource, s: &Sampler, dir: [f32; 3], cube: u32, comp: Option<usize>) -> Texel {
    let (face, u, v) = cube_face(dir);
    // Cubemaps ignore the address modes: a face's edge clamps.
    let s = Sampler {
        normalized: true,
        address: [Address::Clamp; 3],
        ..s.clone()
    };
    let cubes = (r.layers / 6).max(1);
    let c = Coords {
        xyz: [u.to_bits(), v.to_bits(), 0],
        float: true,
        layer: cube.min(cubes - 1) * 6 + face,
    };
    match comp {
        None => sample(r, &s, c),
        Some(k) => gather(r, &s, c, k),
    }
}

/// The LOD gradients ask for (`tex.grad`): log2 of the longer of the two derivative vectors, in
/// texels of level 0 (the usual isotropic rule; the GPU's exact rule is not measured).
pub fn lod_of_gradients(level0: &Resource, s: &Sampler, dx: [f32; 3], dy: [f32; 3]) -> f32 {
    let scale = |k: usize| {
        if s.normalized {
            [level0.width, level0.height, level0.depth][k] as f32
        } else {
            1.0
        }
    };
    let len = |d: [f32; 3]| (0..3).map(|k| (d[k] * scale(k)).powi(2)).sum::<f32>().sqrt();
    len(dx).max(len(dy)).log2()
}

/// `tex.level` (and `tex.grad` through [`lod_of_gradients`]) on a mipmap's `levels`: the sample at
/// LOD `lod`, after the sampler's bias and clamp, from the nearest level or, with linear mipmap
/// filtering, blended between the two around it (the fraction in 256ths, rounded half up, as
/// coordinates are). A texture that is no mipmap has one level.
/// # Safety
/// The levels' memory must be readable.
pub unsafe fn sample_lod(levels: &[Resource], s: &Sampler, c: Coords, lod: f32) -> Texel {
    let top = levels.len().saturating_sub(1) as f32;
    let l = (lod + s.lod_bias)
        .max(s.lod_range[0])
        .min(s.lod_range[1])
        .clamp(0.0, top);
    let l = if l.is_nan() { 0.0 } else { l };
    if !s.mip_linear || !returns_float(&levels[0], s) {
        return sample(&levels[(l + 0.5).floor() as usize], s, c);
    }
    let f = fixed(l);
    let (k, w) = ((f >> 8) as usize, f & 255);
    if w == 0 || k + 1 >= levels.len() {
        return sample(&levels[k.min(levels.len() - 1)], s, c);
    }
    let (a, b) = (sample(&levels[k], s, c), sample(&levels[k + 1], s, c));
    let mut out = a;
    for ch in 0..4 {
        let (x, y) = (f32::from_bits(a[ch]) as f64, f32::from_bits(b[ch]) as f64);
        out[ch] = (((x * (256 - w) as f64 + y * w as f64) / 256.0) as f32).to_bits();
    }
    out
}

/// Out-of-bounds handling of surface accesses (`.trap`, `.clamp`, `.zero`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clamp {
    Trap,
    Clamp,
    Zero,
}

/// A surface access out of bounds under `.trap`.
#[derive(Debug, PartialEq, Eq)]
pub struct OutOfBounds;

/// Where an unformatted surface access of `bytes` at byte offset `x` (and element `y`, `z`, layer)
/// lands: the address; `None` when out of bounds under `.zero`; [`OutOfBounds`] under `.trap`.
pub fn surface_address(
    r: &Resource,
    x: i32,
    y: i32,
    z: i32,
    layer: u32,
    bytes: u64,
    clamp: Clamp,
) -> Result<Option<u64>, OutOfBounds> {
    let row = r.width as i64 * r.texel_bytes() as i64;
    let inside = |v: i64, n: i64| (0..n).contains(&v);
    let (x, y, z) = (x as i64, y as i64, z as i64);
    // A surface that is not layered has layer 0 only.
    let layers = r.layers.max(1);
    let ok =
        x >= 0 && x + bytes as i64 <= row && inside(y, r.height as i64) && inside(z, r.depth as i64) && layer < layers;
    let (x, y, z, layer) = match (ok, clamp) {
        (true, _) => (x, y, z, layer),
        // An access wider than a row has no place to clamp to.
        (false, Clamp::Trap) => return Err(OutOfBounds),
        (false, Clamp::Zero) => return Ok(None),
        (false, Clamp::Clamp) if (bytes as i64) > row => return Ok(None),
        (false, Clamp::Clamp) => (
            x.clamp(0, row - bytes as i64) / bytes as i64 * bytes as i64,
            y.clamp(0, r.height as i64 - 1),
            z.clamp(0, r.depth as i64 - 1),
            layer.min(layers - 1),
        ),
    };
    Ok(Some(
        r.base + (layer as u64 + z as u64) * r.slice + y as u64 * r.pitch + x as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(data: &[u8], format: Format, channels: u32, w: u32, h: u32) -> Resource {
        let texel = format.bytes() * channels as u64;
        Resource {
            base: data.as_ptr() as u64,
            format,
            channels,
            width: w,
            height: h.max(1),
            depth: 1,
            layers: 0,
            dims: if h == 0 { 1 } else { 2 },
            pitch: w as u64 * texel,
            slice: w as u64 * texel * h.max(1) as u64,
            linear: false,
            cube: false,
        }
    }

    fn sampler(mode: Address, linear: bool, normalized: bool) -> Sampler {
        Sampler {
            address: [mode; 3],
            linear,
            normalized,
            integer_read: false,
            border: [100.0; 4],
            mip_linear: false,
            lod_bias: 0.0,
            lod_range: [0.0, 1000.0],
        }
    }

    fn at(x: f32, y: f32) -> Coords {
        Coords {
            xyz: [x.to_bits(), y.to_bits(), 0],
            float: true,
            layer: 0,
        }
    }

    fn f(v: u32) -> f32 {
        f32::from_bits(v)
    }

    #[test]
    fn linear_weights_are_256ths_rounded_half_up() {
        let data: Vec<u8> = [0f32, 1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let r = res(&data, Format::F32, 1, 2, 0);
        let s = sampler(Address::Clamp, true, false);
        // Half a 256th past texel 0's centre rounds up to one 256th; less rounds down.
        assert_eq!(f(unsafe { sample(&r, &s, at(0.5 + 0.5 / 256.0, 0.0)) }[0]), 1.0 / 256.0);
        assert_eq!(f(unsafe { sample(&r, &s, at(0.5 + 0.37 / 256.0, 0.0)) }[0]), 0.0);
        // Missing channels: 0, alpha too.
        assert_eq!(unsafe { sample(&r, &s, at(1.0, 0.0)) }.map(f), [0.5, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn a_1d_border_fetch_is_half_border() {
        let data: Vec<u8> = [0f32, 1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let r = res(&data, Format::F32, 1, 2, 0);
        let s = sampler(Address::Border, true, false);
        assert_eq!(f(unsafe { sample(&r, &s, at(0.5, 0.0)) }[0]), 50.0);
    }

    #[test]
    fn unorm8_filters_in_16_bit_fixed_point() {
        // Texels 11 and 159 at weight 32/256: (11·224 + 159·32)·257/256 = 7581.5, rounded up.
        let r = res(&[11, 159], Format::U8, 1, 2, 0);
        let s = sampler(Address::Clamp, true, false);
        assert_eq!(f(unsafe { sample(&r, &s, at(0.625, 0.0)) }[0]), 7582.0 / 65535.0);
    }

    #[test]
    fn bilinear_corner_weight_is_rounded_once() {
        // The H100's answer for channel 1 of the probe's 2x2 corner (48, 196 / 128, 20) at a = 32,
        // b = 205: weights 45, 6, 179, 26.
        let r = res(&[48, 196, 128, 20], Format::U8, 1, 2, 2);
        let s = sampler(Address::Clamp, true, false);
        let y = (205.0 + 128.0) / 256.0;
        assert_eq!(f(unsafe { sample(&r, &s, at(0.625, y)) }[0]), 26873.0 / 65535.0);
    }

    #[test]
    fn wrap_and_mirror_apply_to_normalised_coordinates() {
        let r = res(&[10, 20, 30, 40], Format::U8, 1, 4, 0);
        let mut s = sampler(Address::Wrap, false, true);
        s.integer_read = true;
        assert_eq!(unsafe { sample(&r, &s, at(1.1, 0.0)) }[0], 10);
        assert_eq!(unsafe { sample(&r, &s, at(-0.1, 0.0)) }[0], 40);
        s.address = [Address::Mirror; 3];
        assert_eq!(unsafe { sample(&r, &s, at(1.1, 0.0)) }[0], 40);
        s.normalized = false;
        assert_eq!(
            unsafe { sample(&r, &s, at(7.0, 0.0)) }[0],
            40,
            "unnormalised wrap clamps"
        );
    }

    #[test]
    fn gather_order_is_counter_clockwise_from_lower_left() {
        let r = res(&[1, 2, 3, 4], Format::U8, 1, 2, 2);
        let mut s = sampler(Address::Clamp, false, false);
        s.integer_read = true;
        assert_eq!(unsafe { gather(&r, &s, at(1.0, 1.0), 0) }, [3, 4, 2, 1]);
    }

    #[test]
    fn mipmap_levels_are_chosen_and_blended() {
        // Three levels of one texel each: 8, 4, 2.
        let data = [8u8, 4, 2];
        let levels: Vec<Resource> = data
            .iter()
            .map(|b| res(std::slice::from_ref(b), Format::U8, 1, 1, 0))
            .collect();
        let mut s = sampler(Address::Clamp, false, true);
        s.integer_read = true;
        let c = at(0.5, 0.0);
        let read = |s: &Sampler, lod: f32| unsafe { sample_lod(&levels, s, c, lod) }[0];
        assert_eq!(read(&s, 0.4), 8);
        assert_eq!(read(&s, 0.5), 4, "the nearest level, halves up");
        assert_eq!(read(&s, 7.0), 2, "clamped to the last level");
        assert_eq!(read(&s, -3.0), 8);
        s.lod_bias = 1.0;
        assert_eq!(read(&s, 0.0), 4);
        // Linear between levels, on normalised floats: a quarter of the way from 8/255 to 4/255.
        let mut f = sampler(Address::Clamp, false, true);
        f.mip_linear = true;
        let got = f32::from_bits(unsafe { sample_lod(&levels, &f, c, 0.25) }[0]);
        assert_eq!(
            got,
            ((8.0f32 / 255.0) as f64 * 0.75 + (4.0f32 / 255.0) as f64 * 0.25) as f32
        );
        // Gradients of one texel of an 8-texel texture in normalised units: LOD 0.
        let r8 = res(&[0; 8], Format::U8, 1, 8, 0);
        assert_eq!(lod_of_gradients(&r8, &f, [1.0 / 8.0, 0.0, 0.0], [0.0; 3]), 0.0);
        assert_eq!(lod_of_gradients(&r8, &f, [0.5, 0.0, 0.0], [0.0; 3]), 2.0);
    }

    #[test]
    fn cube_faces_follow_the_major_axis() {
        assert_eq!(cube_face([2.0, 1.0, -1.0]), (0, 0.75, 0.25));
        assert_eq!(cube_face([-2.0, 1.0, -1.0]), (1, 0.25, 0.25));
        assert_eq!(cube_face([0.5, 1.0, 0.0]), (2, 0.75, 0.5));
        assert_eq!(cube_face([0.0, -1.0, 0.5]), (3, 0.5, 0.25));
        assert_eq!(cube_face([0.0, 0.0, 4.0]), (4, 0.5, 0.5));
        assert_eq!(cube_face([1.0, 0.0, -4.0]), (5, 0.375, 0.5));
        // Ties go to x, then y.
        assert_eq!(cube_face([1.0, 1.0, 1.0]).0, 0);
        assert_eq!(cube_face([0.0, -1.0, 1.0]).0, 3);
    }

    #[test]
    fn surface_bounds_follow_the_clamp_mode() {
        let data = [0u8; 16];
        let r = res(&data, Format::U32, 1, 2, 2);
        let base = data.as_ptr() as u64;
        assert_eq!(surface_address(&r, 4, 1, 0, 0, 4, Clamp::Trap), Ok(Some(base + 12)));
        assert_eq!(surface_address(&r, 8, 0, 0, 0, 4, Clamp::Trap), Err(OutOfBounds));
        assert_eq!(surface_address(&r, 8, 0, 0, 0, 4, Clamp::Zero), Ok(None));
        assert_eq!(surface_address(&r, 9, 5, 0, 0, 4, Clamp::Clamp), Ok(Some(base + 12)));
        // A layer of a surface that has none, and an access wider than a row.
        assert_eq!(surface_address(&r, 0, 0, 0, 1, 4, Clamp::Trap), Err(OutOfBounds));
        assert_eq!(surface_address(&r, 0, 0, 0, 7, 4, Clamp::Clamp), Ok(Some(base)));
        assert_eq!(surface_address(&r, 0, 1, 0, 0, 16, Clamp::Clamp), Ok(None));
    }

    #[test]
    fn integer_coordinates_index_exactly() {
        // Elements 2^24 and 2^24 + 1 of a large linear texture, which a float coordinate cannot tell
        // apart. Only the two bytes read are backed: the base lies 2^24 bytes before them.
        let data = [3u8, 7];
        let n = (1u32 << 24) + 2;
        let r = Resource {
            base: (data.as_ptr() as u64).wrapping_sub(1 << 24),
            format: Format::U8,
            channels: 1,
            width: n,
            height: 1,
            depth: 1,
            layers: 0,
            dims: 1,
            pitch: n as u64,
            slice: n as u64,
            linear: true,
            cube: false,
        };
        let mut s = sampler(Address::Clamp, false, false);
        s.integer_read = true;
        let at = |i: u32| Coords {
            xyz: [i, 0, 0],
            float: false,
            layer: 0,
        };
        assert_eq!(unsafe { sample(&r, &s, at(1 << 24)) }[0], 3);
        assert_eq!(unsafe { sample(&r, &s, at((1 << 24) + 1)) }[0], 7);
        // Outside the texture: 0, not the clamped edge.
        assert_eq!(unsafe { sample(&r, &s, at(n)) }, [0; 4]);
        assert_eq!(unsafe { sample(&r, &s, at(u32::MAX)) }, [0; 4]);
    }
}
