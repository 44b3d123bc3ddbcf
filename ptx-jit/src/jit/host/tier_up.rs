//! The optimised tier of a kernel launched again, compiled in the background while its launches go
//! on running the quick tier: a cold process's second cuBLAS GEMM no longer waits 0.3 s for its O3
//! compile.
//!
//! The compile runs in a child process, forked while no thread of this one is inside LLVM (under
//! `CODEGEN`), which sends the object file back through a pipe; this process only links it. A thread
//! of this process cannot do that compile safely: LLVM is linked in statically, and the objects it
//! makes on first use (the x86 memory-unfold table, for one) are destroyed at exit by handlers that
//! run before `quiesce_llvm_at_exit` when they were made after it was registered. A compile still
//! running at exit then read freed memory: the driver's API tests crashed at exit five times in
//! five with the disk cache off. A child works on its own copy of everything and dies with the
//! thread that forked it (`PR_SET_PDEATHSIG`). Nothing of the child's compile stays in this
//! process's heap either.
//!
//! One thread takes the kernels in the order asked, only in a process whose exit handler stops it
//! ([`super::warm_up`]: the driver's); elsewhere (the command line) the launch compiles as before.

use super::{tier_name, Source, TierTimes, Tiers, CODEGEN, JIT};
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{mpsc, Arc, Weak};
use std::time::{Duration, Instant};

/// The thread's queue, with the process that started it (a forked child has no such thread).
static QUEUE: parking_lot::Mutex<Option<(u32, mpsc::Sender<Weak<Tiers>>)>> = parking_lot::Mutex::new(None);

/// Held while the thread links a tier into this process's JIT; `true` once the process is exiting
/// ([`stop`]), after which it links nothing more.
static EXITING: parking_lot::Mutex<bool> = parking_lot::Mutex::new(false);

/// Asks for `tiers`' optimised tier in the background. False where there is no background compiler
/// (the caller compiles the tier itself).
pub(super) fn ask(tiers: &Arc<Tiers>) -> bool {
    let pid = std::process::id();
    if super::WARMED_IN.load(std::sync::atomic::Ordering::Relaxed) != pid {
        return false;
    }
    let mut queue = QUEUE.lock();
    if queue.as_ref().is_none_or(|(p, _)| *p != pid) {
        let (send, receive) = mpsc::channel::<Weak<Tiers>>();
        let started = std::thread::Builder::new()
            .name("ptx-jit-tier-up".into())
            .spawn(move || receive.into_iter().for_each(|t| tier_up(&t)));
        if started.is_err() {
            return false;
        }
        *queue = Some((pid, send));
    }
    queue
        .as_ref()
        .is_some_and(|(_, send)| send.send(Arc::downgrade(tiers)).is_ok())
}

/// Waits for the link in progress and keeps the thread from linking another: LLVM is about to be
/// torn down.
pub(super) fn stop() {
    *EXITING.lock() = true;
}

