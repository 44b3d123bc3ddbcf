use super::table::{MMA_TYPES, SUBS};
use super::*;

fn ok(inst: &str) -> Decoded {
    let mut parts = inst.split('.');
    let op = parts.next().unwrap();
    let mods: Vec<String> = parts.map(|m| format!(".{m}")).collect();
    let mods: Vec<&str> = mods.iter().map(String::as_str).collect();
    decode(op, &mods).unwrap_or_else(|e| panic!("{inst}: {e:?}"))
}

fn err(inst: &str) -> DecodeError<'static> {
    let mut parts = inst.split('.');
    let op = parts.next().unwrap();
    let mods: Vec<&'static str> = parts.map(|m| &*format!(".{m}").leak()).collect();
    decode(op, &mods).expect_err(inst)
}

#[test]
fn decode_groups_modifiers() {
    let d = decode("ld", &[".global", ".nc", ".v2", ".f32"]).unwrap();
    assert_eq!(d.get(G::Space), Some(".global"));
    assert_eq!(d.get(G::Vec), Some(".v2"));
    assert_eq!(d.ty(), Some(Type::F32));
    let c = decode("cvt", &[".rn", ".f32", ".s32"]).unwrap();
    assert_eq!(c.types().collect::<Vec<_>>(), vec![Type::F32, Type::S32]);
}

#[test]
fn decode_errors() {
    assert_eq!(
        decode("add", &[".u23"]).unwrap_err(),
        DecodeError::BadModifier {
            index: 0,
            text: ".u23",
            suggestion: Some(".u32")
        }
    );
    assert!(matches!(
        decode("add", &[]),
        Err(DecodeError::Missing { group: G::Type, .. })
    ));
    assert!(matches!(
        decode("add", &[".s32", ".s32"]),
        Err(DecodeError::Repeated { index: 1, .. })
    ));
    assert_eq!(decode("frobnicate", &[]).unwrap_err(), DecodeError::UnknownOpcode);
}

/// Forms the primary entries accept keep decoding to them, exactly as before the table grew.
#[test]
fn primary_forms_stay_primary() {
    for inst in [
        "add.s32",
        "add.rn.ftz.f32",
        "add.cc.u32",
        "ld.global.nc.v2.f32",
        "ld.param.u64",
        "st.shared.v4.b32",
        "bar.sync",
        "bar.warp.sync",
        "shfl.sync.bfly.b32",
        "shfl.up.b32",
        "vote.ballot.b32",
        "cvt.rn.f16x2.f32",
        "cvt.rzi.s32.f32",
        "atom.global.add.f32",
        "mov.b64",
        "fence.sc.gpu",
        "membar.gl",
        "rcp.approx.ftz.f64",
        "rsqrt.approx.ftz.f64",
    ] {
        let d = ok(inst);
        assert!(
            d.is_primary(),
            "{inst} decoded to {} [{}]",
            d.spec.form(),
            d.spec.section
        );
    }
}

