//! `tensormap.replace`'s operands, which depend on the field it replaces (ptxas 13.5): the fields with
//! an ordinal (`.box_dim`, `.global_dim`, `.global_stride`, `.element_stride`) take `[addr], ord,
//! new_val` with an immediate ordinal, the others `[addr], new_val`; the enumerated fields take an
//! immediate of the manual's table; `.global_address` and `.global_stride` are `.b64`, the rest `.b32`.

use super::*;

/// Fields with an ordinal across the tensor's rank.
const ORDINAL: [&str; 4] = [".box_dim", ".global_dim", ".global_stride", ".element_stride"];

/// Fields whose new value is an immediate code, with the largest code the manual's table lists.
const CODED: [(&str, i64); 4] = [
    (".elemtype", 12),
    (".interleave_layout", 2),
    (".swizzle_mode", 3),
    (".fill_mode", 1),
];

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    pub(super) fn tensormap_replace(&mut self, i: &Instruction<'a>, d: &Decoded) {
        if d.spec.name != "tensormap" || d.spec.sub != [".replace"] {
            return;
        }
        let Some(field) = d.get(G::Field) else { return };
        let wide = matches!(field, ".global_address" | ".global_stride");
        if let Some(t) = d.ty().filter(|t| (t.bits() == 64) != wide) {
            self.diags.push(
                Diagnostic::error(
                    Code::P0102,
                    i.opcode.span,
                    format!("`{field}` is not replaced with a `{}` value", t.name()),
                )
                .label("wrong type")
                .help(if wide { "use `.b64`" } else { "use `.b32`" }),
            );
        }
        let ordinal = ORDINAL.contains(&field);
        let want = if ordinal { 3 } else { 2 };
        if i.operands.len() != want {
            let help = if ordinal {
                format!("`{field}` takes `[addr], ordinal, new_val`")
            } else {
                format!("`{field}` takes `[addr], new_val`")
            };
            self.diags.push(
                Diagnostic::error(
                    Code::P0104,
                    i.span,
                    format!("`tensormap.replace{field}` takes {want} operands"),
                )
                .label(format!("{} given", i.operands.len()))
                .help(help),
            );
            return;
        }
        let imm = |k: usize| match i.operands.get(k) {
            Some(Operand::Imm(crate::ast::Imm::Int(v), _)) => Some(*v),
            _ => None,
        };
        if ordinal && !imm(1).is_some_and(|v| (0..5).contains(&v)) {
            self.diags.push(
                Diagnostic::error(
                    Code::P0105,
                    i.operands[1].span(),
                    "the ordinal must be an immediate from 0 to 4",
                )
                .label("not an ordinal")
                .help("name the dimension with a constant"),
            );
        }
        if let Some(&(_, max)) = CODED.iter().find(|(f, _)| *f == field) {
            if !imm(1).is_some_and(|v| (0..=max).contains(&v)) {
                self.diags.push(
                    Diagnostic::error(
                        Code::P0105,
                        i.operands[1].span(),
                        format!("`{field}` takes an immediate code from 0 to {max}"),
                    )
                    .label("not a code of the table")
                    .help("see the manual's table of tensormap.replace values"),
                );
            }
        }
    }
}