/// Compiles and links one kernel's optimised tier, unless its module is gone or the tier is there.
fn tier_up(weak: &Weak<Tiers>) {
    let Some(t) = weak.upgrade() else { return };
    // None: the tier is there; Some(None): the disk cache has it, to link only.
    let compiled = t.full.get().is_none().then(|| {
        (!t.source.optimised_cached(&t.symbol, &t.parts, t.regions))
            .then(|| t.source.compile_apart(&t.symbol, &t.parts, t.regions))
    });
    let exiting = EXITING.lock();
    if *exiting {
        // Its module's code is not unloaded while LLVM is torn down.
        std::mem::forget(t);
        return;
    }
    let log = |e: &str| {
        if std::env::var_os("PTX_JIT_LOG").is_some_and(|v| v != "0") {
            eprintln!("ptx-jit: background compile of `{}`: {e}", t.symbol);
        }
    };
    match compiled {
        None => {}
        Some(None) => {
            let _ = t.full();
        }
        Some(Some(Ok(Ok(apart)))) => {
            let _ = t.full.get_or_init(|| t.source.adopt(&t.symbol, apart));
        }
        // The compile failed, or LLVM crashed on this kernel: it would do the same in this process,
        // so the kernel keeps its quick tier.
        Some(Some(Ok(Err(e)))) => {
            log(&e);
            let _ = t.full.get_or_init(|| Err(e));
        }
        // No child could start: the next launch compiles the tier itself.
        Some(Some(Err(e))) => {
            log(&e);
            t.background_failed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    // The last holder unloads the module's code: before the exit handler may go on.
    drop(t);
    drop(exiting);
}

/// What a child process compiled: the lane-vectorised regions, the object file and the phases'
/// times.
pub(super) struct Apart {
    lanes: u32,
    object: Vec<u8>,
    times: TierTimes,
}

impl Source {
    /// Kernel `symbol`'s optimised tier (lane-vectorised where `regions` allow), compiled by a child
    /// process, and stored in the disk cache; or what the compile reported, or how the child ended
    /// without a reply. The outer error: no child could start.
    #[allow(clippy::type_complexity)]
    fn compile_apart(
        &self,
        symbol: &str,
        parts: &[super::Span],
        regions: bool,
    ) -> Result<Result<Apart, String>, String> {
        let text = self.text.get()?;
        let (name, lanes) = tier_name(symbol, false, regions && self.options.lanes);
        let mut fds = [0; 2];
        // SAFETY: `pipe2` fills both descriptors, which are owned from here on.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(format!("pipe: {}", std::io::Error::last_os_error()));
        }
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let parent = std::process::id() as libc::pid_t;
        let pid = {
            // No thread of this process is inside LLVM while it is copied.
            let _codegen = CODEGEN.lock();
            // SAFETY: the child runs only this compile and ends with `_exit`, running no exit
            // handler of this process.
            unsafe { libc::fork() }
        };
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            drop(read);
            // SAFETY: plain system calls; the child ends here whatever the compile does.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                let sent = self.send_compiled(&text, symbol, &name, parts, lanes, write);
                libc::_exit(if sent { 0 } else { 1 })
            }
        }
        drop(write);
        let mut reply = vec![];
        let read_error = std::fs::File::from(read).read_to_end(&mut reply).err();
        let mut status = 0;
        // SAFETY: the child is this thread's; a program that reaped it first makes this fail, which
        // changes nothing.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
        if let Some(e) = read_error {
            return Err(format!("reading the compile: {e}"));
        }
        let Some(apart) = decode(&reply) else {
            return Ok(Err(match std::str::from_utf8(reply.get(1..).unwrap_or_default()) {
                Ok(m) if reply.first() == Some(&0) => m.to_string(),
                _ => format!("the compiling process ended with status {status:#x}"),
            }));
        };
        if let Some((c, k)) = self.tier_key(&text, &name, parts, lanes) {
            c.store(&k, &[&apart.lanes.to_le_bytes()[..], &apart.object].concat());
        }
        Ok(Ok(apart))
    }

    /// The child's side: compiles the tier and writes the reply to `to` (see [`decode`]).
    fn send_compiled(
        &self,
        text: &str,
        symbol: &str,
        name: &str,
        parts: &[super::Span],
        lanes: bool,
        to: OwnedFd,
    ) -> bool {
        let compiled = self.on_compile_stack(|| {
            let mut times = TierTimes::default();
            let t = Instant::now();
            let (m, _) = ptx_front::parse_parts(text, parts);
            times.parse = t.elapsed();
            let _codegen = CODEGEN.lock();
            let (lanes, object) = self.object(&m, symbol, name, lanes, false, &mut times)?;
            Ok((lanes, object, times))
        });
        let reply = match compiled {
            Ok((lanes, object, times)) => {
                let mut r = vec![1];
                r.extend(lanes.to_le_bytes());
                for d in phases(&times) {
                    r.extend((d.as_nanos() as u64).to_le_bytes());
                }
                r.extend(object);
                r
            }
            Err(e) => [&[0u8][..], e.as_bytes()].concat(),
        };
        std::fs::File::from(to).write_all(&reply).is_ok()
    }

    /// Links a tier a child compiled (under `CODEGEN`).
    fn adopt(&self, symbol: &str, apart: Apart) -> Result<super::Full, String> {
        let jit = JIT.as_ref().map_err(|e| e.clone())?;
        let t = Instant::now();
        let address = self.link(jit, &tier_name(symbol, false, false).0, &apart.object)?;
        let times = TierTimes {
            link: t.elapsed(),
            ..apart.times
        };
        Ok(super::Full {
            address,
            lanes: apart.lanes,
            times,
        })
    }
}

/// The phases a compile reports, in the order the reply carries them.
fn phases(t: &TierTimes) -> Vec<Duration> {
    [t.parse, t.lower]
        .into_iter()
        .chain(t.passes)
        .chain([t.codegen])
        .collect()
}

/// A child's reply: 1, the lane count (u32), each of [`phases`] in nanoseconds (u64), then the
/// object file; or 0 and the error's text.
fn decode(reply: &[u8]) -> Option<Apart> {
    let (&ok, rest) = reply.split_first()?;
    if ok != 1 {
        return None;
    }
    let lanes = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
    let count = phases(&TierTimes::default()).len();
    let mut nanos = rest
        .get(4..4 + 8 * count)?
        .chunks_exact(8)
        .map(|c| Duration::from_nanos(c.iter().rev().fold(0, |n, &b| n << 8 | b as u64)));
    let mut times = TierTimes {
        parse: nanos.next()?,
        lower: nanos.next()?,
        ..Default::default()
    };
    for p in &mut times.passes {
        *p = nanos.next()?;
    }
    times.codegen = nanos.next()?;
    Some(Apart {
        lanes,
        object: rest[4 + 8 * count..].to_vec(),
        times,
    })
}
