//! The two macros every entry point is written with.

/// Defines exported entry points. Each body returns `Result<(), CUresult>`; panics become
/// `CUDA_ERROR_UNKNOWN`. The list of (symbol, address) pairs goes to `exports()` (or the function
/// named by a leading `exports = NAME;`), which `cuGetProcAddress` reads.
///
/// `fn name[name_ptsz](...)` also exports the per-thread-default-stream twin: the same body, run
/// with `stream::per_thread_scope`, so the NULL stream means the calling thread's default stream.
///
/// Around every body: the passthrough backend forwards the call to the real driver, and tracing
/// logs the arguments and the result.
macro_rules! api {
    (exports = $exports:ident; $(fn $name:ident $([$twin:ident])? ($($args:tt)*) $body:block)*) => {
        $( api_one! { $name [$($twin)?] ($($args)*) $body } )*
        pub(crate) fn $exports() -> Vec<(&'static str, usize)> {
            vec![$((stringify!($name), $name as *const () as usize), $((stringify!($twin), $twin as *const () as usize),)?)*]
        }
    };
    ($($rest:tt)*) => { api! { exports = exports; $($rest)* } };
}

/// One function of `api!`, with its per-thread twin if it has one.
macro_rules! api_one {
    ($name:ident [] $args:tt $body:block) => {
        api_fn!($name, false, $args, $body);
    };
    ($name:ident [$twin:ident] $args:tt $body:block) => {
        api_fn!($name, false, $args, $body);
        api_fn!($twin, true, $args, $body);
    };
}

/// One exported entry point of `api!`.
macro_rules! api_fn {
    ($name:ident, $per_thread:expr, ($($a:ident: $t:ty),* $(,)?), $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $crate::errors::CUresult {
            let show = |ok: bool| -> Vec<(&'static str, String)> {
                #[allow(unused_imports)]
                use $crate::trace::{Plain as _, Pointee as _};
                let _ = ok;
                vec![$((stringify!($a), (&$crate::trace::Show(&$a)).render(ok))),*]
            };
            $crate::macros::enter(stringify!($name), $per_thread, &show, || -> Result<(), $crate::errors::CUresult> {
                if let Some(real) = $crate::passthrough::target(stringify!($name)) {
                    let f: unsafe extern "C" fn($($t),*) -> $crate::errors::CUresult = std::mem::transmute(real);
                    return $crate::status(f($($a),*));
                }
                $body
            })
        }
    };
}

/// Runs one entry point's body: catches panics, applies the per-thread default stream of `_ptsz`/
/// `_ptds` twins, and traces.
pub fn enter(
    name: &'static str,
    per_thread: bool,
    args: &dyn Fn(bool) -> Vec<(&'static str, String)>,
    body: impl FnOnce() -> Result<(), crate::errors::CUresult>,
) -> crate::errors::CUresult {
    let run = || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::stream::per_thread_scope(per_thread, body)
        }));
        match r {
            Ok(Ok(())) => crate::errors::CUDA_SUCCESS,
            Ok(Err(e)) => e,
            Err(_) => crate::errors::CUDA_ERROR_UNKNOWN,
        }
    };
    if !crate::trace::enabled() {
        return run();
    }
    let r = run();
    crate::trace::call(name, &args(r == crate::errors::CUDA_SUCCESS), r);
    r
}

/// One entry point per API name the shim does not implement: it returns `CUDA_ERROR_NOT_SUPPORTED`
/// whatever its arguments (the C calling convention lets the caller clean up what it passed), and
/// `unsupported::all()` lists them for `cuGetProcAddress`.
macro_rules! not_supported {
    ($($name:ident,)*) => {
        pub mod unsupported {
            $(
                #[allow(non_snake_case)]
                pub unsafe extern "C" fn $name() -> $crate::errors::CUresult {
                    if $crate::trace::enabled() {
                        $crate::trace::call(stringify!($name), &[], $crate::errors::CUDA_ERROR_NOT_SUPPORTED);
                    }
                    $crate::errors::CUDA_ERROR_NOT_SUPPORTED
                }
            )*
            pub fn all() -> Vec<(&'static str, usize)> {
                vec![$((stringify!($name), $name as *const () as usize)),*]
            }
        }
    };
}

/// Typed entry points that forward to the real driver's symbol of the same name and trace the call:
/// what the passthrough backend hands out through `cuGetProcAddress` for functions the shim does
/// not export, when tracing is on.
macro_rules! forwarders {
    ($($(#[$attr:meta])* $sym:ident($($a:ident: $t:ty),* $(,)?),)*) => {
        pub mod forward {
            #[allow(unused_imports)]
            use std::ffi::c_void;
            $(
                #[allow(non_snake_case)]
                $(#[$attr])*
                pub unsafe extern "C" fn $sym($($a: $t),*) -> $crate::errors::CUresult {
                    static REAL: once_cell::sync::OnceCell<Option<usize>> = once_cell::sync::OnceCell::new();
                    let r = match *REAL.get_or_init(|| $crate::passthrough::real_symbol(stringify!($sym))) {
                        Some(p) => {
                            let f: unsafe extern "C" fn($($t),*) -> $crate::errors::CUresult = std::mem::transmute(p);
                            f($($a),*)
                        }
                        None => $crate::errors::CUDA_ERROR_NOT_SUPPORTED,
                    };
                    if $crate::trace::enabled() {
                        $crate::trace::call(stringify!($sym), &[$((stringify!($a), $crate::trace::Arg::show(&$a))),*], r);
                    }
                    r
                }
            )*
            pub fn all() -> Vec<(&'static str, usize)> {
                vec![$((stringify!($sym), $sym as *const () as usize)),*]
            }
        }
    };
}

/// The API's symbols the shim does not implement and that have no typed forwarder (a by-value float
/// or struct parameter), exported under their own names: they return `CUDA_ERROR_NOT_SUPPORTED`.
/// The others are their forwarders, exported (`#[no_mangle]` in the `forwarders!` list). NVIDIA's
/// driver exports every symbol, and libraries resolve driver functions with `dlsym` (cuBLASLt looks up
/// 80, graph and stream-memory functions among them, and refuses to start if one is missing).
macro_rules! exported_stubs {
    ($($u:ident,)*) => {
        pub mod exported {
            $(
                #[allow(non_snake_case)]
                #[no_mangle]
                pub unsafe extern "C" fn $u() -> $crate::errors::CUresult {
                    if $crate::trace::enabled() {
                        $crate::trace::call(stringify!($u), &[], $crate::errors::CUDA_ERROR_NOT_SUPPORTED);
                    }
                    $crate::errors::CUDA_ERROR_NOT_SUPPORTED
                }
            )*
        }
    };
}