#[test]
fn integer_and_half_families() {
    let d = ok("add.u16x2");
    assert_eq!((d.spec.section, d.spec.sm, d.ty()), ("9.7.1.1", 90, Some(Type::B32)));
    let d = ok("add.rn.ftz.f16x2");
    assert_eq!(d.spec.section, "9.7.4.1");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![(G::Round, ".rn"), (G::Ftz, ".ftz"), (G::Type, ".f16x2")]
    );
    assert_eq!(d.requires(), ((4, 2), 53));
    assert_eq!(ok("add.rn.bf16").requires(), ((7, 8), 90));
    let d = ok("fma.rn.oob.relu.bf16x2");
    assert_eq!((d.spec.section, d.requires()), ("9.7.4.4", ((8, 1), 90)));
    assert_eq!(
        ok("mul24.hi.s32").mods().collect::<Vec<_>>(),
        vec![(G::Mode, ".hi"), (G::Type, ".s32")]
    );
    assert_eq!(
        ok("dp2a.lo.s32.u32").types().collect::<Vec<_>>(),
        vec![Type::S32, Type::U32]
    );
    assert_eq!(ok("bfind.shiftamt.u64").get(G::Mode), Some(".shiftamt"));
    let d = ok("min.NaN.xorsign.abs.f32");
    assert_eq!((d.spec.section, d.requires()), ("9.7.3.11", ((7, 2), 86)));
    assert_eq!(ok("min.NaN.bf16x2").spec.section, "9.7.4.7");
    assert_eq!(ok("max.relu.s32").spec.section, "9.7.1.13");
    assert_eq!(ok("ex2.approx.ftz.bf16").spec.section, "9.7.4.10");
    assert_eq!(ok("tanh.approx.f32").spec.section, "9.7.3.22");
    assert_eq!(ok("tanh.approx.f16x2").spec.section, "9.7.4.9");
    assert_eq!(ok("setp.gtu.ftz.f16x2").spec.section, "9.7.8.2");
    assert_eq!(ok("set.eq.u32.f16").spec.section, "9.7.8.1");
    assert_eq!(ok("testp.notanumber.f64").get(G::Op), Some(".notanumber"));
    assert_eq!(ok("lop3.or.b32").spec.section, "9.7.9.6");
    assert_eq!(ok("slct.ftz.f32.f32").types().count(), 2);
}

#[test]
fn data_movement_family() {
    let d = ok("ld.global.nc.L1::no_allocate.L2::256B.v4.f32");
    assert_eq!(d.spec.section, "9.7.10.9");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Space, ".global"),
            (G::Nc, ".nc"),
            (G::Evict, ".L1::no_allocate"),
            (G::Prefetch, ".L2::256B"),
            (G::Vec, ".v4"),
            (G::Type, ".f32")
        ]
    );
    assert_eq!(d.requires(), ((7, 4), 75));
    // The manual puts the cache operator between `.global` and `.nc`.
    assert_eq!(ok("ld.global.cg.nc.b32").spec.section, "9.7.10.9");
    let d = ok("ld.relaxed.cluster.shared::cluster.L2::cache_hint.u32");
    assert_eq!(
        (d.spec.section, d.is_primary(), d.requires()),
        ("9.7.10.8", false, ((7, 8), 90))
    );
    assert_eq!(ok("ld.mmio.relaxed.sys.global.u32").get(G::Mmio), Some(".mmio"));
    let d = ok("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.s32");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sub, ".async"),
            (G::Space, ".shared::cluster"),
            (G::Completion, ".mbarrier::complete_tx::bytes"),
            (G::Vec, ".v2"),
            (G::Type, ".s32")
        ]
    );
    assert_eq!(ok("ldu.global.v2.f64").spec.form(), "ldu");
    assert_eq!(
        ok("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2").requires(),
        ((8, 2), 90)
    );
    assert_eq!(
        ok("multimem.red.release.gpu.global.add.u64").spec.form(),
        "multimem.red"
    );
    assert_eq!(ok("prefetch.global.L2::evict_last").requires(), ((7, 4), 80));
    assert_eq!(ok("prefetch.const.tensormap").requires(), ((8, 0), 90));
    let d = ok("createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sub, ".fractional"),
            (G::Evict, ".L2::evict_last"),
            (G::Evict, ".L2::evict_unchanged"),
            (G::Type, ".b64")
        ]
    );
    assert_eq!(ok("isspacep.param::entry").requires(), ((8, 3), 70));
    assert_eq!(ok("cvta.to.shared::cluster.u64").spec.sm, 90);
    let d = ok("cvt.rn.satfinite.relu.e4m3x2.f32");
    assert_eq!((d.spec.section, d.requires()), ("9.7.10.20", ((7, 8), 89)));
    assert_eq!(d.types().collect::<Vec<_>>(), vec![Type::B16, Type::F32]);
    let d = ok("cvt.pack.sat.u8.s32.b32");
    assert_eq!(d.spec.form(), "cvt.pack");
    assert_eq!(d.types().collect::<Vec<_>>(), vec![Type::U8, Type::S32, Type::B32]);
    assert_eq!(ok("cvt.pack.sat.s16.s32").types().count(), 2);
    assert_eq!(ok("mapa.shared::cluster.u64").spec.form(), "mapa");
    assert_eq!(ok("getctarank.u32").spec.form(), "getctarank");
    assert_eq!(ok("mov.b128").spec.section, "9.7.10.4");
    let d = ok("tensormap.replace.tile.global_dim.shared::cta.b1024.b32");
    assert!(d.spec.arch);
    assert_eq!(d.get(G::Field), Some(".global_dim"));
}

