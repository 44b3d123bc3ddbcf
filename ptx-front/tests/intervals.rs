//! Barrier intervals (`ptx_front::intervals`): which loads racecheck may skip, named by their text.

use ptx_front::ast::Item;
use ptx_front::check::{Checker, Detail, Options};

/// The loads of `body` (a kernel's statements) that `unraced_loads` marks, as written.
fn unraced(body: &str) -> Vec<String> {
    let src = format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\
         .reg .u32 %r<9>;\n.reg .u64 %rd<9>;\n.reg .pred %p<3>;\n.shared .align 4 .b8 s[1024];\n\
         .reg .b64 %m;\n{body}\n}}\n"
    );
    let (m, diags) = ptx_front::parse_and_check(&src);
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let mut checker = Checker::new(&m, &Options::default());
    let Some(Item::Function(f)) = m.items.iter().find(|i| matches!(i, Item::Function(_))) else {
        panic!("no kernel")
    };
    let ir = checker.function(f, &mut vec![], Detail::Decoded).expect("a body");
    let marks = ptx_front::intervals::unraced_loads(&ir);
    ir.insts
        .iter()
        .zip(marks)
        .filter(|(_, m)| *m)
        .map(|(i, _)| {
            src[i.ast.span.start as usize..i.ast.span.end as usize]
                .trim_end_matches(';')
                .to_string()
        })
        .collect()
}

#[test]
fn a_tiles_inner_loop_reads_between_barriers_that_nothing_writes_between() {
    // sgemm's shape: store a tile, barrier, read it in a loop, barrier, go round.
    let got = unraced(
        "ld.param.u64 %rd1, [p];
        mov.u32 %r1, 0;
        TILE:
        ld.global.u32 %r2, [%rd1];
        st.shared.u32 [s], %r2;
        bar.sync 0;
        ld.shared.u32 %r3, [s+4];
        ld.shared.u32 %r4, [s+8];
        bar.sync 0;
        add.u32 %r1, %r1, 1;
        setp.lt.u32 %p1, %r1, 4;
        @%p1 bra TILE;
        st.global.u32 [%rd1], %r3;
        ret;",
    );
    // The global load shares its stretch with the global store after the loop; the shared reads
    // share theirs with nothing that writes.
    assert_eq!(got, ["ld.shared.u32 %r3, [s+4]", "ld.shared.u32 %r4, [s+8]"]);
}

#[test]
fn a_load_reached_by_a_write_through_a_back_edge_is_kept() {
    let got = unraced(
        "mov.u32 %r1, 0;
        bar.sync 0;
        LOOP:
        ld.shared.u32 %r3, [s+4];
        bar.sync 0;
        st.shared.u32 [s], %r3;
        add.u32 %r1, %r1, 1;
        setp.lt.u32 %p1, %r1, 2;
        @%p1 bra LOOP;
        ret;",
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn spaces_are_told_apart_and_generic_accesses_touch_both() {
    // A global store leaves shared loads alone; a generic load may be of either space.
    let got = unraced(
        "ld.param.u64 %rd1, [p];
        ld.shared.u32 %r1, [s];
        ld.u32 %r2, [%rd1];
        ld.global.u32 %r3, [%rd1];
        st.global.u32 [%rd1], %r1;
        ret;",
    );
    assert_eq!(got, ["ld.shared.u32 %r1, [s]"]);
    // A generic store may write shared memory.
    let got = unraced(
        "ld.param.u64 %rd1, [p];
        ld.shared.u32 %r1, [s];
        st.u32 [%rd1], %r1;
        ret;",
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn a_write_on_another_branch_of_the_same_stretch_counts() {
    let got = unraced(
        "mov.u32 %r1, %tid.x;
        bar.sync 0;
        setp.eq.u32 %p1, %r1, 0;
        @%p1 bra WRITE;
        ld.shared.u32 %r2, [s];
        bra.uni DONE;
        WRITE:
        st.shared.u32 [s], %r1;
        DONE:
        bar.sync 0;
        ld.shared.u32 %r3, [s];
        ret;",
    );
    assert_eq!(got, ["ld.shared.u32 %r3, [s]"]);
}

#[test]
fn a_guarded_barrier_does_not_end_a_stretch() {
    // Threads whose predicate is false pass the barrier: the store after it may meet the load
    // before it in one epoch.
    let got = unraced(
        "mov.u32 %r1, %tid.x;
        setp.eq.u32 %p1, %r1, 0;
        ld.shared.u32 %r2, [s];
        @%p1 bar.sync 0;
        st.shared.u32 [s], %r1;
        ret;",
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn atomics_write() {
    let got = unraced(
        "ld.shared.u32 %r1, [s];
        atom.shared.add.u32 %r2, [s], 1;
        ret;",
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn a_call_may_write_anything() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
               .func f() { ret; }\n\
               .visible .entry k() {\n.reg .u32 %r<3>;\n.shared .align 4 .b8 s[16];\n\
               ld.shared.u32 %r1, [s];\ncall f, ();\nbar.sync 0;\nld.shared.u32 %r2, [s];\nret;\n}\n";
    let (m, diags) = ptx_front::parse_and_check(src);
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let mut checker = Checker::new(&m, &Options::default());
    let kernels: Vec<_> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) => Some(f),
            _ => None,
        })
        .collect();
    // The `.func` itself gets no answer; in the kernel, the load before the call shares its stretch
    // with the call, the one after the barrier does not.
    let f = checker
        .function(kernels[0], &mut vec![], Detail::Decoded)
        .expect("a body");
    assert!(ptx_front::intervals::unraced_loads(&f).iter().all(|m| !m));
    let k = checker
        .function(kernels[1], &mut vec![], Detail::Decoded)
        .expect("a body");
    let marks = ptx_front::intervals::unraced_loads(&k);
    let marked: Vec<&str> = k
        .insts
        .iter()
        .zip(marks)
        .filter(|(_, m)| *m)
        .map(|(i, _)| &src[i.ast.span.start as usize..i.ast.span.end as usize])
        .collect();
    assert_eq!(marked, ["ld.shared.u32 %r2, [s];"]);
}

#[test]
fn synchronisation_the_intervals_cannot_follow_gives_no_answer() {
    // The synchronisation comes after a barrier, in a stretch of its own, so only the rule that
    // gives no answer can keep the load before it from being marked.
    for sync in [
        "bar.sync 1, 64;",
        "bar.arrive 1, 64;",
        "barrier.sync 0;",
        "mbarrier.arrive.shared.b64 %m, [s];",
    ] {
        let got = unraced(&format!(
            "ld.shared.u32 %r1, [s];
            bar.sync 0;
            {sync}
            ret;"
        ));
        assert!(got.is_empty(), "{sync}: {got:?}");
    }
    // The aligned forms are followed.
    for sync in [
        "bar.sync 0;",
        "barrier.sync.aligned 0;",
        "bar.red.popc.u32 %r2, 0, %p1;",
    ] {
        let got = unraced(&format!(
            "setp.eq.u32 %p1, %r1, 0;
            ld.shared.u32 %r1, [s];
            {sync}
            ret;"
        ));
        assert_eq!(got, ["ld.shared.u32 %r1, [s]"], "{sync}");
    }
}
