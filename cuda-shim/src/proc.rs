//! `cuGetProcAddress`: (name, requested CUDA version, flags) → entry point. The variants are those of
//! the `PFN_<name>_v<version>[_ptds|_ptsz]` typedefs in cudaTypedefs.h (`driver_table.rs`, generated
//! by scripts/gen_driver_table.py): each serves requests from its version on. A name the shim does
//! not implement resolves to an entry point that returns `CUDA_ERROR_NOT_SUPPORTED`.

use crate::driver_table::{Flavour, DECLARED, VARIANTS};
use crate::errors::*;
use once_cell::sync::Lazy;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, c_void, CStr};

/// Every exported entry point, by symbol.
static SYMBOLS: Lazy<HashMap<&'static str, usize>> = Lazy::new(|| {
    [
        crate::exports(),
        crate::context::context_exports(),
        crate::device::device_exports(),
        crate::event::event_exports(),
        crate::graph::graph_exports(),
        crate::graph::memory::graph_memory_exports(),
        crate::graph::capture_exports(),
        crate::graph::conditional_exports(),
        crate::pool::pool_exports(),
        crate::vmm::vmm_exports(),
        crate::texture::texture_exports(),
        crate::texref::texref_exports(),
        crate::ipc::ipc_exports(),
        crate::launch::launch_exports(),
        crate::memory::memory_exports(),
        crate::memop::memop_exports(),
        crate::user_object::user_object_exports(),
        crate::stream::stream_exports(),
        crate::tensor_map::tensor_map_exports(),
        crate::library::exports(),
        crate::link::exports(),
        crate::module::exports(),
    ]
    .concat()
    .into_iter()
    .collect()
});

static UNSUPPORTED: Lazy<HashMap<&'static str, usize>> =
    Lazy::new(|| crate::driver_table::unsupported::all().into_iter().collect());

/// `CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND` and `_VERSION_NOT_SUFFICIENT`.
const NOT_FOUND: c_int = 1;
const VERSION_NOT_SUFFICIENT: c_int = 2;

/// The symbol of the variant of `name` that serves `version`: the newest not after it, the
/// per-thread-default-stream one when `per_thread` asks for it and one exists.
pub fn resolve_for(name: &str, version: c_int, per_thread: bool) -> Result<&'static str, c_int> {
    let mut variants = VARIANTS.iter().filter(|v| v.0 == name).peekable();
    if variants.peek().is_none() {
        return Err(NOT_FOUND);
    }
    let newest = |want: &dyn Fn(Flavour) -> bool| {
        VARIANTS
            .iter()
            .filter(|v| v.0 == name && v.1 <= version && want(v.2))
            .max_by_key(|v| v.1)
            .map(|v| v.3)
    };
    let pt = if per_thread {
        newest(&|f| f != Flavour::Plain)
    } else {
        None
    };
    pt.or_else(|| newest(&|f| f == Flavour::Plain))
        .ok_or(VERSION_NOT_SUFFICIENT)
}

/// `resolve_for` with the legacy default stream.
pub fn resolve(name: &str, version: c_int) -> Result<&'static str, c_int> {
    resolve_for(name, version, false)
}

pub unsafe fn get_proc_address(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> Result<(), CUresult> {
    // CU_GET_PROC_ADDRESS_DEFAULT (the legacy stream for the driver API), _LEGACY_STREAM, _PER_THREAD_DEFAULT_STREAM.
    if symbol.is_null() || pfn.is_null() || flags > 2 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    *pfn = std::ptr::null_mut();
    let set = |s: c_int| {
        if !status.is_null() {
            *status = s;
        }
    };
    let name = CStr::from_ptr(symbol).to_str().map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
    let resolved = resolve_for(name, version, flags == 2);
    let found = match resolved {
        Ok(sym) => Ok(SYMBOLS.get(sym).or_else(|| UNSUPPORTED.get(name)).copied()),
        // Entry points without a PFN typedef (cuGetExportTable, say) go by their own name.
        Err(NOT_FOUND) => SYMBOLS.get(name).copied().map(Some).ok_or(NOT_FOUND),
        Err(e) => Err(e),
    };
    let found = match found {
        Ok(Some(addr)) => Ok((addr, SYMBOLS.values().any(|&a| a == addr))),
        Ok(None) => Err(NOT_FOUND),
        Err(e) => Err(e),
    };
    match found {
        Ok((addr, ours)) => {
            // The passthrough backend serves what the shim does not export from the real driver.
            let addr = if !ours {
                crate::passthrough::proc_address(name, resolved.ok(), version, flags).unwrap_or(addr)
            } else {
                addr
            };
            *pfn = addr as *mut c_void;
            set(0);
            Ok(())
        }
        Err(s) => {
            set(s);
            if crate::log_enabled() {
                eprintln!("ptx-jit: cuGetProcAddress({name}, {version}): not found");
            }
            Err(CUDA_ERROR_NOT_FOUND)
        }
    }
}

/// Every API function: declared in cuda.h or with a PFN typedef, less the versioned symbols
/// (`cuCtxCreate_v4`) cuda.h also declares.
pub fn api_names() -> Vec<&'static str> {
    let symbols: std::collections::HashSet<&str> = VARIANTS.iter().filter(|v| v.3 != v.0).map(|v| v.3).collect();
    let mut names: Vec<&str> = DECLARED.iter().copied().filter(|d| !symbols.contains(d)).collect();
    names.extend(VARIANTS.iter().map(|v| v.0));
    names.sort_unstable();
    names.dedup();
    names
}

