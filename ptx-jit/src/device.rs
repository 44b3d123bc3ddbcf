//! The device the CPU backend presents: its memory, its multiprocessors and its launch limits. One
//! source for the driver shim's attributes, the launch checks and the loader's memory bound.

/// `%nsmid`: the CPU backend presents one SM per core.
pub fn sm_count() -> u32 {
    rayon::current_num_threads() as u32
}

/// Memory of the device the CPU backend presents: half of physical memory, as device allocations and
/// module variables live in host RAM beside the application's own. Allocations beyond it fail
/// cleanly instead of bringing the OOM killer.
pub fn device_memory() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let (page, pages) = unsafe { (libc::sysconf(libc::_SC_PAGESIZE), libc::sysconf(libc::_SC_PHYS_PAGES)) };
        if page <= 0 || pages <= 0 {
            8 << 30
        } else {
            page as u64 * pages as u64 / 2
        }
    })
}

/// Launch limits of the device the CPU backend presents (the same on every architecture since 3.0).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
pub const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
pub const MAX_GRID_DIM: [u32; 3] = [i32::MAX as u32, 65535, 65535];
pub const MAX_SHARED_PER_BLOCK: u64 = 48 * 1024;

/// A device to present (`PTXJIT_DEVICE`): its compute capability and its architecture's per-SM and
/// per-block limits (NVIDIA's CUDA Programming Guide, "Technical Specifications per Compute
/// Capability"), and for a named card the card's own numbers (NVIDIA's data sheets; the H100's were
/// read from one, `tests/gpu/probes_c/device_attributes.h100.txt`). Where a card's number is unknown,
/// or the engine's own is what a client must see, the engine's stands: without a card, one SM per
/// host core; memory never beyond [`device_memory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// What `PTXJIT_DEVICE` names it by.
    pub key: &'static str,
    /// The card's own name, for a named card.
    pub card: Option<&'static str>,
    pub cc: (u32, u32),
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub shared_per_sm: u64,
    pub shared_per_block_optin: u64,
    pub card_sms: Option<u32>,
    pub card_memory: Option<u64>,
    pub l2_bytes: u32,
    pub clock_khz: u32,
    pub memory_clock_khz: u32,
    pub bus_bits: u32,
}

impl Profile {
    /// An architecture's limits, without a card.
    const fn arch(
        key: &'static str,
        cc: (u32, u32),
        threads: u32,
        blocks: u32,
        shared_kib: u64,
        optin_kib: u64,
    ) -> Profile {
        Profile {
            key,
            card: None,
            cc,
            max_threads_per_sm: threads,
            max_blocks_per_sm: blocks,
            shared_per_sm: shared_kib * 1024,
            shared_per_block_optin: optin_kib * 1024,
            card_sms: None,
            card_memory: None,
            l2_bytes: 4 << 20,
            clock_khz: 1_000_000,
            memory_clock_khz: 1_000_000,
            bus_bits: 64,
        }
    }

    /// A card of architecture `arch`: name, SMs, memory in bytes, L2 bytes, boost and memory clocks
    /// in MHz, memory bus bits.
    #[allow(clippy::too_many_arguments)]
    const fn card(
        key: &'static str,
        arch: Profile,
        name: &'static str,
        sms: u32,
        memory: u64,
        l2: u32,
        clock_mhz: u32,
        memory_mhz: u32,
        bus_bits: u32,
    ) -> Profile {
        Profile {
            key,
            card: Some(name),
            card_sms: Some(sms),
            card_memory: Some(memory),
            l2_bytes: l2,
            clock_khz: clock_mhz * 1000,
            memory_clock_khz: memory_mhz * 1000,
            bus_bits,
            ..arch
        }
    }

