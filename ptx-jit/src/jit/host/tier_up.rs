//! The optimised tier of a kernel launched again, compiled in the background while its launches go
//! on running the quick tier: a cold process's second cuBLAS GEMM no longer waits 0.3 s for its O3
//! compile.
//!
//! The compile runs in a child process, forked while no thread of this one is inside LLVM (under
//! `LLVM_USE` and `CODEGEN`), which sends the object file back through a pipe; this process only
//! links it. A thread of this process cannot do that compile safely: LLVM is linked in statically,
//! and the objects it makes on first use (the x86 memory-unfold table, for one) are destroyed at exit
//! by handlers that run before `quiesce_llvm_at_exit` when they were made after it was registered. A
//! compile still running at exit then read freed memory: the driver's API tests crashed at exit five
//! times in five with the disk cache off. A child works on its own copy of everything, with the
//! default signal handlers and no core dump, and stores what it compiled in the disk cache itself,
//! finishing it when the program has already ended (see [`Source::compile_apart`]); its reply counts
//! only when it ended with status 0 and the reply is whole.
//! Nothing of its compile stays in this process's heap either. Where it fails in any way, the
//! kernel's next launch compiles the tier itself, as without a background compiler.
//!
//! It runs only in a process whose exit handler stops it ([`super::warm_up`]: the driver's);
//! elsewhere (the command line) the launch compiles as before.
//! Each child sends the program a `SIGCHLD`.

use super::{cached_tier, store_tier, tier_name, Source, TierTimes, Tiers, CODEGEN};
use crate::LLVM_USE;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Compiles in progress, and the kernels waiting for one to end.
struct Work {
    running: usize,
    waiting: std::collections::VecDeque<Weak<Tiers>>,
}

static WORK: parking_lot::Mutex<Work> = parking_lot::Mutex::new(Work {
    running: 0,
    waiting: std::collections::VecDeque::new(),
});

/// Held while a thread links a tier into this process's JIT.
static LINKING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// The process is exiting ([`stop`]): nothing more starts.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Asks for `tiers`' optimised tier in the background. False where there is no background compiler
/// (the caller compiles the tier itself).
///
/// Up to one compile per core runs at once, each on a thread of its own that forks its child: a
/// kernel asked for while a long compile runs does not wait behind it, so that when the program
/// ends soon after, every compile has started (a child finishes after the program; one not started
/// would be lost, and the program's next run would start with the quick tier again).
pub(super) fn ask(tiers: &Arc<Tiers>) -> bool {
    let pid = std::process::id();
    if super::WARMED_IN.load(Ordering::Relaxed) != pid || EXITING.load(Ordering::Relaxed) || !wanted() {
        return false;
    }
    let mut work = WORK.lock();
    if work.running >= cores() {
        work.waiting.push_back(Arc::downgrade(tiers));
        return true;
    }
    work.running += 1;
    drop(work);
    if start(Arc::downgrade(tiers)) {
        return true;
    }
    // No thread: this launch compiles the tier, and the kernels left waiting (none else would take
    // them) compile theirs at their next launch.
    let mut work = WORK.lock();
    work.running -= 1;
    if work.running == 0 {
        for t in work.waiting.drain(..).filter_map(|t| t.upgrade()) {
            t.background_failed.store(true, Ordering::Relaxed);
        }
    }
    false
}

/// The cores this process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Starts a thread that compiles `t`'s tier, then the next kernel waiting, until none is.
fn start(t: Weak<Tiers>) -> bool {
    std::thread::Builder::new()
        .name("ptx-jit-tier-up".into())
        .spawn(move || {
            let mut next = Some(t);
            while let Some(t) = next {
                tier_up(&t);
                let mut work = WORK.lock();
                next = work.waiting.pop_front().filter(|_| !EXITING.load(Ordering::Relaxed));
                if next.is_none() {
                    work.running -= 1;
                }
            }
        })
        .is_ok()
}

/// `PTXJIT_TIER_UP=0` turns the background compiler off (a launch then compiles the optimised tier
/// it needs, as the command line does); so does `PTXJIT_DUMP_IR`, whose dumps a child could not print.
fn wanted() -> bool {
    static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WANTED
        .get_or_init(|| std::env::var_os("PTXJIT_TIER_UP").is_none_or(|v| v != "0") && !crate::jit::pipeline::dumping())
}

