//! Hardware limits a module must respect before anything is allocated for it, with ptxas's own
//! numbers: a kernel's parameters (4,352 bytes before PTX 8.1, 32,764 from it), its static shared
//! memory (48 KiB, the rest only dynamically), `.param` arrays below 4 GiB (ptxas: "Constant
//! overflow"), and no variable beyond a 48-bit address space. Without these a lint-clean module
//! could ask the JIT or the driver for a terabyte.

use crate::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::target::Target;
use crate::types::Space;

/// Kernel parameter space from PTX 8.1 (`0x7ffc`), and before it (`0x1100`).
pub const MAX_PARAM_BYTES: u64 = 32_764;
pub const MAX_PARAM_BYTES_BEFORE_8_1: u64 = 4_352;
/// Static shared memory of one kernel (`0xc000`); more is dynamic shared memory, opted into at launch.
pub const MAX_STATIC_SHARED: u64 = 48 << 10;
/// The largest variable any state space can hold: a 48-bit virtual address space.
pub const MAX_VARIABLE: u64 = 1 << 48;

/// Bytes of a kernel's parameter space: each parameter at its alignment, in order.
pub fn param_bytes(params: &[VarDecl<'_>]) -> u64 {
    params.iter().fold(0u64, |at, p| {
        at.next_multiple_of(p.alignment()).saturating_add(p.size_bytes())
    })
}

pub fn check(m: &Module<'_>, target: &Target, diags: &mut Vec<Diagnostic>) {
    let module_shared: Vec<&VarDecl<'_>> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) if v.space == Space::Shared => Some(v),
            _ => None,
        })
        .collect();
    for item in &m.items {
        match item {
            Item::Var(v) => variable(v, diags),
            Item::Function(f) => {
                f.params.iter().chain(&f.returns).for_each(|p| variable(p, diags));
                if let Some(body) = &f.body {
                    visit(body, &mut |s| {
                        if let Statement::Var(v) = s {
                            variable(v, diags);
                        }
                    });
                }
                if f.kind == FnKind::Entry {
                    kernel(f, target, &module_shared, diags);
                }
            }
            _ => {}
        }
    }
}

fn too_big(v: &VarDecl<'_>, msg: String, help: &str) -> Diagnostic {
    Diagnostic::error(Code::P0207, v.name.span, msg)
        .label("too large")
        .secondary(v.span, "declaration")
        .help(help.to_string())
}

fn variable(v: &VarDecl<'_>, diags: &mut Vec<Diagnostic>) {
    let bytes = v.size_bytes();
    if bytes >= MAX_VARIABLE {
        diags.push(too_big(
            v,
            format!("`{}` takes {bytes} bytes, beyond any address space", v.name.text),
            "declare a smaller array",
        ));
    } else if v.space == Space::Param && bytes >= 1 << 32 {
        diags.push(too_big(
            v,
            format!(
                "`.param` variable `{}` takes {bytes} bytes; `.param` sizes are 32-bit",
                v.name.text
            ),
            "pass a pointer to the data instead",
        ));
    }
}

fn kernel(f: &Function<'_>, target: &Target, module_shared: &[&VarDecl<'_>], diags: &mut Vec<Diagnostic>) {
    let max = if target.version >= (8, 1) {
        MAX_PARAM_BYTES
    } else {
        MAX_PARAM_BYTES_BEFORE_8_1
    };
    let params = param_bytes(&f.params);
    if params > max {
        let mut d = Diagnostic::error(
            Code::P0207,
            f.name.span,
            format!(
                "kernel `{}` takes {params} bytes of parameters ({max} max)",
                f.name.text
            ),
        )
        .label("too many parameter bytes")
        .help("pass large data through a pointer to global memory");
        if max == MAX_PARAM_BYTES_BEFORE_8_1 {
            d = d.note(format!(
                "from `.version 8.1` a kernel may take up to {MAX_PARAM_BYTES} bytes"
            ));
        }
        diags.push(d);
    }
    // Static shared memory: the kernel's own `.shared` variables and the module's that it names.
    let mut shared = 0u64;
    let mut named = rustc_hash::FxHashSet::<&str>::default();
    if let Some(body) = &f.body {
        visit(body, &mut |s| match s {
            Statement::Var(v) if v.space == Space::Shared => shared = shared.saturating_add(v.size_bytes()),
            // Names matter only to find the module's shared variables among them.
            Statement::Inst(i) if !module_shared.is_empty() => i
                .operands
                .iter()
                .for_each(|o| o.names(&mut |n| _ = named.insert(n.text))),
            _ => {}
        });
    }
    for v in module_shared.iter().filter(|v| named.contains(v.name.text)) {
        shared = shared.saturating_add(v.size_bytes());
    }
    if shared > MAX_STATIC_SHARED {
        diags.push(
            Diagnostic::error(
                Code::P0207,
                f.name.span,
                format!(
                    "kernel `{}` uses {shared} bytes of static shared memory ({MAX_STATIC_SHARED} max)",
                    f.name.text
                ),
            )
            .label("too much static shared memory")
            .help("declare the array `.extern .shared` and give its size as dynamic shared memory at launch"),
        );
    }
}
