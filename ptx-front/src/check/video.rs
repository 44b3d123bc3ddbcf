//! Part selectors on register operands (`%r1.b2`, `%r2.h10`): only the video instructions take them,
//! each only on the operands and with the values ptxas accepts (see [`isa::video_kind`]).

use super::*;
use crate::isa::Video;

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    pub(super) fn part_selectors(&mut self, i: &Instruction<'a>, d: &Decoded, scope: &Scope<'m, 'a>) {
        let name = d.spec.name;
        let kind = isa::video_kind(name);
        if let (Some(Video::Simd { .. }), Some(sat), Some(_)) =
            (kind, i.mods.iter().find(|m| m.text == ".sat"), d.get(G::Op))
        {
            self.diags.push(
                Diagnostic::error(
                    Code::P0102,
                    sat.span,
                    format!("`{name}` cannot saturate and accumulate (`.add`)"),
                )
                .label("not with `.add`")
                .help("drop `.sat`, or `.add` to merge the lanes into d instead"),
            );
        }
        // vmad negates the product (a xor b negated) or c, not both (ptxas: "Operand negation limited to
        // either (source A xor source B) or C").
        if name == "vmad" {
            let neg = |k: usize| matches!(i.operands.get(k), Some(Operand::Neg(..)));
            if (neg(1) != neg(2)) && neg(3) {
                self.diags.push(
                    Diagnostic::error(
                        Code::P0105,
                        i.operands[3].span(),
                        "`vmad` negates the product or c, not both",
                    )
                    .label("second negation")
                    .help("negate a and b both (the product keeps its sign), or drop one negation"),
                );
            }
        }
        let merge = i.operands.len() == 4 && d.get(G::Op).is_none();
        for (k, op) in i.operands.iter().enumerate() {
            // Only vmad negates its operands (ptxas: "Operand negation not allowed").
            let op = match op {
                Operand::Neg(x, _) if name == "vmad" => &**x,
                Operand::Neg(_, span) if kind.is_some() => {
                    self.diags.push(
                        Diagnostic::error(Code::P0105, *span, format!("`{name}` takes no negated operand"))
                            .label("negation not allowed")
                            .help("only vmad negates its operands; negate the value first"),
                    );
                    continue;
                }
                o => o,
            };
            if matches!(kind, Some(Video::Simd { .. })) && k > 0 && !matches!(op, Operand::Sym { .. }) {
                self.diags.push(
                    Diagnostic::error(Code::P0105, op.span(), format!("`{name}` takes registers only"))
                        .label("not a register")
                        .help("move the value into a `.b32` register first"),
                );
                continue;
            }
            let Operand::Sym {
                name: n,
                component: Some(c),
            } = op
            else {
                continue;
            };
            let entry = self.lookup(n, scope);
            let scalar =
                special_register(n.text).is_none() && !matches!(entry, Some(Entry::Reg { vector: Some(_), .. }));
            let why =
                match kind {
                    // Elsewhere `.x` names an element of a vector or special register, and a name that
                    // does not resolve (a fragment's) is left alone.
                    None if !scalar || !matches!(entry, Some(Entry::Reg { .. })) => None,
                    None => Some(format!("`{name}` takes no part selector")),
                    Some(_) if !scalar => Some(format!(
                        "`{name}` takes scalar registers, not an element of a vector or special register"
                    )),
                    Some(_) if k == 3 => Some("the third source takes no part selector".to_string()),
                    Some(Video::Scalar) if k == 0 && (name == "vmad" || !merge) => Some(format!(
                        "a destination selector needs `{name}`'s merge form (four operands, no secondary operation)"
                    )),
                    Some(Video::Scalar) => isa::scalar_selector(c.text)
                        .is_none()
                        .then(|| format!("`{}` is not a part selector: .b0 .b1 .b2 .b3 .h0 .h1", c.text)),
                    Some(Video::Simd { lanes, bits }) if k == 0 => isa::simd_mask(c.text, lanes).is_none().then(|| {
                        format!(
                        "`{}` is not a lane mask of {lanes} {bits}-bit lanes (the lanes, highest first, each once: {})",
                        c.text,
                        if lanes == 2 { ".h0 .h1 .h10" } else { ".b0 .b10 .b210 .b3210 .b31 …" }
                    )
                    }),
                    Some(Video::Simd { lanes, bits }) => isa::simd_select(c.text, lanes).is_none().then(|| {
                        format!(
                            "`{}` is not a selector of {lanes} {bits}-bit lanes (one digit per lane, below {})",
                            c.text,
                            2 * lanes
                        )
                    }),
                };
            if let Some(why) = why {
                self.diags
                    .push(Diagnostic::error(Code::P0105, c.span, why).label("part selector not allowed here"));
            }
        }
    }
}