/// Waits for the link in progress and keeps the thread from starting anything more: LLVM is about
/// to be torn down.
pub(super) fn stop() {
    EXITING.store(true, Ordering::Relaxed);
    drop(LINKING.lock());
}

/// Compiles and links one kernel's optimised tier, unless its module is gone, the tier is there or
/// the process is exiting. Where the child fails in any way, the kernel's next launch compiles the
/// tier itself, as without a background compiler.
fn tier_up(weak: &Weak<Tiers>) {
    if EXITING.load(Ordering::Relaxed) {
        return;
    }
    let Some(t) = weak.upgrade() else { return };
    if t.full.get().is_some() {
        return drop_unless_exiting(t);
    }
    let text = match t.source.text.get() {
        Ok(text) => text,
        Err(e) => return fail(t, e),
    };
    let (name, lanes) = tier_name(&t.symbol, false, t.regions && t.source.options.lanes);
    let keyed = t.source.tier_key(&text, &name, &t.parts, lanes);
    let (lanes, object, times) = match cached_tier(&keyed) {
        Some((lanes, object)) => (
            lanes,
            object,
            TierTimes {
                cached: true,
                ..Default::default()
            },
        ),
        None => match t.source.compile_apart(&Job {
            text: &text,
            symbol: &t.symbol,
            name: &name,
            parts: &t.parts,
            lanes,
            keyed: &keyed,
        }) {
            Some(compiled) => compiled,
            None => return fail(t, "the compiling process gave no whole reply".into()),
        },
    };
    let linking = LINKING.lock();
    if EXITING.load(Ordering::Relaxed) {
        drop(linking);
        return std::mem::forget(t);
    }
    let _ = t.full.get_or_init(|| {
        // An object the JIT cannot link (a cache entry whatever made it): compiled here, as a
        // launch would, which replaces the entry.
        t.source.link_tier(&name, lanes, &object, times).or_else(|_| {
            keyed.iter().for_each(|(c, k)| c.remove(k));
            t.source.compile(&t.symbol, &t.parts, false, t.regions)
        })
    });
    // The last holder unloads the module's code: before the exit handler may go on.
    drop(t);
    drop(linking);
}

/// Drops a holder of a kernel's code, which may unload its module's code: not while LLVM is torn
/// down.
fn drop_unless_exiting(t: Arc<Tiers>) {
    let linking = LINKING.lock();
    if EXITING.load(Ordering::Relaxed) {
        std::mem::forget(t);
    } else {
        drop(t);
    }
    drop(linking);
}

/// The background compile failed: the kernel's next launch compiles its tier.
fn fail(t: Arc<Tiers>, e: String) {
    if std::env::var_os("PTX_JIT_LOG").is_some_and(|v| v != "0") {
        eprintln!(
            "ptx-jit: background compile of `{}` failed ({e}); its next launch compiles it",
            t.symbol
        );
    }
    t.background_failed.store(true, Ordering::Relaxed);
    drop_unless_exiting(t);
}