#[test]
fn async_copy_family() {
    let d = ok("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes");
    assert_eq!(d.spec.section, "9.7.10.24.9");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sub, ".async"),
            (G::Sub, ".bulk"),
            (G::Sub, ".tensor"),
            (G::Dim, ".2d"),
            (G::Space, ".shared::cluster"),
            (G::SrcSpace, ".global"),
            (G::Completion, ".mbarrier::complete_tx::bytes")
        ]
    );
    // Destination and source spaces are told apart by position.
    let d = ok("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint");
    assert_eq!(
        (d.get(G::Space), d.get(G::SrcSpace)),
        (Some(".global"), Some(".shared::cta"))
    );
    let d = ok("cp.async.ca.shared.global.L2::128B");
    assert_eq!(d.spec.section, "9.7.10.24.3");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sub, ".async"),
            (G::Cache, ".ca"),
            (G::Space, ".shared"),
            (G::SrcSpace, ".global"),
            (G::Prefetch, ".L2::128B")
        ]
    );
    assert_eq!(ok("cp.async.commit_group").spec.section, "9.7.10.24.4");
    assert_eq!(ok("cp.async.wait_all").spec.section, "9.7.10.24.5");
    assert_eq!(ok("cp.async.bulk.wait_group.read").get(G::Read), Some(".read"));
    assert_eq!(ok("cp.async.bulk.commit_group").spec.section, "9.7.10.24.12");
    assert_eq!(ok("cp.async.bulk.prefetch.L2.global").spec.section, "9.7.10.24.8");
    assert_eq!(
        ok("cp.async.bulk.prefetch.tensor.5d.L2.global.im2col").spec.section,
        "9.7.10.24.11"
    );
    let d = ok("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16");
    assert_eq!(
        (d.spec.section, d.get(G::Op), d.ty()),
        ("9.7.10.24.7", Some(".add"), Some(Type::Bf16))
    );
    assert_eq!(
        ok("cp.reduce.async.bulk.tensor.3d.global.shared::cta.min.tile.bulk_group")
            .spec
            .section,
        "9.7.10.24.10"
    );
    assert_eq!(
        ok("cp.async.mbarrier.arrive.noinc.shared.b64").spec.section,
        "9.7.14.15.15"
    );
}

#[test]
fn synchronisation_family() {
    let d = ok("mbarrier.try_wait.parity.shared::cta.b64");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sub, ".try_wait"),
            (G::Parity, ".parity"),
            (G::Space, ".shared::cta"),
            (G::Type, ".b64")
        ]
    );
    assert_eq!(d.requires(), ((7, 8), 90));
    assert_eq!(ok("mbarrier.test_wait.b64").requires(), ((7, 0), 80));
    let d = ok("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64");
    assert_eq!((d.get(G::Mode), d.requires()), (Some(".expect_tx"), ((8, 0), 90)));
    assert_eq!(ok("mbarrier.init.shared.b64").spec.section, "9.7.14.15.9");
    assert_eq!(ok("mbarrier.pending_count.b64").spec.section, "9.7.14.15.17");
    assert_eq!(ok("barrier.cluster.arrive.release.aligned").spec.section, "9.7.14.3");
    assert_eq!(ok("bar.red.popc.u32").get(G::Op), Some(".popc"));
    assert_eq!(ok("barrier.cta.red.or.aligned.pred").spec.section, "9.7.14.1");
    let d = ok("fence.proxy.async.shared::cta");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![(G::Sub, ".proxy"), (G::Proxy, ".async"), (G::Space, ".shared::cta")]
    );
    assert_eq!(
        ok("fence.proxy.tensormap::generic.acquire.gpu").requires(),
        ((8, 3), 90)
    );
    assert_eq!(
        ok("fence.mbarrier_init.release.cluster").spec.form(),
        "fence.mbarrier_init"
    );
    assert_eq!(ok("membar.proxy.alias").spec.form(), "membar.proxy");
    let d = ok("atom.global.v4.f32.add");
    assert_eq!((d.is_primary(), d.requires()), (false, ((8, 1), 90)));
    assert_eq!(ok("atom.cas.b128").requires(), ((8, 3), 90));
    assert_eq!(ok("atom.shared.add.noftz.f16").requires(), ((6, 3), 70));
    assert_eq!(ok("red.global.add.noftz.bf16x2").spec.section, "9.7.14.6");
    let d = ok("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.min.u32");
    assert_eq!((d.spec.form().as_str(), d.get(G::Op)), ("red.async", Some(".min")));
    assert_eq!(ok("match.all.sync.b64").get(G::Mode), Some(".all"));
    assert_eq!(ok("redux.sync.xor.b32").get(G::Op), Some(".xor"));
    assert_eq!(ok("elect.sync").spec.sm, 90);
    assert_eq!(ok("activemask.b32").spec.sm, 30);
    assert!(
        ok("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned")
            .mods()
            .count()
            == 8
    );
}

