//! f32 `add`/`sub`/`mul`/`fma` with directed rounding run inline (`ptx_llvm`'s `directed_f32`, in
//! f64 with an exact two-sum), and so does `cvt.sat` of an f32 to itself; this compares every
//! result, bit for bit, with the runtime's own (`ptxjit_fp`, what the lowering called before) over
//! inputs that reach each path: random values of every magnitude, subnormals, overflow,
//! cancellation, exact results, zeros, infinities and NaNs. `ex2.approx.f32`, which keeps its
//! argument out of the C library's error paths, is compared with the library's `exp2f`.

use ptx_jit::cli::args::Arg;
use ptx_llvm::builtin as bi;

const OPS: [(&str, u32); 4] = [("add", bi::ADD), ("sub", bi::SUB), ("mul", bi::MUL), ("fma", bi::FMA)];
const ROUNDINGS: [(&str, u32); 3] = [("rz", bi::RZ), ("rm", bi::RM), ("rp", bi::RP)];

/// The `cvt.sat` forms checked: their modifiers, and `ptxjit_fp`'s rounding and flags (the forms
/// that round to an integer still go to the runtime).
const SATURATIONS: [(&str, u32, u32); 4] = [
    ("sat", bi::RDEFAULT, bi::SAT),
    ("ftz.sat", bi::RDEFAULT, bi::SAT | bi::FTZ),
    ("rni.sat", bi::RNI, bi::SAT),
    ("rzi.ftz.sat", bi::RZI, bi::SAT | bi::FTZ),
];

/// A kernel that writes, for element i, each operation in each rounding of a[i], b[i], c[i], then
/// each saturation of a[i].
fn kernel() -> String {
    let mut body = String::new();
    let mut k = 0;
    body += &format!("\tex2.approx.f32 %f4, %f1;\n\tst.global.f32 [%rd9+{}], %f4;\n", 4 * k);
    k += 1;
    for (m, _, _) in SATURATIONS {
        body += &format!("\tcvt.{m}.f32.f32 %f4, %f1;\n\tst.global.f32 [%rd9+{}], %f4;\n", 4 * k);
        k += 1;
    }
    for (op, _) in OPS {
        for (rnd, _) in ROUNDINGS {
            let c = if op == "fma" { ", %f3" } else { "" };
            body += &format!(
                "\t{op}.{rnd}.f32 %f4, %f1, %f2{c};\n\tst.global.f32 [%rd9+{}], %f4;\n",
                4 * k
            );
            k += 1;
        }
    }
    format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n\
         .visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po)\n{{\n\
         \t.reg .b32 %r<3>;\n\t.reg .f32 %f<5>;\n\t.reg .b64 %rd<10>;\n\
         \tld.param.u64 %rd1, [pa];\n\tld.param.u64 %rd2, [pb];\n\tld.param.u64 %rd3, [pc];\n\
         \tld.param.u64 %rd4, [po];\n\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\
         \tmad.lo.u32 %r1, %r2, 256, %r1;\n\tmul.wide.u32 %rd5, %r1, 4;\n\
         \tadd.s64 %rd6, %rd1, %rd5;\n\tld.global.f32 %f1, [%rd6];\n\
         \tadd.s64 %rd7, %rd2, %rd5;\n\tld.global.f32 %f2, [%rd7];\n\
         \tadd.s64 %rd8, %rd3, %rd5;\n\tld.global.f32 %f3, [%rd8];\n\
         \tmul.wide.u32 %rd5, %r1, {};\n\tadd.s64 %rd9, %rd4, %rd5;\n{body}\tret;\n}}\n",
        4 * k
    )
}