    /// `cuDeviceGetName`: the backend, and the card or architecture it presents.
    pub fn device_name(&self) -> String {
        match (self.card, self.key) {
            (Some(card), _) => format!("ptx-jit CPU device presenting {card}"),
            (None, "default") => "ptx-jit CPU device".to_string(),
            (None, "future") => "ptx-jit CPU device presenting a future architecture".to_string(),
            (None, key) => format!("ptx-jit CPU device presenting {key}"),
        }
    }

    /// Multiprocessors: the card's, or one per host core (as `%nsmid` says).
    pub fn sms(&self) -> u32 {
        self.card_sms.unwrap_or_else(sm_count)
    }

    /// Total memory: the card's, never more than the host can give ([`device_memory`]).
    pub fn memory(&self) -> u64 {
        self.card_memory.map_or(device_memory(), |m| m.min(device_memory()))
    }
}

const GIB: u64 = 1 << 30;
const MIB: u32 = 1 << 20;
const SM_75: Profile = Profile::arch("sm_75", (7, 5), 1024, 16, 64, 64);
const SM_80: Profile = Profile::arch("sm_80", (8, 0), 2048, 32, 164, 163);
const SM_86: Profile = Profile::arch("sm_86", (8, 6), 1536, 16, 100, 99);
const SM_89: Profile = Profile::arch("sm_89", (8, 9), 1536, 24, 100, 99);
const SM_90: Profile = Profile::arch("sm_90", (9, 0), 2048, 32, 228, 227);
const SM_100: Profile = Profile::arch("sm_100", (10, 0), 2048, 32, 228, 227);
const SM_120: Profile = Profile::arch("sm_120", (12, 0), 1536, 32, 100, 99);
const SM_121: Profile = Profile::arch("sm_121", (12, 1), 1536, 32, 100, 99);
/// An architecture newer than any NVIDIA's current libraries were built for (compute capability 13.0,
/// with sm_121's limits). A library meets such a device as it would a future GPU: with no machine code
/// for it, it takes the kernels it ships as PTX so that it keeps working there (cuBLASLt's
/// `*_forwardCompat_*` GEMMs), and those are what a CPU backend can run. With sm_120 or sm_121, cuBLASLt
/// chooses GEMM kernels it ships as machine code only.
const FUTURE: Profile = Profile::arch("future", (13, 0), 1536, 32, 100, 99);

/// Every device `PTXJIT_DEVICE` may name. The first is the default: compute capability 8.0 with the
/// largest shared memory the engine allows (what the backend presented before profiles existed).
pub const PROFILES: [Profile; 17] = [
    Profile::arch("default", (8, 0), 2048, 32, 228, 227),
    SM_75,
    SM_80,
    SM_86,
    SM_89,
    SM_90,
    SM_100,
    SM_120,
    SM_121,
    FUTURE,
    Profile::card("t4", SM_75, "Tesla T4", 40, 16 * GIB, 4 * MIB, 1590, 5001, 256),
    Profile::card(
        "a100",
        SM_80,
        "NVIDIA A100-SXM4-80GB",
        108,
        80 * GIB,
        40 * MIB,
        1410,
        1593,
        5120,
    ),
    Profile::card("l4", SM_89, "NVIDIA L4", 58, 24 * GIB, 48 * MIB, 2040, 6251, 192),
    Profile::card(
        "h100",
        SM_90,
        "NVIDIA H100 80GB HBM3",
        132,
        85_017_493_504,
        50 * MIB,
        1980,
        2619,
        5120,
    ),
    Profile::card(
        "b200",
        SM_100,
        "NVIDIA B200",
        148,
        180 * GIB,
        126 * MIB,
        1965,
        3996,
        8192,
    ),
    Profile::card(
        "rtx4090",
        SM_89,
        "NVIDIA GeForce RTX 4090",
        128,
        24 * GIB,
        72 * MIB,
        2520,
        10501,
        384,
    ),
    Profile::card(
        "rtx5090",
        SM_120,
        "NVIDIA GeForce RTX 5090",
        170,
        32 * GIB,
        96 * MIB,
        2407,
        14001,
        512,
    ),
];

