//! A lazily loaded module that keeps no text (`Retain::Again`) makes it again when a kernel is
//! prepared or compiled and the text is not among those kept for reuse (the loaded one is, until
//! `forget_recent_texts`), and only then; a text that comes back different is an error, never a wrong
//! kernel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const PTX: &str = ".version 7.0\n.target sm_75\n.address_size 64\n\
    .visible .entry twice(.param .u64 p)\n{\n .reg .u32 %r<3>;\n .reg .u64 %rd<4>;\n\
    ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n shl.b32 %r2, %r1, 1;\n\
    mul.wide.u32 %rd2, %r1, 4;\n add.u64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r2;\n ret;\n}\n";

/// The tests let go of the process's kept texts; one at a time, so that neither does it inside the
/// other's count.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn load(again: impl Fn() -> String + Send + Sync + 'static) -> ptx_jit::HostModule {
    let retain = ptx_jit::Retain::Again(Box::new(move || Ok(again())));
    ptx_jit::load_retained(PTX, ptx_jit::jit::host::options(), ptx_jit::Loading::Lazy, retain).expect("loads")
}

#[test]
fn the_text_is_made_again_only_for_a_kernel() {
    let _serial = SERIAL.lock();
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let module = load(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        PTX.to_string()
    });
    assert_eq!(
        made.load(Ordering::Relaxed),
        0,
        "the load itself reads the text it was given"
    );
    let k = module.kernel("twice").expect("prepares");
    assert_eq!(made.load(Ordering::Relaxed), 0, "the loaded text is kept a while");
    ptx_jit::jit::host::forget_recent_texts();
    let mut out = vec![0u32; 8];
    let params = (out.as_mut_ptr() as u64).to_le_bytes();
    ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [8, 1, 1], 0, &params)).expect("launch");
    assert_eq!(out, [0, 2, 4, 6, 8, 10, 12, 14]);
    // Compiling the launched tier (and finding its key in the disk cache) made the text once.
    assert_eq!(made.load(Ordering::Relaxed), 1);
}

#[test]
fn a_text_that_changed_is_an_error() {
    let _serial = SERIAL.lock();
    let module = load(|| PTX.replace("shl.b32", "shl.b32 "));
    let k = module.find("twice").expect("indexed");
    ptx_jit::jit::host::forget_recent_texts();
    let diags = module.prepare(k).err().expect("refused");
    assert!(
        diags[0].message.contains("changed since it was loaded"),
        "{}",
        diags[0].message
    );
}