/// docs/driver-api.md: every driver API function and which of its variants the shim implements.
pub fn implementation_table() -> String {
    let mut by_name: BTreeMap<&str, Vec<(&str, c_int, Flavour)>> = BTreeMap::new();
    for v in VARIANTS {
        by_name.entry(v.0).or_default().push((v.3, v.1, v.2));
    }
    let names = api_names();
    let mut rows = vec![];
    let (mut full, mut part) = (0, 0);
    for n in &names {
        let vs = by_name.get(n).cloned().unwrap_or_else(|| vec![(*n, 0, Flavour::Plain)]);
        let have = vs.iter().filter(|v| SYMBOLS.contains_key(v.0)).count();
        let newest = vs
            .iter()
            .filter(|v| v.2 == Flavour::Plain)
            .max_by_key(|v| v.1)
            .map(|v| v.0)
            .unwrap_or(n);
        let status = if have == vs.len() {
            full += 1;
            "implemented"
        } else if SYMBOLS.contains_key(newest) {
            part += 1;
            "implemented (current ABI)"
        } else {
            "not supported"
        };
        let list: Vec<String> = vs
            .iter()
            .map(|v| {
                let mark = if SYMBOLS.contains_key(v.0) { "" } else { " ✗" };
                if v.1 > 0 {
                    format!("`{}` ({}){mark}", v.0, v.1)
                } else {
                    format!("`{}`{mark}", v.0)
                }
            })
            .collect();
        rows.push(format!("| `{n}` | {status} | {} |", list.join(", ")));
    }
    format!(
        "# Driver API coverage\n\n\
         Generated by `cargo test -p cuda-shim --test driver_api_doc` (set `UPDATE_DOCS=1` to rewrite it) from\n\
         cuda.h, cudaTypedefs.h (through `scripts/gen_driver_table.py`) and the entry points libcuda.so.1 exports.\n\n\
         {} functions: {} implemented in every variant, {} in their current ABI (older ABIs, such as the 32-bit\n\
         sizes of CUDA 2.x, are not), {} not supported. A function that is not supported still resolves through\n\
         `cuGetProcAddress`, to an entry point that returns `CUDA_ERROR_NOT_SUPPORTED`. Each variant is listed with\n\
         the CUDA version it appeared in; ✗ marks a variant that is not implemented.\n\n\
         | Function | Status | Variants |\n|---|---|---|\n{}\n",
        names.len(),
        full,
        part,
        names.len() - full - part,
        rows.join("\n")
    )
}

/// `cuGetErrorString` text: the code's name in words, NUL-terminated and kept for the process's life.
pub fn error_string(e: CUresult) -> Option<&'static str> {
    static STRINGS: Lazy<HashMap<CUresult, String>> = Lazy::new(|| {
        NAMES
            .iter()
            .map(|(c, n)| {
                let words = n
                    .trim_end_matches('\0')
                    .trim_start_matches("CUDA_ERROR_")
                    .trim_start_matches("CUDA_")
                    .to_lowercase()
                    .replace('_', " ");
                (*c, format!("{words}\0"))
            })
            .collect()
    });
    STRINGS.get(&e).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every symbol of the API is exported exactly once: by the shim's entry points or as a stub (an
    /// exported forwarder or `exported_stubs!`; scripts/gen_driver_table.py regenerates them when an
    /// entry point is added).
    #[test]
    fn every_api_symbol_is_exported_once() {
        let stubs: std::collections::HashSet<&str> = crate::driver_table::STUBS.iter().copied().collect();
        for sym in VARIANTS.iter().map(|v| v.3).chain(DECLARED.iter().copied()) {
            assert!(SYMBOLS.contains_key(sym) != stubs.contains(sym), "{sym}");
        }
    }

    #[test]
    fn picks_the_newest_variant_not_after_the_request() {
        assert_eq!(resolve("cuCtxCreate", 3020), Ok("cuCtxCreate_v2"));
        assert_eq!(resolve("cuCtxCreate", 12000), Ok("cuCtxCreate_v3"));
        assert_eq!(resolve("cuCtxCreate", 13050), Ok("cuCtxCreate_v4"));
        assert_eq!(resolve("cuMemAlloc", 2000), Ok("cuMemAlloc"));
        assert_eq!(resolve("cuMemAlloc", 1000), Err(2));
        assert_eq!(resolve("cuNoSuchThing", 13000), Err(1));
    }

    #[test]
    fn per_thread_variants_are_chosen_by_flag() {
        assert_eq!(resolve_for("cuLaunchKernel", 13000, true), Ok("cuLaunchKernel_ptsz"));
        assert_eq!(resolve_for("cuLaunchKernel", 13000, false), Ok("cuLaunchKernel"));
        assert_eq!(resolve_for("cuMemcpyHtoD", 13000, true), Ok("cuMemcpyHtoD_v2_ptds"));
        assert_eq!(resolve_for("cuMemcpyHtoD", 6000, true), Ok("cuMemcpyHtoD_v2"));
        // No per-thread flavour: the plain one.
        assert_eq!(resolve_for("cuMemAlloc", 13000, true), Ok("cuMemAlloc_v2"));
    }

    #[test]
    fn every_name_resolves() {
        for n in api_names() {
            if let Ok(sym) = resolve(n, 13050) {
                assert!(SYMBOLS.contains_key(sym) || UNSUPPORTED.contains_key(n), "{n}");
            }
        }
    }

    #[test]
    fn error_strings() {
        assert_eq!(error_string(CUDA_ERROR_INVALID_VALUE), Some("invalid value\0"));
        assert_eq!(error_string(CUDA_SUCCESS), Some("success\0"));
    }
}