/// Inputs: (a, b, c) bit patterns.
fn inputs(n: usize) -> Vec<[u32; 3]> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let special = [
        0u32,
        0x8000_0000,
        1,
        0x8000_0001,
        0x007f_ffff,
        0x0080_0000,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x3f80_0000,
        0xbf80_0000,
        0x4000_0000,
        0x3f00_0000,
        // Around the ends of exp2's range: -149.5, -150, -149, -149.25, 128, 127.99999, -160.
        0xc315_8000,
        0xc316_0000,
        0xc315_0000,
        0xc315_4000,
        0x4300_0000,
        0x42ff_ffff,
        0xc320_0000,
    ];
    (0..n)
        .map(|i| {
            let r = next();
            let any = |r: u64| (r >> 7) as u32;
            let mut v = [any(r), any(next()), any(next())];
            let small = |b: u64| {
                let m = (b % 4096) as f32 * if b & 4096 != 0 { -1.0 } else { 1.0 };
                m * 2f32.powi((b >> 13) as i32 % 40 - 20)
            };
            match i % 8 {
                // Small integers: exact results, the runtime's path.
                0 => v = v.map(|b| ((b % 64) as f32 - 32.0).to_bits()),
                // Magnitudes near 1, where most arithmetic lives.
                1 => v = v.map(|b| (b & 0x807f_ffff) | 0x3f00_0000),
                // Cancellation: c is about -(a*b).
                2 => {
                    let p = f32::from_bits(v[0]) * f32::from_bits(v[1]);
                    v[2] = (-p).to_bits() ^ (v[2] & 3);
                }
                3 => v[(r % 3) as usize] = special[(r >> 40) as usize % special.len()],
                4 => v[0] = special[(r >> 40) as usize % special.len()],
                // Exact zeros: a - a, and a*b + c with c = -(a*b) exactly (12-bit mantissas).
                5 => {
                    let (a, b) = (small(r), small(next()));
                    v = [a.to_bits(), a.to_bits(), (-(a * b)).to_bits()];
                    if r & 1 == 0 {
                        v[1] = b.to_bits();
                    }
                }
                // Zeros of both signs everywhere: the sign rules of exact zero results.
                6 => v = [r, r >> 1, r >> 2].map(|b| if b & 1 == 0 { 0 } else { 0x8000_0000 }),
                _ => {}
            }
            v
        })
        .collect()
}

#[test]
fn the_forms_compared_are_lowered_inline() {
    // Otherwise the comparison below would set the runtime against itself.
    let src = kernel()
        .replace("\tex2.approx.f32", "\t// ex2")
        .replace("cvt.rni.sat", "// cvt.rni.sat");
    let src = src.replace("\tcvt.rzi.ftz.sat", "\t// cvt.rzi.ftz.sat");
    let (m, d) = ptx_front::parse_and_check(&src);
    assert!(!d.iter().any(|d| d.is_error()), "{d:?}");
    let ir = ptx_jit::jit::host::host_ir(&m, false).expect("lowers");
    assert!(!ir.contains("ptxjit_fp"), "a runtime call is left:\n{ir}");
}

#[test]
fn inline_directed_rounding_matches_the_runtime() {
    let n = 256 * 64;
    let ins = inputs(n);
    let buf = |k: usize| -> Vec<u8> { ins.iter().flat_map(|v| v[k].to_le_bytes()).collect() };
    let outs = 1 + SATURATIONS.len() + OPS.len() * ROUNDINGS.len();
    let f32t = ptx_jit::cli::args::parse_elem("f32").expect("f32");
    let run = ptx_jit_tests::Run {
        kernel: "k".into(),
        grid: [64, 1, 1],
        block: [256, 1, 1],
        shared: 0,
        args: vec![
            Arg::Buffer(f32t, buf(0)),
            Arg::Buffer(f32t, buf(1)),
            Arg::Buffer(f32t, buf(2)),
            Arg::Buffer(f32t, vec![0; 4 * outs * n]),
        ],
    };
    let got = ptx_jit_tests::run(&kernel(), &run).expect("runs");
    let mut wrong = vec![];
    for (i, v) in ins.iter().enumerate() {
        let mut k = 0;
        let mut check = |k: usize, what: String, want: u64| {
            let at = 4 * (i * outs + k);
            let bits = u32::from_le_bytes(got[3][at..at + 4].try_into().expect("4 bytes"));
            if bits != want as u32 {
                wrong.push(format!("{what} = {bits:#x}, want {want:#x}"));
            }
        };
        let x = f32::from_bits(v[0]);
        let exp2 = if x.is_nan() { 0x7fff_ffff } else { x.exp2().to_bits() };
        check(k, format!("ex2.approx({:#x})", v[0]), exp2 as u64);
        k += 1;
        for (m, rnd, flags) in SATURATIONS {
            let code = bi::code(bi::CVT, bi::F32, bi::F32, rnd, flags);
            check(
                k,
                format!("cvt.{m}({:#x})", v[0]),
                ptx_jit::emu::builtins::ptxjit_fp(code, v[0] as u64, 0, 0),
            );
            k += 1;
        }
        for (op, code) in OPS {
            for (rnd, r) in ROUNDINGS {
                let want = ptx_jit::emu::builtins::ptxjit_fp(
                    bi::code(code, bi::F32, bi::F32, r, 0),
                    v[0] as u64,
                    v[1] as u64,
                    v[2] as u64,
                );
                check(k, format!("{op}.{rnd}({:#x}, {:#x}, {:#x})", v[0], v[1], v[2]), want);
                k += 1;
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ, e.g. {:?}",
        wrong.len(),
        n * outs,
        &wrong[..wrong.len().min(5)]
    );
}
