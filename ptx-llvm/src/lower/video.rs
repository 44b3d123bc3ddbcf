//! Scalar video instructions on the host: the operands' registers go whole to the runtime's
//! `ptxjit_video`, with the form (types, selectors, modifiers) packed into its code.

use super::*;
use crate::builtin::{self as bi, Video};

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn video<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let op = bi::VIDEO_OPS.iter().position(|&o| o == name).expect("a video opcode") as u32;
        let signed: Vec<bool> = d.types().map(|t| t.is_signed()).collect();
        // vset has no destination type: its result is unsigned.
        let (d_signed, a_signed, b_signed) = match signed.as_slice() {
            [a, b] => (false, *a, *b),
            [dt, a, b, ..] => (*dt, *a, *b),
            _ => return Err(unsupported(i.span, format!("`{name}` needs its operand types"))),
        };
        // An operand: its register (a `-` taken off, for vmad) and its part selector.
        let split = |o: &'m Operand<'a>| -> R<(&'m Name<'a>, u32, bool)> {
            let (o, neg) = match o {
                Operand::Neg(x, _) => (&**x, true),
                o => (o, false),
            };
            match o {
                Operand::Sym { name, component } => {
                    let sel = match component {
                        None => 0,
                        Some(c) => match bi::VIDEO_SELECTORS
                            .iter()
                            .position(|&s| s == c.text.trim_start_matches('.'))
                        {
                            Some(k) => k as u32 + 1,
                            None => return Err(unsupported(c.span, format!("`{}` is not a part selector", c.text))),
                        },
                    };
                    Ok((name, sel, neg))
                }
                other => Err(unsupported(other.span(), format!("`{name}` takes registers here"))),
            }
        };
        let ops = &i.operands;
        let (dn, dsel, _) = split(&ops[0])?;
        let mut srcs = vec![];
        let mut neg = 0;
        let mut sels = [0u32; 2];
        for (k, o) in ops[1..].iter().enumerate() {
            let v = match o {
                Operand::Imm(..) => self.read(st, o, Type::B32, scope)?.into_int_value(),
                _ => {
                    let (n, sel, negated) = split(o)?;
                    if k < 2 {
                        sels[k] = sel;
                    }
                    neg |= (negated as u32) << k;
                    let whole = Operand::Sym {
                        name: *n,
                        component: None,
                    };
                    self.read(st, &whole, Type::B32, scope)?.into_int_value()
                }
            };
            srcs.push(v);
        }
        let op2 = match d.get(G::Op) {
            Some(".add") => 1,
            Some(".min") => 2,
            Some(".max") => 3,
            _ => 0,
        };
        let v = Video {
            op,
            d_signed,
            a_signed,
            b_signed,
            sat: d.has(".sat"),
            wrap: d.has(".wrap"),
            op2,
            asel: sels[0],
            bsel: sels[1],
            dsel,
            scale: if d.has(".shr7") {
                1
            } else if d.has(".shr15") {
                2
            } else {
                0
            },
            po: d.has(".po"),
            neg,
            cmp: d
                .get(G::Cmp)
                .and_then(|c| bi::VIDEO_CMPS.iter().position(|&x| x == c))
                .unwrap_or(0) as u32,
        };
        let r = self.builtin_call(bi::VIDEO, v.pack(), &srcs)?;
        let r = self.b.build_int_truncate(r, self.i32(), "video")?;
        let whole = Operand::Sym {
            name: *dn,
            component: None,
        };
        self.write(st, &whole, r.into(), false, scope)
    }
}