#[test]
fn matrix_family() {
    let d = ok("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
    assert_eq!(d.spec.section, "9.7.15.4.14");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sync, ".sync"),
            (G::Aligned, ".aligned"),
            (G::Shape, ".m16n8k16"),
            (G::Layout, ".row"),
            (G::Layout, ".col"),
            (G::Type, ".f32"),
            (G::Type, ".bf16"),
            (G::Type, ".bf16"),
            (G::Type, ".f32")
        ]
    );
    assert_eq!(
        d.types().collect::<Vec<_>>(),
        vec![Type::F32, Type::Bf16, Type::Bf16, Type::F32]
    );
    assert_eq!(d.requires(), ((7, 0), 80));
    assert_eq!(
        ok("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32").requires(),
        ((8, 4), 89)
    );
    assert_eq!(
        ok("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc").get(G::Op),
        Some(".and")
    );
    assert_eq!(
        ok("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64.rn").get(G::Round),
        Some(".rn")
    );
    assert_eq!(
        err("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16"),
        DecodeError::Missing {
            group: G::Type,
            values: MMA_TYPES
        }
    );
    let d = ok("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.s8.s32");
    assert_eq!((d.spec.section, d.requires()), ("9.7.15.5.3", ((8, 5), 80)));
    let d = ok("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Sub, ".mma_async"),
            (G::Sync, ".sync"),
            (G::Aligned, ".aligned"),
            (G::Shape, ".m64n128k16"),
            (G::Type, ".f32"),
            (G::Type, ".f16"),
            (G::Type, ".f16")
        ]
    );
    assert!(d.spec.arch);
    assert_eq!(
        ok("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.u8.satfinite")
            .spec
            .section,
        "9.7.16.6.4"
    );
    assert_eq!(
        ok("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc").get(G::Popc),
        Some(".popc")
    );
    assert_eq!(ok("wgmma.fence.sync.aligned").spec.section, "9.7.16.7.1");
    assert_eq!(ok("wgmma.wait_group.sync.aligned").spec.operands, (1, 1));
    let d = ok("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16");
    assert_eq!((d.get(G::Frag), d.get(G::Layout)), (Some(".a"), Some(".row")));
    assert_eq!(
        ok("wmma.mma.sync.aligned.col.row.m8n8k4.rn.f64.f64.f64.f64").requires(),
        ((7, 0), 80)
    );
    assert_eq!(
        ok("wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32").requires(),
        ((6, 3), 75)
    );
    assert_eq!(
        ok("wmma.store.d.sync.aligned.col.m16n16k16.global.f32").spec.section,
        "9.7.15.3.4"
    );
    assert_eq!(
        ok("ldmatrix.sync.aligned.m8n8.x4.trans.shared::cta.b16").get(G::Num),
        Some(".x4")
    );
    assert_eq!(ok("stmatrix.sync.aligned.m8n8.x2.shared.b16").spec.sm, 90);
    assert_eq!(ok("movmatrix.sync.aligned.m8n8.trans.b16").spec.sm, 75);
}

