//! The global memory checked mode accepts: ranges registered here (module variables, the CLI's
//! buffers), unless a host (the driver shim, which keeps its own table of allocations and module
//! variables) installs its own lookup. Both the loader and the runtime's checks use it.

use parking_lot::RwLock;
use std::collections::BTreeMap;

/// Registered global memory: start → end (exclusive).
static REGIONS: RwLock<BTreeMap<u64, u64>> = RwLock::new(BTreeMap::new());

/// Marks `[start, start + len)` as valid global memory for checked kernels.
pub fn register(start: u64, len: u64) {
    if len > 0 {
        REGIONS.write().insert(start, start + len);
    }
}

pub fn unregister(start: u64) {
    REGIONS.write().remove(&start);
}

/// The registered region holding `addr`: (start, end).
fn region_of(addr: u64) -> Option<(u64, u64)> {
    REGIONS
        .read()
        .range(..=addr)
        .next_back()
        .map(|(&s, &e)| (s, e))
        .filter(|&(_, e)| addr < e)
}

/// Which global memory is valid: the registered regions, unless a host (the driver shim, which keeps
/// its own table of allocations and module variables) installs its own lookup of the valid range
/// (start, end) holding an address.
static GLOBAL_MEMORY: RwLock<RangeLookup> = RwLock::new(region_of);

/// The valid range (start, end) holding an address, if any.
pub type RangeLookup = fn(u64) -> Option<(u64, u64)>;

pub fn set_global_memory(lookup: RangeLookup) {
    *GLOBAL_MEMORY.write() = lookup;
}

/// The valid range (start, end) holding `addr`, if any: the host's, or a registered one (the device
/// heap registers its blocks here under the driver shim too).
pub fn lookup(addr: u64) -> Option<(u64, u64)> {
    (GLOBAL_MEMORY.read())(addr).or_else(|| region_of(addr))
}