/// The presented device: `PTXJIT_DEVICE`'s (case-insensitive), else the default; an unknown name is an
/// error the driver reports at `cuInit`.
pub fn profile_named() -> Result<&'static Profile, String> {
    static CHOSEN: std::sync::OnceLock<Result<&'static Profile, String>> = std::sync::OnceLock::new();
    CHOSEN
        .get_or_init(|| match std::env::var("PTXJIT_DEVICE") {
            Err(_) => Ok(&PROFILES[0]),
            Ok(v) if v.is_empty() => Ok(&PROFILES[0]),
            Ok(v) => PROFILES
                .iter()
                .find(|p| p.key.eq_ignore_ascii_case(v.trim()))
                .ok_or_else(|| {
                    let keys: Vec<&str> = PROFILES.iter().map(|p| p.key).collect();
                    format!("PTXJIT_DEVICE={v} names no device; known: {}", keys.join(", "))
                }),
        })
        .clone()
}

/// The presented device (the default where `PTXJIT_DEVICE` names none: the driver refuses `cuInit`
/// then, see [`profile_named`]).
pub fn profile() -> &'static Profile {
    profile_named().unwrap_or(&PROFILES[0])
}

/// The most devices `PTXJIT_DEVICE_COUNT` may ask for.
pub const MAX_DEVICES: u32 = 16;

/// How many identical devices to present: `PTXJIT_DEVICE_COUNT` (1 to [`MAX_DEVICES`]), else 1. Other
/// values are an error the driver reports at `cuInit`.
pub fn device_count() -> Result<u32, String> {
    static COUNT: std::sync::OnceLock<Result<u32, String>> = std::sync::OnceLock::new();
    COUNT
        .get_or_init(|| match std::env::var("PTXJIT_DEVICE_COUNT") {
            Err(_) => Ok(1),
            Ok(v) if v.trim().is_empty() => Ok(1),
            Ok(v) => v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_DEVICES).contains(n))
                .ok_or_else(|| format!("PTXJIT_DEVICE_COUNT={v} is not a count of devices from 1 to {MAX_DEVICES}")),
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_consistent() {
        // The default is what the backend presented before profiles: 8.0 with 227 KiB per block.
        assert_eq!(
            (PROFILES[0].key, PROFILES[0].cc, PROFILES[0].shared_per_block_optin),
            ("default", (8, 0), 227 << 10)
        );
        for (i, p) in PROFILES.iter().enumerate() {
            assert!(PROFILES[..i].iter().all(|q| q.key != p.key), "{} twice", p.key);
            assert_eq!(p.key, p.key.to_ascii_lowercase());
            // A block's opt-in shared memory fits in an SM (from 8.0 on, beside the 1 KiB the
            // driver reserves per block).
            let reserved = if p.cc.0 >= 8 { 1024 } else { 0 };
            assert!(p.shared_per_block_optin + reserved <= p.shared_per_sm, "{}", p.key);
            assert!(p.shared_per_block_optin >= MAX_SHARED_PER_BLOCK, "{}", p.key);
            assert!(p.max_threads_per_sm >= MAX_THREADS_PER_BLOCK, "{}", p.key);
            assert!(p.memory() <= device_memory());
            let arch = format!("sm_{}{}", p.cc.0, p.cc.1);
            assert!(
                ["default", "future"].contains(&p.key) || p.card.is_some() || p.key == arch,
                "{}",
                p.key
            );
        }
        assert!(PROFILES.iter().all(|p| p.key == "future" || p.cc < FUTURE.cc));
        let h100 = PROFILES.iter().find(|p| p.key == "h100").expect("h100");
        assert_eq!(
            h100.device_name(),
            "ptx-jit CPU device presenting NVIDIA H100 80GB HBM3"
        );
        assert_eq!((h100.cc, h100.sms()), ((9, 0), 132));
    }
}
