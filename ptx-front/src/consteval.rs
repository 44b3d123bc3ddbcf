//! Constant expression evaluation with the manual's rules (PTX ISA 8.5, sections 4.5.4–4.5.6): 64-bit
//! integers that are signed unless a `U` suffix, a cast or an operand makes them unsigned, and doubles.

use crate::ast::{BinOp, Expr, Imm, UnOp};
use crate::types::Type;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    /// The bits, and whether the value has type `.u64` (else `.s64`).
    Int(u64, bool),
    Float(f64),
}

impl Const {
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Const::Int(v, _) => Some(v as i64),
            Const::Float(_) => None,
        }
    }
}

/// Why an expression has no constant value. Symbols (addresses) are resolved later, at lowering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalError {
    NotConstant,
    DivideByZero,
    /// Floats are only allowed with unary and basic arithmetic, comparisons and `?:`.
    FloatOperand,
}

fn truth(v: bool) -> Const {
    Const::Int(v as u64, false)
}

pub fn eval(e: &Expr<'_>) -> Result<Const, EvalError> {
    use Const::*;
    Ok(match e {
        Expr::Imm(Imm::Int(v), _) => Int(*v as u64, false),
        // 0f/0d literals keep their exact value; a `.f32` one is widened for arithmetic.
        Expr::Imm(Imm::F32(b), _) => Float(f32::from_bits(*b) as f64),
        Expr::Imm(Imm::F64(b), _) => Float(f64::from_bits(*b)),
        Expr::Sym(_) | Expr::Generic(..) | Expr::Mask(..) => return Err(EvalError::NotConstant),
        Expr::Cast(t, x, _) => match eval(x)? {
            Int(v, _) => Int(v, *t == Type::U64),
            Float(_) => return Err(EvalError::FloatOperand),
        },
        Expr::Unary(op, x, _) => match (op, eval(x)?) {
            (UnOp::Plus, v) => v,
            (UnOp::Neg, Int(v, u)) => Int(v.wrapping_neg(), u),
            (UnOp::Neg, Float(f)) => Float(-f),
            (UnOp::Not, Int(v, _)) => truth(v == 0),
            (UnOp::BitNot, Int(v, _)) => Int(!v, true),
            (_, Float(_)) => return Err(EvalError::FloatOperand),
        },
        Expr::Cond(c, a, b, _) => {
            let Int(c, _) = eval(c)? else {
                return Err(EvalError::FloatOperand);
            };
            match (eval(a)?, eval(b)?) {
                (Int(x, ux), Int(y, uy)) => Int(if c != 0 { x } else { y }, ux || uy),
                (Float(x), Float(y)) => Float(if c != 0 { x } else { y }),
                _ => return Err(EvalError::FloatOperand),
            }
        }
        Expr::Binary(op, a, b, _) => binary(*op, eval(a)?, eval(b)?)?,
    })
}

fn binary(op: BinOp, a: Const, b: Const) -> Result<Const, EvalError> {
    use BinOp::*;
    use Const::*;
    if let (Float(x), Float(y)) = (a, b) {
        return Ok(match op {
            Add => Float(x + y),
            Sub => Float(x - y),
            Mul => Float(x * y),
            Div => Float(x / y),
            Lt => truth(x < y),
            Gt => truth(x > y),
            Le => truth(x <= y),
            Ge => truth(x >= y),
            Eq => truth(x == y),
            Ne => truth(x != y),
            _ => return Err(EvalError::FloatOperand),
        });
    }
    let (Int(x, ux), Int(y, uy)) = (a, b) else {
        return Err(EvalError::FloatOperand);
    };
    // The usual arithmetic conversions: unsigned if either side is.
    let u = ux || uy;
    let ord = |x: u64, y: u64| if u { x.cmp(&y) } else { (x as i64).cmp(&(y as i64)) };
    Ok(match op {
        Add => Int(x.wrapping_add(y), u),
        Sub => Int(x.wrapping_sub(y), u),
        Mul => Int(x.wrapping_mul(y), u),
        Div if y == 0 => return Err(EvalError::DivideByZero),
        Div if u => Int(x / y, true),
        Div => Int((x as i64).wrapping_div(y as i64) as u64, false),
        Rem if y == 0 => return Err(EvalError::DivideByZero),
        // Remainder reads both sides as unsigned (unlike C).
        Rem => Int(x % y, u),
        Shl => Int(if y >= 64 { 0 } else { x << y }, ux),
        Shr if ux => Int(if y >= 64 { 0 } else { x >> y }, true),
        Shr => Int(((x as i64) >> y.min(63)) as u64, false),
        And => Int(x & y, u),
        Or => Int(x | y, u),
        Xor => Int(x ^ y, u),
        LogAnd => truth(x != 0 && y != 0),
        LogOr => truth(x != 0 || y != 0),
        Eq => truth(x == y),
        Ne => truth(x != y),
        Lt => truth(ord(x, y).is_lt()),
        Gt => truth(ord(x, y).is_gt()),
        Le => truth(ord(x, y).is_le()),
        Ge => truth(ord(x, y).is_ge()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(src: &str) -> Result<Const, EvalError> {
        let text = format!(".global .u64 x = {src};");
        let (m, d) = crate::parse(&text);
        assert!(d.is_empty(), "{d:?}");
        let crate::ast::Item::Var(v) = &m.items[0] else {
            panic!()
        };
        let Some(crate::ast::Init::Scalar(e)) = &v.init else {
            panic!()
        };
        eval(e)
    }

    #[test]
    fn integer_rules_of_the_manual() {
        assert_eq!(ev("1 + 2 * 3"), Ok(Const::Int(7, false)));
        assert_eq!(ev("(1 + 2) * 3"), Ok(Const::Int(9, false)));
        assert_eq!(ev("-7 / 2"), Ok(Const::Int(-3i64 as u64, false)));
        // Unsigned division once either side is unsigned.
        assert_eq!(ev("-8 / 2U"), Ok(Const::Int((u64::MAX - 7) / 2, true)));
        // Remainder is unsigned whatever the signs.
        assert_eq!(ev("-1 % 10"), Ok(Const::Int(u64::MAX % 10, false)));
        assert_eq!(ev("-16 >> 2"), Ok(Const::Int(-4i64 as u64, false)));
        assert_eq!(ev("(.u64) -16 >> 2"), Ok(Const::Int((-16i64 as u64) >> 2, true)));
        assert_eq!(ev("~0"), Ok(Const::Int(u64::MAX, true)));
        assert_eq!(ev("-1 < 0"), Ok(Const::Int(1, false)));
        assert_eq!(ev("-1 < 0U"), Ok(Const::Int(0, false)));
        assert_eq!(ev("0xfabc123400000000 > 0"), Ok(Const::Int(1, false)));
        assert_eq!(ev("1 ? 2 : 3"), Ok(Const::Int(2, false)));
        assert_eq!(ev("1 << 3 | 1 && 0 || 4 == 4"), Ok(Const::Int(1, false)));
        assert_eq!(ev("5 & 3 ^ 1"), Ok(Const::Int(0, false)));
        assert_eq!(ev("1 / 0"), Err(EvalError::DivideByZero));
        assert_eq!(ev("1.5 * 2.0"), Ok(Const::Float(3.0)));
        assert_eq!(ev("1.5 % 2.0"), Err(EvalError::FloatOperand));
        assert_eq!(ev("sym + 4"), Err(EvalError::NotConstant));
    }
}
