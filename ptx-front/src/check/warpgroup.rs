//! `wgmma.mma_async`'s forms (see [`isa::wgmma_form`]): the types that go together, the operands each
//! form takes, the registers of D and of A, and the values of the immediate operands.

use super::*;

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    pub(super) fn wgmma(&mut self, i: &Instruction<'a>) {
        let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
        let written = i.opcode.span.to(i.mods.last().map_or(i.opcode.span, |m| m.span));
        let f = match isa::wgmma_form(&mods) {
            Ok(f) => f,
            Err(why) => {
                self.diags.push(
                    Diagnostic::error(Code::P0102, written, format!("not a form of `wgmma.mma_async`: {why}"))
                        .label("no such form")
                        .help("the forms are listed in the PTX ISA manual, section 9.7.16.5.2 (`ptx-jit explain wgmma.mma_async`)"),
                );
                return;
            }
        };
        let ops = &i.operands;
        let a_regs = matches!(ops.get(1), Some(Operand::Vector(..)));
        let want = f.operands(a_regs);
        if ops.len() != want {
            let tail = match (f.scales(), f.transposes(), a_regs) {
                (false, ..) => "",
                (true, false, _) => ", imm-scale-a, imm-scale-b",
                (true, true, true) => ", imm-scale-a, imm-scale-b, imm-trans-b",
                (true, true, false) => ", imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b",
            };
            let a = if a_regs { "a" } else { "a-desc" };
            self.diags.push(
                Diagnostic::error(
                    Code::P0104,
                    i.span,
                    format!(
                        "this form of `wgmma.mma_async` takes {want} operands, not {}",
                        ops.len()
                    ),
                )
                .label("wrong number of operands")
                .help(format!("write `d, {a}, b-desc, scale-d{tail}`")),
            );
            return;
        }
        let count = |o: &Operand<'_>| match o {
            Operand::Vector(v, _) => v.len(),
            _ => 1,
        };
        let lists = [(0, "D", f.d_regs()), (1, "A in registers", isa::WgmmaForm::A_REGS)];
        for (k, what, regs) in lists {
            if (k == 0 || a_regs) && count(&ops[k]) != regs {
                self.diags.push(
                    Diagnostic::error(
                        Code::P0104,
                        ops[k].span(),
                        format!("{what} of this form is {regs} registers, not {}", count(&ops[k])),
                    )
                    .label(format!("{regs} registers expected"))
                    .help("each thread of the warpgroup holds its part of the matrix: see the manual's fragment layouts (9.7.16.5.1.1)"),
                );
            }
        }
        // The immediates after scale-d: the scales of A and B (1 or -1), then the transposes (0 or 1).
        for (k, o) in ops.iter().enumerate().skip(4) {
            let (allowed, what): (&[i64], _) = if k < 6 {
                (&[1, -1], "a scale is 1 or -1 (negate)")
            } else {
                (&[0, 1], "a transpose is 0 or 1")
            };
            if !matches!(o, Operand::Imm(Imm::Int(v), _) if allowed.contains(v)) {
                self.diags.push(
                    Diagnostic::error(Code::P0105, o.span(), format!("`wgmma.mma_async`: {what}"))
                        .label("not an allowed immediate")
                        .help(format!(
                            "write {}",
                            allowed
                                .iter()
                                .map(|v| format!("`{v}`"))
                                .collect::<Vec<_>>()
                                .join(" or ")
                        )),
                );
            }
        }
    }
}