#[test]
fn texture_surface_video_misc_families() {
    let d = ok("tex.2d.v4.f32.f32");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![(G::Geom, ".2d"), (G::Vec, ".v4"), (G::Type, ".f32"), (G::Type, ".f32")]
    );
    assert_eq!(ok("tex.grad.acube.v4.s32.f32").requires(), ((3, 1), 20));
    assert_eq!(ok("tld4.r.2d.v4.s32.f32").get(G::Comp), Some(".r"));
    assert_eq!(ok("txq.level.width.b32").get(G::Mip), Some(".level"));
    assert_eq!(ok("istypep.samplerref").get(G::Type), Some(".samplerref"));
    let d = ok("suld.b.2d.v2.b32.trap");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Class, ".b"),
            (G::Geom, ".2d"),
            (G::Vec, ".v2"),
            (G::Type, ".b32"),
            (G::Clamp, ".trap")
        ]
    );
    assert_eq!(ok("sust.p.3d.v4.b32.zero").requires(), ((3, 0), 20));
    assert_eq!(ok("sured.b.add.1d.u32.clamp").get(G::Op), Some(".add"));
    assert_eq!(ok("suq.memory_layout.b32").requires(), ((4, 2), 10));
    let d = ok("vadd4.u32.u32.u32.sat");
    assert_eq!(
        d.mods().collect::<Vec<_>>(),
        vec![
            (G::Type, ".u32"),
            (G::Type, ".u32"),
            (G::Type, ".u32"),
            (G::Sat, ".sat")
        ]
    );
    assert_eq!(ok("vmad.s32.u32.s32.po.sat.shr15").get(G::Scale), Some(".shr15"));
    assert_eq!(ok("vshr.u32.s32.u32.wrap.max").get(G::Op), Some(".max"));
    assert_eq!(ok("vset2.u32.u32.ne.add").get(G::Cmp), Some(".ne"));
    assert_eq!(ok("brx.idx.uni").spec.section, "9.7.13.4");
    assert!(ok("setmaxnreg.inc.sync.aligned.u32").spec.arch);
    assert_eq!(ok("pmevent.mask").requires(), ((3, 0), 20));
    assert_eq!(ok("nanosleep.u32").spec.sm, 70);
    assert_eq!(ok("alloca.u64").spec.operands, (2, 3));
    for op in ["trap", "brkpt", "exit"] {
        assert!(decode(op, &[]).is_ok(), "{op}");
    }
}

#[test]
fn sub_instruction_errors() {
    assert_eq!(
        err("cp.asinc.bulk"),
        DecodeError::BadModifier {
            index: 0,
            text: ".asinc",
            suggestion: Some(".async")
        }
    );
    assert_eq!(
        decode("mbarrier", &[]).unwrap_err(),
        DecodeError::Missing {
            group: G::Sub,
            values: SUBS.iter().find(|(o, _)| *o == "mbarrier").unwrap().1
        }
    );
    assert_eq!(
        err("cp.reduce"),
        DecodeError::Missing {
            group: G::Sub,
            values: &[".async"]
        }
    );
    // The entry that got furthest explains the error.
    assert_eq!(
        err("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::byte"),
        DecodeError::BadModifier {
            index: 6,
            text: ".mbarrier::complete_tx::byte",
            suggestion: Some(".mbarrier::complete_tx::bytes")
        }
    );
    assert_eq!(
        err("ld.global.nc.L1::evict_lats.f32"),
        DecodeError::BadModifier {
            index: 2,
            text: ".L1::evict_lats",
            suggestion: Some(".L1::evict_last")
        }
    );
    assert!(matches!(
        err("mma.sync.aligned.m16n8k16.row.row.col.f32.bf16.bf16.f32"),
        DecodeError::Repeated { index: 5, .. }
    ));
}

