//! PTX fundamental types and state spaces.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    Tf32,
    F32,
    F64,
    /// Opaque texture, sampler and surface handles (`.texref`, `.samplerref`, `.surfref`).
    Texref,
    Samplerref,
    Surfref,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pred,
    Bits,
    Unsigned,
    Signed,
    Float,
    Opaque,
}

impl Type {
    pub const ALL: [(&'static str, Type); 24] = [
        (".pred", Type::Pred),
        (".b8", Type::B8),
        (".b16", Type::B16),
        (".b32", Type::B32),
        (".b64", Type::B64),
        (".b128", Type::B128),
        (".u8", Type::U8),
        (".u16", Type::U16),
        (".u32", Type::U32),
        (".u64", Type::U64),
        (".s8", Type::S8),
        (".s16", Type::S16),
        (".s32", Type::S32),
        (".s64", Type::S64),
        (".f16", Type::F16),
        (".f16x2", Type::F16x2),
        (".bf16", Type::Bf16),
        (".bf16x2", Type::Bf16x2),
        (".tf32", Type::Tf32),
        (".f32", Type::F32),
        (".f64", Type::F64),
        (".texref", Type::Texref),
        (".samplerref", Type::Samplerref),
        (".surfref", Type::Surfref),
    ];

    pub fn from_dot(s: &str) -> Option<Type> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|&(_, t)| t)
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map(|&(n, _)| n)
            .unwrap_or("?")
    }

    /// Size in bits; predicates count as 1.
    pub fn bits(self) -> u32 {
        use Type::*;
        match self {
            Pred => 1,
            B8 | U8 | S8 => 8,
            B16 | U16 | S16 | F16 | Bf16 => 16,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 => 32,
            B64 | U64 | S64 | F64 | Texref | Samplerref | Surfref => 64,
            B128 => 128,
        }
    }

    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub fn kind(self) -> Kind {
        use Type::*;
        match self {
            Pred => Kind::Pred,
            B8 | B16 | B32 | B64 | B128 => Kind::Bits,
            U8 | U16 | U32 | U64 => Kind::Unsigned,
            S8 | S16 | S32 | S64 => Kind::Signed,
            F16 | F16x2 | Bf16 | Bf16x2 | Tf32 | F32 | F64 => Kind::Float,
            Texref | Samplerref | Surfref => Kind::Opaque,
        }
    }

    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }
    pub fn is_signed(self) -> bool {
        self.kind() == Kind::Signed
    }

    /// The manual's operand-type rule (section 6.4.1 "Operand Size"): a register may be used by an
    /// instruction of another type when their sizes agree and either side is a bit-size type, or both are
    /// integers; predicates only match predicates.
    pub fn compatible_with(self, inst: Type) -> bool {
        if self == inst {
            return true;
        }
        match (self.kind(), inst.kind()) {
            (Kind::Pred, _) | (_, Kind::Pred) => false,
            (Kind::Bits, _) | (_, Kind::Bits) => self.bits() == inst.bits(),
            (Kind::Signed | Kind::Unsigned, Kind::Signed | Kind::Unsigned) => self.bits() == inst.bits(),
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Reg,
    Sreg,
    Const,
    Global,
    Local,
    Param,
    Shared,
    Tex,
    Generic,
}

impl Space {
    pub fn from_dot(s: &str) -> Option<Space> {
        Some(match s {
            ".reg" => Space::Reg,
            ".sreg" => Space::Sreg,
            ".const" => Space::Const,
            ".global" => Space::Global,
            ".local" => Space::Local,
            ".param" | ".param::entry" | ".param::func" => Space::Param,
            ".shared" | ".shared::cta" | ".shared::cluster" => Space::Shared,
            ".tex" => Space::Tex,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Reg => ".reg",
            Space::Sreg => ".sreg",
            Space::Const => ".const",
            Space::Global => ".global",
            Space::Local => ".local",
            Space::Param => ".param",
            Space::Shared => ".shared",
            Space::Tex => ".tex",
            Space::Generic => "generic",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operand_size_rule() {
        assert!(Type::B32.compatible_with(Type::F32));
        assert!(Type::F32.compatible_with(Type::B32));
        assert!(Type::U32.compatible_with(Type::S32));
        assert!(!Type::U32.compatible_with(Type::F32));
        assert!(!Type::B64.compatible_with(Type::F32));
        assert!(!Type::Pred.compatible_with(Type::B32));
    }

    #[test]
    fn names_round_trip() {
        for (n, t) in Type::ALL {
            assert_eq!(Type::from_dot(n), Some(t));
            assert_eq!(t.name(), n);
        }
    }
}
