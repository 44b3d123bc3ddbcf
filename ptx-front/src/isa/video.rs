//! Part selectors and lane masks of the video instructions (9.7.18): which operand may carry one and
//! what each means. The checker refuses what ptxas refuses (ptxas 13: "Incorrect video selector",
//! "Video selector is not allowed on 'source C' operand"); the host lowering reads the same values.

/// How an instruction takes part selectors on its register operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Video {
    /// `vadd` … `vset`: one byte (`.b0`–`.b3`) or half (`.h0`, `.h1`) of a, b, or of d when merging.
    Scalar,
    /// `vadd2` … `vset4`: lanes of `bits` bits (16 or 8); d takes a lane mask, a and b a selector per
    /// lane from the eight bytes (four halves) of b:a.
    Simd { lanes: u32, bits: u32 },
}

/// The SIMD operations, in the order of [`simd_op`]'s index.
pub const SIMD_OPS: [&str; 7] = ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset"];

/// How `opcode` takes part selectors; None for an instruction that takes none.
pub fn video_kind(opcode: &str) -> Option<Video> {
    if matches!(
        opcode,
        "vadd" | "vsub" | "vabsdiff" | "vmin" | "vmax" | "vshl" | "vshr" | "vmad" | "vset"
    ) {
        return Some(Video::Scalar);
    }
    simd_op(opcode).map(|(_, lanes)| Video::Simd {
        lanes,
        bits: 32 / lanes,
    })
}

/// A SIMD video opcode's operation (an index into [`SIMD_OPS`]) and lane count: `vabsdiff4` is (3, 4).
pub fn simd_op(opcode: &str) -> Option<(usize, u32)> {
    let (base, lanes) = match opcode.strip_suffix('2') {
        Some(b) => (b, 2),
        None => (opcode.strip_suffix('4')?, 4),
    };
    SIMD_OPS.iter().position(|&o| o == base).map(|k| (k, lanes))
}

/// A scalar video selector: 1–4 for `.b0`–`.b3`, 5 and 6 for `.h0` and `.h1`.
pub fn scalar_selector(text: &str) -> Option<u32> {
    [".b0", ".b1", ".b2", ".b3", ".h0", ".h1"]
        .iter()
        .position(|&s| s == text)
        .map(|k| k as u32 + 1)
}

/// The digits after a SIMD selector's `.h` (16-bit lanes) or `.b` (8-bit lanes), highest lane first.
fn digits(text: &str, bits: u32) -> Option<&str> {
    let rest = text.strip_prefix(if bits == 16 { ".h" } else { ".b" })?;
    (!rest.is_empty() && rest.bytes().all(|c| c.is_ascii_digit())).then_some(rest)
}

/// A SIMD destination mask (`.h10`, `.b310`): bit i set when lane i takes the result. The lanes are
/// written highest first, each at most once (ptxas refuses `.h01` and `.b00`).
pub fn simd_mask(text: &str, lanes: u32) -> Option<u32> {
    let ds = digits(text, 32 / lanes)?.as_bytes();
    let mut mask = 0;
    for (k, &c) in ds.iter().enumerate() {
        let lane = u32::from(c - b'0');
        if lane >= lanes || ds.get(k + 1).is_some_and(|&n| n >= c) {
            return None;
        }
        mask |= 1 << lane;
    }
    Some(mask)
}

/// A SIMD source selector (`.h32`, `.b7654`): for each lane, lowest first, which part of the 64-bit b:a
/// (a in the low word) it reads. One digit per lane, each below twice the lane count.
pub fn simd_select(text: &str, lanes: u32) -> Option<[u32; 4]> {
    let ds = digits(text, 32 / lanes)?.as_bytes();
    if ds.len() != lanes as usize {
        return None;
    }
    let mut sel = [0; 4];
    for (lane, &c) in ds.iter().rev().enumerate() {
        let part = u32::from(c - b'0');
        if part >= 2 * lanes {
            return None;
        }
        sel[lane] = part;
    }
    Some(sel)
}

/// The selectors of a SIMD operand left without one: a's own lanes for a (`.h10`, `.b3210`), b's for
/// b (`.h32`, `.b7654`).
pub fn simd_default_select(lanes: u32, b: bool) -> [u32; 4] {
    let base = if b { lanes } else { 0 };
    [base, base + 1, base + 2, base + 3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_name_distinct_lanes_highest_first() {
        assert_eq!(simd_mask(".h10", 2), Some(0b11));
        assert_eq!(simd_mask(".h1", 2), Some(0b10));
        assert_eq!(simd_mask(".b310", 4), Some(0b1011));
        assert_eq!(simd_mask(".b3210", 4), Some(0b1111));
        for bad in [".h01", ".h2", ".b00", ".b13", ".h", ".b4", ".hx"] {
            assert_eq!(simd_mask(bad, if bad.starts_with(".h") { 2 } else { 4 }), None, "{bad}");
        }
        assert_eq!(simd_mask(".h10", 4), None);
    }

    #[test]
    fn selectors_give_one_part_per_lane_lowest_lane_last_written() {
        assert_eq!(simd_select(".h32", 2), Some([2, 3, 0, 0]));
        assert_eq!(simd_select(".h00", 2), Some([0, 0, 0, 0]));
        assert_eq!(simd_select(".b7654", 4), Some([4, 5, 6, 7]));
        assert_eq!(simd_select(".b0123", 4), Some([3, 2, 1, 0]));
        for (bad, lanes) in [
            (".h4", 2),
            (".h04", 2),
            (".h321", 2),
            (".b8777", 4),
            (".b777", 4),
            (".b10", 2),
        ] {
            assert_eq!(simd_select(bad, lanes), None, "{bad}");
        }
        assert_eq!(simd_default_select(2, true)[..2], [2, 3]);
        assert_eq!(simd_default_select(4, false), [0, 1, 2, 3]);
    }

    #[test]
    fn opcodes() {
        assert_eq!(simd_op("vabsdiff4"), Some((3, 4)));
        assert_eq!(simd_op("vset2"), Some((6, 2)));
        assert_eq!(simd_op("vshl2"), None);
        assert_eq!(video_kind("vmad"), Some(Video::Scalar));
        assert_eq!(video_kind("vmin2"), Some(Video::Simd { lanes: 2, bits: 16 }));
        assert_eq!(video_kind("add"), None);
        assert_eq!(scalar_selector(".h1"), Some(6));
        assert_eq!(scalar_selector(".h10"), None);
    }
}