#[test]
fn table_is_consistent() {
    for (i, a) in TABLE.iter().enumerate() {
        assert!(
            TABLE[i + 1..]
                .iter()
                .all(|b| (b.form(), b.syntax) != (a.form(), a.syntax)),
            "{} twice",
            a.form()
        );
        let types: Vec<_> = a.groups.iter().filter(|g| g.kind == G::Type).collect();
        assert!(types.len() <= 1, "{}: one Type group", a.form());
        assert_eq!(
            types.is_empty(),
            a.types.1 == 0,
            "{}: Type group and type count",
            a.form()
        );
        assert!(a.types.0 <= a.types.1 && a.operands.0 <= a.operands.1, "{}", a.form());
        assert!(a.groups.len() <= 64, "{}", a.form());
        for g in a.groups {
            assert!(g.kind != G::Sub, "{}: Sub is not a group", a.form());
            for v in g.values {
                assert!(v.starts_with('.') && !a.sub.contains(v), "{}: {v}", a.form());
            }
        }
        for r in a.reqs {
            assert!(
                a.groups.iter().any(|g| g.values.contains(&r.value)),
                "{}: req {}",
                a.form(),
                r.value
            );
            assert!(
                r.ptx >= a.ptx || r.sm >= a.sm,
                "{}: req {} below the base",
                a.form(),
                r.value
            );
        }
    }
    // Every opcode whose entries all have a sub prefix lists its first-level subs in SUBS.
    let mut names: Vec<&str> = TABLE.iter().map(|s| s.name).collect();
    names.dedup();
    for name in names {
        if lookup_all(name).all(|s| !s.sub.is_empty()) {
            let mut want: Vec<&str> = lookup_all(name).map(|s| s.sub[0]).collect();
            want.sort();
            want.dedup();
            let mut have = SUBS.iter().find(|(o, _)| *o == name).expect(name).1.to_vec();
            have.sort();
            assert_eq!(have, want, "{name}");
        }
    }
}

/// Every entry is reachable: its base form, or its base form with one optional modifier, decodes to it.
#[test]
fn every_entry_is_reachable() {
    for spec in TABLE {
        let base: Vec<&str> = spec
            .sub
            .iter()
            .copied()
            .chain(spec.groups.iter().flat_map(|g| {
                let n = if g.kind == G::Type {
                    spec.types.0 as usize
                } else {
                    usize::from(g.required)
                };
                std::iter::repeat_n(g.values[0], n)
            }))
            .collect();
        let mut tries = vec![base.clone()];
        for g in spec.groups.iter().filter(|g| !g.required) {
            for v in g.values.iter() {
                let mut m = base.clone();
                m.push(v);
                tries.push(m);
            }
        }
        assert!(
            tries
                .iter()
                .any(|m| decode(spec.name, m).is_ok_and(|d| std::ptr::eq(d.spec, spec))),
            "{} [{}] is unreachable",
            spec.form(),
            spec.section
        );
    }
}

#[test]
fn address_operands_come_from_the_syntax() {
    let at = |inst: &str| address_operands(ok(inst).spec);
    assert_eq!(address_operand("ld"), Some(1));
    assert_eq!(address_operand("st"), Some(0));
    assert_eq!(address_operand("atom"), Some(1));
    assert_eq!(address_operand("red"), Some(0));
    assert_eq!(address_operand("add"), None);
    assert_eq!(address_operand("bra"), None);
    assert_eq!(address_operand("call"), None);
    assert_eq!(
        at("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32"),
        vec![0, 2]
    );
    assert_eq!(at("cp.async.ca.shared.global"), vec![0, 1]);
    assert_eq!(
        at("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"),
        vec![0, 1, 2]
    );
    assert_eq!(at("mbarrier.arrive.b64"), vec![1]);
    assert_eq!(at("mbarrier.init.b64"), vec![0]);
    assert_eq!(at("tex.2d.v4.f32.f32"), vec![1]);
    assert_eq!(at("sust.b.1d.b32.trap"), vec![0]);
    assert_eq!(at("wgmma.fence.sync.aligned"), Vec::<usize>::new());
}

