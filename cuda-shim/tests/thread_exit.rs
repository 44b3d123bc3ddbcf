//! The static CUDA runtime calls the driver from its own thread-exit handler (a pthread key's
//! destructor), after the thread's Rust storage, the driver's context stack included, is gone. The
//! calls must answer, not panic: such a thread has no current context.

use cuda::errors::*;
use cuda::*;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

static RESULT: AtomicI32 = AtomicI32::new(-1);
static CONTEXT: AtomicUsize = AtomicUsize::new(usize::MAX);

unsafe extern "C" fn at_thread_exit(_: *mut std::ffi::c_void) {
    let mut ctx: Handle = std::ptr::null_mut();
    RESULT.store(unsafe { cuCtxGetCurrent(&mut ctx) }, Ordering::SeqCst);
    CONTEXT.store(ctx as usize, Ordering::SeqCst);
}

#[test]
fn a_thread_exit_handler_finds_no_current_context() {
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let mut primary: Handle = std::ptr::null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut primary, 0), CUDA_SUCCESS);
        let primary = primary as usize;
        std::thread::spawn(move || {
            let mut key = 0;
            assert_eq!(libc::pthread_key_create(&mut key, Some(at_thread_exit)), 0);
            // A non-null value makes the destructor run when the thread ends.
            assert_eq!(
                libc::pthread_setspecific(key, std::ptr::dangling::<std::ffi::c_void>()),
                0
            );
            assert_eq!(cuCtxSetCurrent(primary as Handle), CUDA_SUCCESS);
        })
        .join()
        .expect("the thread ends");
        assert_eq!(RESULT.load(Ordering::SeqCst), CUDA_SUCCESS);
        assert_eq!(CONTEXT.load(Ordering::SeqCst), 0);
    }
}