impl Source {
    /// A kernel's optimised tier ([`Job`]) compiled by a child process, which stores it in the disk
    /// cache: its lane count, object file and phases' times, as a compile here would give them; None
    /// when no child could start or it gave no whole reply.
    ///
    /// A program often ends right after its last launches, before such a compile does. The child
    /// then finishes it and stores it all the same, so that the program's next run starts with the
    /// optimised code (else a short program would run the quick tier on every run); it holds none of
    /// the program's files open, which would keep the program's reader waiting. A large kernel's
    /// child (over `ORPHAN_TEXT_BYTES` of text), whose compile could take minutes, ends with the
    /// program instead.
    fn compile_apart(&self, job: &Job<'_>) -> Option<(u32, Vec<u8>, TierTimes)> {
        let mut fds = [0; 2];
        // SAFETY: `pipe2` fills both descriptors, which are owned from here on.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Above the standard descriptors, which the child points at /dev/null (a program that closed
        // its own may have been given them for the pipe).
        let above = |fd: OwnedFd| {
            // SAFETY: `F_DUPFD_CLOEXEC` gives a new descriptor this function owns.
            let d = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
            (d >= 0).then(|| unsafe { OwnedFd::from_raw_fd(d) })
        };
        let (read, write) = (above(read)?, above(write)?);
        let parent = std::process::id() as libc::pid_t;
        let (llvm, codegen) = (LLVM_USE.write(), CODEGEN.lock());
        // The exit handler sets this before it takes `CODEGEN`: past it, LLVM may be half torn down.
        if EXITING.load(Ordering::Relaxed) {
            return None;
        }
        let size: usize = job.parts.iter().map(|p| p.range().len()).sum();
        let alarm = ALARM_SECONDS + (size / ALARM_BYTES_PER_SECOND) as libc::c_uint;
        // SAFETY: no thread of this process is inside LLVM (both locks are held); the child runs only
        // this compile, alone, and ends with `_exit`, running no exit handler of this process.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // The child's copies of the locks stay as they are: it has no other thread to meet.
            std::mem::forget((llvm, codegen));
            drop(read);
            // SAFETY: plain system calls; the child ends here whatever the compile does.
            unsafe {
                child_signals();
                // A child can hang on a lock of the C library that another thread of the program held
                // when it was copied (one was found waiting on the lock of the exit handlers' list, from
                // a fork while the program was exiting): it ends itself (SIGALRM) after far longer than
                // its compile takes, and the kernel's next launch compiles the tier instead.
                libc::alarm(alarm);
                if size > ORPHAN_TEXT_BYTES {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                }
                keep_only(&write);
                // A panic must not unwind into the copy of the program's thread.
                let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.send_compiled(job, write)));
                libc::_exit(if matches!(sent, Ok(true)) { 0 } else { 1 })
            }
        }
        drop((codegen, llvm));
        drop(write);
        if pid < 0 {
            return None;
        }
        decode(&receive(&read, pid, alarm)?)
    }

    /// The child's side: compiles the tier, stores it in the disk cache and writes the reply to `to`
    /// (see [`decode`]).
    fn send_compiled(&self, job: &Job<'_>, to: OwnedFd) -> bool {
        let compiled = self.on_compile_stack(|| {
            let mut times = TierTimes::default();
            let t = Instant::now();
            let (m, _) = ptx_front::parse_parts(job.text, job.parts);
            times.parse = t.elapsed();
            let (lanes, object) = self.object(&m, job.symbol, job.name, job.lanes, false, &mut times)?;
            Ok((lanes, object, times))
        });
        let Ok((lanes, object, times)) = compiled else {
            return false;
        };
        store_tier(job.keyed, lanes, &object);
        let mut r = lanes.to_le_bytes().to_vec();
        for d in phases(&times) {
            r.extend((d.as_nanos() as u64).to_le_bytes());
        }
        r.extend((object.len() as u64).to_le_bytes());
        r.extend(object);
        std::fs::File::from(to).write_all(&r).is_ok()
    }
}

/// One optimised tier to compile apart: kernel `symbol`'s `parts` of `text`, named `name`,
/// lane-vectorised if `lanes`, stored in the disk cache as `keyed`.
struct Job<'a> {
    text: &'a str,
    symbol: &'a str,
    name: &'a str,
    parts: &'a [super::Span],
    lanes: bool,
    keyed: &'a super::Keyed,
}

/// How long a child may take: this, plus a second per `ALARM_BYTES_PER_SECOND` of the kernel's
/// text (O3 compiles about 1 MB a second here; the bound is far above that).
const ALARM_SECONDS: libc::c_uint = 60;
const ALARM_BYTES_PER_SECOND: usize = 8 << 10;

/// A kernel's text above which its background compile ends with the program (see
/// [`Source::compile_apart`]): about a second of O3.
const ORPHAN_TEXT_BYTES: usize = 1 << 20;

/// In the child: descriptors 0 to 2 on `/dev/null` and every other one closed but `pipe`, so that no
/// reader of the program's output or pipes waits for the child.
unsafe fn keep_only(pipe: &OwnedFd) {
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    if null >= 0 {
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
    }
    let keep = pipe.as_raw_fd() as libc::c_uint;
    libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, keep - 1, 0);
    libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
}