#[test]
fn destinations() {
    let dest = |inst: &str| first_operand_is_destination(ok(inst).spec);
    for inst in [
        "add.s32",
        "ld.global.f32",
        "atom.add.u32",
        "mbarrier.arrive.b64",
        "bar.red.popc.u32",
        "elect.sync",
        "wmma.load.a.sync.aligned.row.m16n16k16.f16",
        "multimem.ld_reduce.add.u32",
        "createpolicy.cvt.L2.b64",
    ] {
        assert!(dest(inst), "{inst}");
    }
    for inst in [
        "st.u32",
        "red.add.u32",
        "bar.sync",
        "bar.warp.sync",
        "cp.async.wait_group",
        "wgmma.wait_group.sync.aligned",
        "nanosleep.u32",
        "pmevent",
        "setmaxnreg.inc.sync.aligned.u32",
        "mbarrier.init.b64",
        "sust.b.1d.b32.trap",
        "wmma.store.d.sync.aligned.row.m16n16k16.f32",
        "tensormap.replace.tile.rank.b1024.b32",
        "red.async.relaxed.cluster.mbarrier::complete_tx::bytes.add.u32",
        "prefetch.L2",
        "membar.gl",
        "brx.idx",
    ] {
        assert!(!dest(inst), "{inst}");
    }
}

#[test]
fn every_entry_can_be_explained() {
    for spec in TABLE {
        let key = explain_key(spec);
        assert!(
            lookup(&key).is_some_and(|s| std::ptr::eq(s, spec)),
            "`explain {key}` does not reach {} [{}]",
            spec.form(),
            spec.section
        );
    }
}

#[test]
fn lookup_and_describe() {
    assert_eq!(lookup("cp").unwrap().form(), "cp.async");
    assert_eq!(lookup("cp.async.bulk.tensor").unwrap().section, "9.7.10.24.9");
    assert_eq!(lookup("ld.global.nc").unwrap().section, "9.7.10.9");
    assert_eq!(lookup("mbarrier.try_wait").unwrap().form(), "mbarrier.try_wait");
    assert_eq!(lookup("mma.sp").unwrap().section, "9.7.15.5.3");
    assert!(lookup("add.cc").unwrap().is_primary());
    assert!(lookup("nosuch").is_none());
    let fma = describe(lookup("fma").unwrap());
    assert!(fma.contains("requires: PTX 1.4, sm_20"), "{fma}");
    assert!(fma.contains("fma.rn"), "{fma}");
    let wg = describe(lookup("wgmma.mma_async").unwrap());
    assert!(wg.contains("sm_90a") && wg.contains("3 type modifiers"), "{wg}");
    let cp = describe(lookup("cp").unwrap());
    assert!(cp.contains("cp.reduce.async.bulk.tensor"), "{cp}");
}

#[test]
fn sections_cover_the_table() {
    for (i, s) in SECTIONS.iter().enumerate() {
        assert!(
            SECTIONS[i + 1..].iter().all(|t| t.number != s.number),
            "{} twice",
            s.number
        );
        for form in s.opcodes {
            assert!(
                TABLE.iter().any(|e| e.form() == *form),
                "{} {}: no entry `{form}`",
                s.number,
                s.title
            );
        }
    }
    for e in TABLE {
        let s = SECTIONS
            .iter()
            .find(|s| s.number == e.section)
            .unwrap_or_else(|| panic!("{}: no section {}", e.form(), e.section));
        assert!(
            s.opcodes.contains(&e.form().as_str()),
            "{} is not listed in {}",
            e.form(),
            s.number
        );
    }
}

/// The instruction headings of chapter 9.7 in the manual, when its text is at hand.
fn manual_headings() -> Option<Vec<(String, String)>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = ["../../shared/spec/ptx-isa-8.5.txt", "../shared/spec/ptx-isa-8.5.txt"]
        .iter()
        .find_map(|p| std::fs::read_to_string(root.join(p)).ok());
    let Some(text) = text else {
        println!("skipped: the PTX ISA 8.5 text (../shared/spec/ptx-isa-8.5.txt) is not present");
        return None;
    };
    let mut out = vec![];
    for line in text.lines() {
        let Some((num, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(num) = num.strip_suffix('.') else { continue };
        if !num.starts_with("9.7.") || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
            continue;
        }
        let lower = rest.to_ascii_lowercase();
        let Some(at) = lower
            .find("instructions: ")
            .map(|i| i + 14)
            .or_else(|| lower.find("instruction: ").map(|i| i + 13))
        else {
            continue;
        };
        let title = rest[at..].trim();
        if !title.is_empty() {
            out.push((num.to_string(), title.to_string()));
        }
    }
    Some(out)
}

