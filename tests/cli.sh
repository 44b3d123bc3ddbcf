#!/usr/bin/env bash
# The CLI's contract: exit codes and the outputs users rely on.
set -uo pipefail
bin=${1:?usage: cli.sh path/to/ptx-jit}
dir=$(cd "$(dirname "$0")" && pwd)
fail=0
expect() { # expect CODE DESCRIPTION -- command...
    local want=$1 what=$2; shift 3
    "$@" >/tmp/ptx-jit-cli.out 2>&1; local got=$?
    if [ "$got" -ne "$want" ]; then echo "FAIL  $what: exit $got, expected $want"; cat /tmp/ptx-jit-cli.out; fail=1; else echo "ok    $what"; fi
}
contains() { # contains TEXT DESCRIPTION
    if grep -qF -- "$1" /tmp/ptx-jit-cli.out; then echo "ok    $2"; else echo "FAIL  $2: output lacks '$1'"; cat /tmp/ptx-jit-cli.out; fail=1; fi
}
expect 0 "lint of clean files exits 0" -- "$bin" lint "$dir"/ptx/vecadd.ptx "$dir"/demo/kernels.ptx
expect 1 "lint with errors exits 1" -- "$bin" lint "$dir"/demo/broken.ptx
contains "3 error(s)" "lint counts every error in one run"
contains "did you mean \`.global\`?" "lint suggests the nearest modifier"
expect 2 "lint of a missing file exits 2" -- "$bin" lint /nonexistent.ptx
printf '.version 8.5\n.target sm_80\n// caf\xe9\n' >/tmp/ptx-jit-latin1.ptx
expect 2 "an unreadable file fails lint" -- "$bin" lint "$dir"/ptx/vecadd.ptx /tmp/ptx-jit-latin1.ptx "$dir"/demo/broken.ptx
contains "cannot read /tmp/ptx-jit-latin1.ptx: not UTF-8 text (byte 0xE9 at line 3, column 7)" "lint names the first byte that is not UTF-8"
contains "3 error(s), 0 warning(s) in 2 file(s)" "lint checks the files after an unreadable one"
contains "1 of 3 file(s) could not be read" "lint counts the unreadable files"
expect 2 "usage error exits 2" -- "$bin" lint
mkdir -p /tmp/ptx-jit-lintdir/sub
cp "$dir"/ptx/vecadd.ptx /tmp/ptx-jit-lintdir/
cp "$dir"/demo/broken.ptx /tmp/ptx-jit-lintdir/sub/
echo "not PTX, not checked" > /tmp/ptx-jit-lintdir/notes.txt
expect 1 "lint of a folder checks the .ptx files beneath it" -- "$bin" lint /tmp/ptx-jit-lintdir
contains "3 error(s), 0 warning(s) in 2 file(s)" "a folder's files at any depth, and only .ptx files"
expect 0 "run prints outputs" -- "$bin" run "$dir"/ptx/vecadd.ptx --kernel vecadd --grid 2 --block 4 --arg 'f32[1,2,3,4,5,6,7,8]' --arg 'f32*8=10' --arg 'f32*8' --arg u32:8
contains "arg2 F32[8] = [11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0]" "run computes vecadd"
expect 0 "PTXJIT_DUMP_IR=after-all prints the IR around every pass" -- env PTXJIT_DUMP_IR=after-all "$bin" run "$dir"/ptx/vecadd.ptx --kernel vecadd --grid 2 --block 4 --arg 'f32[1,2,3,4,5,6,7,8]' --arg 'f32*8=10' --arg 'f32*8' --arg u32:8
for pass in lowered ssa addressing guards nan optimise; do contains "after $pass ----" "the IR after $pass is printed"; done
contains "define void @" "the dumps hold the kernel's IR"
expect 2 "run with a wrong argument count exits 2" -- "$bin" run "$dir"/ptx/vecadd.ptx --kernel vecadd --arg u32:1
expect 2 "run with an oversized block exits 2" -- "$bin" run "$dir"/ptx/vecadd.ptx --kernel vecadd --block 2048 --arg 'f32*1' --arg 'f32*1' --arg 'f32*1' --arg u32:1
contains "block dimension x is 2048 (max 1024)" "run explains the bad launch"
expect 0 "compile to sm_90 PTX" -- "$bin" compile "$dir"/ptx/saxpy.ptx --arch sm_90
contains ".target sm_90" "compile emits the requested target"
expect 0 "compile to PTX 8.0" -- "$bin" compile "$dir"/ptx/saxpy.ptx --arch sm_80 --ptx-version 8.0
contains ".version 8.0" "compile emits the requested version"
expect 2 "an impossible sm/version pair is an error, not an abort" -- "$bin" compile "$dir"/ptx/saxpy.ptx --arch sm_90 --ptx-version 7.0
contains "sm_90 needs PTX 7.8" "the pair error names the minimum"
expect 1 "an instruction the target cannot run is a diagnostic, not an LLVM abort" -- "$bin" compile "$dir"/ptx/warp_collectives.ptx --arch sm_20
contains "\`shfl\` requires sm_30 and PTX 6.0; checking against sm_20" "the target diagnostic names the instruction and minimum"
expect 0 "compile keeps the source's PTX version when the target allows it" -- "$bin" compile "$dir"/ptx/warp_collectives.ptx --arch sm_50
contains ".version 7.0" "shfl.sync output declares the source's PTX 7.0"
expect 0 "compile raises the PTX version to what the target needs" -- "$bin" compile "$dir"/ptx/warp_collectives.ptx --arch sm_90
contains ".version 7.8" "sm_90 output declares PTX 7.8"
expect 0 "compile --emit llvm" -- "$bin" compile "$dir"/ptx/saxpy.ptx --arch sm_80 --emit llvm
contains "ptx_kernel" "nvvm IR marks kernels with the ptx_kernel convention"
expect 0 "explain a code" -- "$bin" explain P0201
contains "Wrong:" "explain shows a wrong and a right example"
expect 0 "explain an instruction" -- "$bin" explain fma
contains "requires: PTX 1.4, sm_20" "explain shows requirements from the ISA table"
expect 0 "explain a dotted form" -- "$bin" explain cp.async.bulk.tensor
contains "9.7.10.24.9" "explain names the manual section of a sub-instruction"
printf 'add.s32 r1, r2, 3;\nmbarrier.try_wait.parity.shared::cta.b64 p, [a], 0;\n' >/tmp/ptx-jit-frag.ptx
expect 0 "lint --fragment accepts bare instructions" -- "$bin" lint --fragment /tmp/ptx-jit-frag.ptx
expect 1 "without --fragment they are errors" -- "$bin" lint /tmp/ptx-jit-frag.ptx
printf 'add.s23 r1, r2, 3;\n' >/tmp/ptx-jit-frag.ptx
expect 1 "lint --fragment still checks modifiers" -- "$bin" lint --fragment /tmp/ptx-jit-frag.ptx
contains "did you mean \`.s32\`?" "fragment mode suggests the nearest modifier"
expect 0 "fmt prints canonical PTX" -- "$bin" fmt "$dir"/ptx/saxpy.ptx
contains "fma.rn.f32" "fmt keeps the instructions"
printf '.version 8.5\n.target sm_90\n.entry k { add.s32 %%r1 %%r2; }\n' >/tmp/ptx-jit-frag.ptx
expect 1 "fmt refuses a file with syntax errors" -- "$bin" fmt /tmp/ptx-jit-frag.ptx
expect 0 "coverage" -- "$bin" coverage
contains "176 sections" "coverage reports every instruction section of the 8.5 manual"
faults="$dir"/../cuda-shim/tests/checked_faults.ptx
expect 0 "run --checked lets in-bounds accesses through" -- "$bin" run "$faults" --kernel global_oob --block 8 --arg 'u32*8' --checked
expect 1 "run --checked stops an out-of-bounds store" -- "$bin" run "$faults" --kernel global_oob --block 9 --arg 'u32*8' --checked
contains "\`global_oob\`, line 16: thread (8, 0, 0) of block (0, 0, 0) accessed 4 byte(s) of .global memory" "the fault names kernel, PTX line, thread, block and space"
printf '.version 7.0\n.target sm_80\n.address_size 64\n.func die()\n{\n\ttrap;\n\tret;\n}\n.visible .entry k(.param .u64 out)\n{\n\t.reg .b64 %%rd<2>;\n\t.reg .b32 %%r<2>;\n\tld.param.u64 %%rd1, [out];\n\tcall die, ();\n\tmov.u32 %%r1, 42;\n\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n' >/tmp/ptx-jit-trap.ptx
expect 1 "trap inside a device function ends the launch (the caller stops too)" -- "$bin" run /tmp/ptx-jit-trap.ptx --kernel k --arg 'u32*1'
contains "\`k\`, line 6: thread (0, 0, 0) of block (0, 0, 0) executed \`trap\`" "the trap names kernel, line, thread and block"
printf '.version 7.0\n.target sm_80\n.address_size 64\n.visible .entry wild(.param .u64 out)\n{\n\t.reg .b64 %%rd<2>;\n\t.reg .b32 %%r<2>;\n\tmov.u64 %%rd1, 16;\n\tmov.u32 %%r1, 42;\n\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n' >/tmp/ptx-jit-wild.ptx
expect 1 "a wild store in the default mode ends the launch, not the process" -- "$bin" run /tmp/ptx-jit-wild.ptx --kernel wild --block 4 --arg 'u32*1'
contains "error: illegal address: \`wild\`: a thread of block (0, 0, 0) accessed address 0x10, which is not mapped (or not canonical); run with PTXJIT_CHECKED=1 for its PTX line and thread" "the fault names kernel, block and address, and points to checked mode"
races="$dir"/sanitize/race_shared
expect 1 "run --sanitize racecheck finds the race and exits 1" -- "$bin" run "$races".ptx --kernel shift --block 64 --arg 'u32*64' --sanitize racecheck
contains "error[S0101]: racecheck: race on .shared memory in \`shift\`: a write and a read of byte 0x4 with no barrier between" "run --sanitize reports the race (its warp exchanges in step: all the stores, then the loads)"
contains "sanitizer: 1 finding(s)" "run --sanitize counts its findings"
expect 0 "run --sanitize racecheck passes the twin with the barrier" -- "$bin" run "$races"_ok.ptx --kernel shift --block 64 --arg 'u32*64' --sanitize racecheck
expect 2 "run --sanitize with an unknown tool exits 2" -- "$bin" run "$races"_ok.ptx --kernel shift --block 64 --arg 'u32*64' --sanitize leakcheck
printf '.version 7.0\n.target sm_80\n.address_size 64\n.visible .entry big(.param .u64 out)\n{\n\t.local .align 4 .b8 buf[67108864];\n\t.reg .b64 %%rd<3>;\n\t.reg .b32 %%r<2>;\n\tld.param.u64 %%rd1, [out];\n\tmov.u64 %%rd2, buf;\n\tmov.u32 %%r1, 42;\n\tst.local.u32 [%%rd2+67108860], %%r1;\n\tld.local.u32 %%r1, [%%rd2+67108860];\n\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n' >/tmp/ptx-jit-biglocal.ptx
expect 0 "a 64 MiB .local array runs in the default mode (ptxas accepts it too)" -- "$bin" run /tmp/ptx-jit-biglocal.ptx --kernel big --grid 4 --block 256 --arg 'u32*1'
contains "arg0 U32[1] = [42]" "the 64 MiB .local array holds its last word"
expect 1 "checked mode, whose threads keep .local on a guarded stack, ends the launch instead of crashing" -- "$bin" run /tmp/ptx-jit-biglocal.ptx --kernel big --block 4 --arg 'u32*1' --checked
contains "error: illegal address: \`big\`: a thread of block (0, 0, 0) overflowed its stack (\`.func\` calls nested too deeply, or \`.local\` arrays too large)" "the stack overflow is named"
exit $fail