/// In the child: the program's signal handlers (Python's fault handler, the runtime's) are not run for
/// a crash of the compile, and no core is dumped; an interrupt for the program's process group is the
/// program's (a terminal's Ctrl-C), not the compile's.
unsafe fn child_signals() {
    // The program may block signals (the alarm's among them) in its threads; the child blocks none.
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    for sig in 1..libc::SIGRTMIN() {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    libc::signal(libc::SIGINT, libc::SIG_IGN);
    libc::signal(libc::SIGTERM, libc::SIG_IGN);
    libc::setrlimit(
        libc::RLIMIT_CORE,
        &libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        },
    );
}

/// The child's whole reply, when it ended normally (exit status 0) and the reply is as long as it
/// says. Waits for it without relying on the pipe's end of file, which another process forked from
/// this one meanwhile (holding the pipe's write end) would put off.
fn receive(read: &OwnedFd, pid: libc::pid_t, alarm: libc::c_uint) -> Option<Vec<u8>> {
    let mut reply = vec![];
    let mut exited = None;
    let mut buf = vec![0u8; 1 << 16];
    // The child's alarm, and some slack: a child still there then is killed.
    let deadline = Instant::now() + Duration::from_secs(alarm as u64 + 30);
    loop {
        if exited.is_none() && Instant::now() > deadline {
            // SAFETY: the child is this thread's, not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let mut poll = libc::pollfd {
            fd: read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid descriptor; a second's wait bounds how late a child's end is seen.
        let ready = unsafe { libc::poll(&mut poll, 1, 1000) };
        if ready > 0 {
            // SAFETY: reads into `buf`, which is that long.
            let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            match n {
                0 => break,
                n if n > 0 => reply.extend_from_slice(&buf[..n as usize]),
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => break,
            }
            if whole(&reply) {
                break;
            }
        } else if ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else if ready == 0 && exited.is_some() {
            // The child is gone and nothing more came in a second: all it wrote was read.
            break;
        } else if ready == 0 {
            let mut status = 0;
            // SAFETY: the child is this thread's.
            match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
                0 => {}
                r if r == pid => exited = Some(status),
                // Reaped by someone else (a program that waits for any child), or an error: the pipe
                // tells the rest.
                _ => exited = Some(0),
            }
        } else {
            break;
        }
    }
    if exited.is_none() {
        let mut status = 0;
        // SAFETY: as above; blocks until the child, which has written everything, ends.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
        exited = Some(status);
    }
    let ended_well = exited.is_some_and(|s| libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0);
    (ended_well && whole(&reply)).then_some(reply)
}

/// The phases a compile reports, in the order the reply carries them.
fn phases(t: &TierTimes) -> Vec<Duration> {
    [t.parse, t.lower]
        .into_iter()
        .chain(t.passes)
        .chain([t.codegen])
        .collect()
}

/// The reply's header: the lane count (u32), each of [`phases`] in nanoseconds (u64) and the object
/// file's length (u64); the object file follows.
fn header_len() -> usize {
    4 + 8 * phases(&TierTimes::default()).len() + 8
}

/// Whether `reply` holds its header and as many bytes of object file as that says.
fn whole(reply: &[u8]) -> bool {
    let h = header_len();
    reply
        .get(h - 8..h)
        .is_some_and(|n| reply.len() as u64 == h as u64 + u64::from_le_bytes(n.try_into().expect("8 bytes")))
}

/// A whole reply (see [`header_len`]).
fn decode(reply: &[u8]) -> Option<(u32, Vec<u8>, TierTimes)> {
    let word = |at: usize| Some(u64::from_le_bytes(reply.get(at..at + 8)?.try_into().ok()?));
    let lanes = u32::from_le_bytes(reply.get(..4)?.try_into().ok()?);
    let mut nanos = (0..phases(&TierTimes::default()).len()).map(|k| word(4 + 8 * k).map(Duration::from_nanos));
    let mut times = TierTimes {
        parse: nanos.next()??,
        lower: nanos.next()??,
        ..Default::default()
    };
    for p in &mut times.passes {
        *p = nanos.next()??;
    }
    times.codegen = nanos.next()??;
    Some((lanes, reply.get(header_len()..)?.to_vec(), times))
}