/// The instruction lines of the manual's own examples (`../shared/corpus/isa-examples`), when present.
/// Returns (record id, whether the corpus marks the record suspect, instruction text).
fn manual_examples() -> Option<Vec<(String, bool, String)>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = [
        "../../shared/corpus/isa-examples/examples.json",
        "../shared/corpus/isa-examples/examples.json",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(root.join(p)).ok());
    let Some(text) = text else {
        println!("skipped: ../shared/corpus/isa-examples/examples.json is not present");
        return None;
    };
    // A JSON string value after `"key": `, unescaped (enough for this file).
    fn string(rec: &str, key: &str) -> Option<String> {
        let at = rec.find(&format!("\"{key}\": \""))? + key.len() + 5;
        let mut out = String::new();
        let mut chars = rec[at..].chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => match chars.next()? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).collect();
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?).unwrap_or('?'));
                    }
                    other => out.push(other),
                },
                c => out.push(c),
            }
        }
        None
    }
    // The examples ptxas refuses though the corpus does not mark them (tests/refused_manual_examples.txt).
    let refused = std::fs::read_to_string(root.join("../tests/refused_manual_examples.txt")).expect("the list");
    let refused: Vec<String> = refused
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let mut out = vec![];
    for rec in text.split("\"id\": ").skip(1) {
        if string(rec, "kind").as_deref() != Some("instruction") {
            continue;
        }
        let id = rec.split('"').nth(1).unwrap_or("?").to_string();
        let suspect = rec.contains("\"suspect\": ") || refused.contains(&id);
        let code = string(rec, "code").unwrap_or_default();
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or("");
            for stmt in line.split(';') {
                let mut words = stmt.split_whitespace().peekable();
                while words.peek().is_some_and(|w| w.ends_with(':') || w.starts_with('@')) {
                    words.next();
                }
                let Some(first) = words.next() else { continue };
                let opcode_like = first.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && first.chars().all(|c| c.is_ascii_alphanumeric() || "._:".contains(c));
                if opcode_like {
                    out.push((id.clone(), suspect, first.to_string()));
                }
            }
        }
    }
    Some(out)
}

/// Every instruction in the manual's examples decodes, except the ones the corpus marks suspect.
#[test]
fn manual_examples_decode() {
    let Some(examples) = manual_examples() else { return };
    let (mut good, mut bad) = (0, vec![]);
    for (id, suspect, inst) in &examples {
        let mut parts = inst.split('.');
        let op = parts.next().unwrap();
        let mods: Vec<String> = parts.map(|m| format!(".{m}")).collect();
        let mods: Vec<&str> = mods.iter().map(String::as_str).collect();
        match decode(op, &mods) {
            Ok(_) => good += 1,
            Err(e) => bad.push(format!(
                "{id}{} {inst}: {e:?}",
                if *suspect { " (suspect)" } else { "" }
            )),
        }
    }
    println!("{good} example instructions decode");
    for b in &bad {
        println!("  {b}");
    }
    assert!(good > 400, "only {good} example instructions found");
    let unexpected: Vec<_> = bad.iter().filter(|b| !b.contains("(suspect)")).collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
}

#[test]
fn sections_match_the_manual() {
    let Some(headings) = manual_headings() else { return };
    let want: Vec<(String, String)> = headings
        .into_iter()
        .filter(|(n, t)| !EXCLUDED_SECTIONS.contains(&(n.as_str(), t.as_str())))
        .collect();
    let have: Vec<(String, String)> = SECTIONS
        .iter()
        .map(|s| (s.number.to_string(), s.title.to_string()))
        .collect();
    assert_eq!(have, want);
    assert_eq!(SECTIONS.len(), 176);
}
