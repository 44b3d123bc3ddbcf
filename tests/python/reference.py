#!/usr/bin/env python3
"""Reference values for the file-driven tests in tests/ptx-host/*.ptx.

Every expected value is computed here from the PTX ISA manual's definitions with exact rational
arithmetic (fractions.Fraction) and a rounding routine of our own, so the tests share no code with
the engine. Each family below owns the `// run:` line (its input values) and the `// out:` lines of
one .ptx file.

    python3 tests/python/reference.py            # check that every file's run/out lines match
    python3 tests/python/reference.py --write    # rewrite them from the formulas
    python3 tests/python/reference.py --print    # print them
    python3 tests/python/reference.py --selftest # the rounding code against the host's IEEE arithmetic

Outputs are integers (bit patterns for floats), so -0.0, NaN payloads and subnormals compare exactly.
"""

import math
import os
import re
import struct
import sys
from fractions import Fraction as F

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = os.path.join(HERE, "..", "ptx-host")
M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF

# ---------------------------------------------------------------------------------------------
# Binary floating-point formats and correct rounding
# ---------------------------------------------------------------------------------------------


class Fmt:
    """A binary format with `e` exponent bits and `m` stored fraction bits.

    `ieee` formats reserve the top exponent for inf/NaN; e4m3 (`ieee=False`) has no infinity and
    only the all-ones pattern S.1111.111 is NaN, so its largest finite value is 448.
    """

    def __init__(self, name, e, m, ieee=True, nan=None):
        self.name, self.e, self.m, self.ieee = name, e, m, ieee
        self.bias = (1 << (e - 1)) - 1
        self.emin = 1 - self.bias
        self.bits = 1 + e + m
        self.sign = 1 << (e + m)
        self.nan = nan
        if ieee:
            self.emax = self.bias
            self.maxf = F(2 ** (m + 1) - 1, 2**m) * F(2) ** self.emax
        else:  # e4m3: top exponent holds normal values except mantissa all ones
            self.emax = self.bias + 1
            self.maxf = F(2 ** (m + 1) - 2, 2**m) * F(2) ** self.emax

    def inf(self, neg):
        assert self.ieee
        return ((1 << self.e) - 1) << self.m | (self.sign if neg else 0)


F32 = Fmt("f32", 8, 23, nan=0x7FFFFFFF)
F64 = Fmt("f64", 11, 52, nan=0xFFF8000000000000)  # the default NaN (CUDART_NAN)
F16 = Fmt("f16", 5, 10, nan=0x7FFF)
BF16 = Fmt("bf16", 8, 7, nan=0x7FFF)
TF32 = Fmt("tf32", 8, 10)  # stored in the upper 19 bits of an f32 pattern
E4M3 = Fmt("e4m3", 4, 3, ieee=False, nan=0x7F)
E5M2 = Fmt("e5m2", 5, 2, nan=0x7F)


class V:
    """A decoded value: kind 'num' (with exact magnitude `x` >= 0), 'inf' or 'nan'; `neg` is the sign bit."""

    def __init__(self, kind, neg, x=F(0)):
        self.kind, self.neg, self.x = kind, neg, x

    def val(self):
        assert self.kind == "num"
        return -self.x if self.neg else self.x

    @property
    def nan(self):
        return self.kind == "nan"

    @property
    def inf(self):
        return self.kind == "inf"

    @property
    def zero(self):
        return self.kind == "num" and self.x == 0


def num(q):
    q = F(q)
    return V("num", q < 0, abs(q))


def decode(fmt, b):
    neg = bool(b & fmt.sign)
    ex = (b >> fmt.m) & ((1 << fmt.e) - 1)
    man = b & ((1 << fmt.m) - 1)
    top = (1 << fmt.e) - 1
    if fmt.ieee and ex == top:
        return V("nan" if man else "inf", neg)
    if not fmt.ieee and fmt.nan is not None and ex == top and man == (1 << fmt.m) - 1:
        return V("nan", neg)
    if ex == 0:
        x = F(man, 2**fmt.m) * F(2) ** fmt.emin
    else:
        x = F((1 << fmt.m) + man, 2**fmt.m) * F(2) ** (ex - fmt.bias)
    return V("num", neg, x)


def is_sub(fmt, b):
    v = decode(fmt, b)
    return v.kind == "num" and v.x != 0 and v.x < F(2) ** fmt.emin


def floor_log2(x):
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if F(2) ** e > x:
        e -= 1
    if F(2) ** (e + 1) <= x:
        e += 1
    return e


def round_mag(fmt, x, neg, mode):
    """Rounds magnitude x > 0 (sign `neg`) to an integer multiple of the format's quantum near x.
    Returns the rounded magnitude (may exceed maxf: the caller handles overflow)."""
    e = max(floor_log2(x), fmt.emin)
    q = F(2) ** (e - fmt.m)
    n = x / q
    lo = math.floor(n)
    rem = n - lo
    if rem == 0:
        k = lo
    elif mode == "rn":
        k = lo + (1 if rem > F(1, 2) or (rem == F(1, 2) and lo % 2 == 1) else 0)
    elif mode == "rna":
        k = lo + (1 if rem >= F(1, 2) else 0)
    elif mode == "rz":
        k = lo
    elif mode == "rm":
        k = lo + (1 if neg else 0)
    elif mode == "rp":
        k = lo + (0 if neg else 1)
    else:
        raise ValueError(mode)
    return k * q


def encode_mag(fmt, x, neg):
    """Bits of an exactly representable magnitude x (finite, <= maxf)."""
    s = fmt.sign if neg else 0
    if x == 0:
        return s
    if x < F(2) ** fmt.emin:
        man = x / (F(2) ** (fmt.emin - fmt.m))
        assert man.denominator == 1
        return s | int(man)
    e = floor_log2(x)
    man = x / F(2) ** (e - fmt.m) - (1 << fmt.m)
    assert man.denominator == 1 and 0 <= man < (1 << fmt.m), (fmt.name, x)
    return s | (e + fmt.bias) << fmt.m | int(man)


def rnd(fmt, v, mode="rn", ftz=False, sat=False, satfinite=False, relu=False):
    """Rounds a V (exact value) into fmt and returns the bits. NaN gives the canonical NaN."""
    if v.nan:
        if sat:
            return 0
        return fmt.nan
    if relu and v.neg and not v.zero:
        return 0
    if v.inf:
        if sat:
            return 0 if v.neg else encode_mag(fmt, F(1), False)
        if satfinite or not fmt.ieee:
            return encode_mag(fmt, fmt.maxf, v.neg)
        return fmt.inf(v.neg)
    if sat:
        if v.neg and not v.zero:
            return 0
        if v.x >= 1:
            return encode_mag(fmt, F(1), False)
    if v.x == 0:
        return fmt.sign if (v.neg and not sat and not relu) else 0
    r = round_mag(fmt, v.x, v.neg, mode)
    if r > fmt.maxf:
        to_inf = {
            "rn": True,
            "rna": True,
            "rz": False,
            "rm": v.neg,
            "rp": not v.neg,
        }[mode]
        if to_inf and fmt.ieee and not satfinite:
            return fmt.inf(v.neg)
        return encode_mag(fmt, fmt.maxf, v.neg)
    if ftz and r != 0 and r < F(2) ** fmt.emin:
        return fmt.sign if v.neg else 0
    if relu and v.neg:
        return 0
    return encode_mag(fmt, r, v.neg)


def f64bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def h(v, width=8):
    return "0x%0*x" % (width, v)


# ---------------------------------------------------------------------------------------------
# Exact IEEE operations on V values (signs of zeros and infinities per IEEE 754 / the manual)
# ---------------------------------------------------------------------------------------------


def zero_sum_sign(a_neg, b_neg, mode):
    """Sign of an exact zero sum: -0 only if both addends are -0, or (for x + -x) in round-down."""
    if a_neg and b_neg:
        return True
    if a_neg != b_neg:
        return mode == "rm"
    return False


def op_add(a, b, mode):
    if a.nan or b.nan:
        return V("nan", False)
    if a.inf and b.inf:
        return V("nan", False) if a.neg != b.neg else V("inf", a.neg)
    if a.inf:
        return a
    if b.inf:
        return b
    s = a.val() + b.val()
    if s == 0:
        if a.zero and b.zero:
            return V("num", zero_sum_sign(a.neg, b.neg, mode))
        return V("num", mode == "rm")
    return num(s)


def op_neg(a):
    return V(a.kind, not a.neg, a.x)


def op_mul(a, b):
    if a.nan or b.nan:
        return V("nan", False)
    neg = a.neg != b.neg
    if (a.inf and b.zero) or (b.inf and a.zero):
        return V("nan", False)
    if a.inf or b.inf:
        return V("inf", neg)
    return V("num", neg, a.x * b.x)


def op_fma(a, b, c, mode):
    p = op_mul(a, b)
    if p.nan or c.nan:
        return V("nan", False)
    if p.kind == "num" and c.kind == "num" and p.val() + c.val() == 0:
        if p.zero and c.zero:
            return V("num", zero_sum_sign(p.neg, c.neg, mode))
        return V("num", mode == "rm")
    return op_add(p, c, mode)


def op_div(a, b):
    if a.nan or b.nan:
        return V("nan", False)
    neg = a.neg != b.neg
    if (a.inf and b.inf) or (a.zero and b.zero):
        return V("nan", False)
    if a.inf or b.zero:
        return V("inf", neg)
    if b.inf:
        return V("num", neg)
    return V("num", neg, a.x / b.x)


def sqrt_round(fmt, a, mode, ftz=False):
    """sqrt rounded into fmt: exact by bracketing with integer square roots."""
    if a.nan or (a.neg and not a.zero):
        return fmt.nan
    if a.zero:
        return fmt.sign if a.neg else 0
    if a.inf:
        return fmt.inf(False)
    # sqrt(x) scaled to have many more bits than fmt: floor(sqrt(x * 4^k)) / 2^k, exactness known.
    k = fmt.m + 80 + max(0, -floor_log2(a.x)) // 2
    n = a.x * F(4) ** k
    r = math.isqrt(math.floor(n))
    exact = F(r * r) == n
    approx = F(r, 2**k)
    if not exact:
        approx += F(1, 2 ** (k + 1))  # strictly between r and r+1: keeps the rounding decisions right
    return rnd(fmt, V("num", False, approx), mode, ftz=ftz)


def ftz_in(fmt, b):
    """Input flush: subnormal patterns become sign-preserving zero."""
    return (b & fmt.sign) if is_sub(fmt, b) else b


# ---------------------------------------------------------------------------------------------
# File plumbing
# ---------------------------------------------------------------------------------------------


def fmt_list(ty, vals):
    w = {"u8": 2, "u16": 4, "u32": 8, "u64": 16}[ty]
    return "%s[%s]" % (ty, ",".join(h(v & ((1 << (4 * w)) - 1), w) for v in vals))


FAMILIES = []


def family(fname):
    def deco(fn):
        FAMILIES.append((fname, fn))
        return fn

    return deco


# ---------------------------------------------------------------------------------------------
# 1. f32 / f64 arithmetic
# ---------------------------------------------------------------------------------------------

MODES = ["rn", "rz", "rm", "rp"]

# (a, b, c) triples as bit patterns: chosen so that the rounding modes disagree, plus specials.
F32_IN = [
    (0x3F800000, 0x33800001, 0x33000000),  # 1 + (2^-24 + ulp): above the tie
    (0x3F800001, 0x3F800001, 0xBF800000),  # (1+u)^2 - 1
    (0x40490FDB, 0x402DF854, 0x3EAAAAAB),  # pi, e, 1/3
    (0xC0490FDB, 0x3DCCCCCD, 0x3F000000),  # -pi, 0.1, 0.5
    (0x3F800000, 0x40400000, 0x00000000),  # 1/3
    (0xBF800000, 0x40400000, 0x80000000),  # -1/3
    (0x7F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF),  # overflow
    (0xFF7FFFFF, 0x40000000, 0x7F7FFFFF),  # negative overflow
    (0x00800000, 0x3F000000, 0x80400000),  # subnormal results (and .ftz)
    (0x00000001, 0x3E800000, 0x00000003),  # tiny subnormals
    (0x80000000, 0x00000000, 0x80000000),  # -0, +0
    (0x00000000, 0x80000000, 0x00000000),  # +0, -0
    (0x7F800000, 0xFF800000, 0x3F800000),  # inf - inf
    (0x7FC00000, 0x3F800000, 0x40000000),  # NaN
    (0x3F3504F3, 0xFFC00001, 0x3F800000),  # NaN with payload in b
    (0x40000000, 0x3F800000, 0xBF800000),  # 2, 1
    (0x3F7FFFFF, 0x3F800001, 0xBF800000),  # just below and above 1
]
F64_IN = [
    (0x3FF0000000000000, 0x3CA0000000000001, 0x3C90000000000000),
    (0x3FF0000000000001, 0x3FF0000000000001, 0xBFF0000000000000),
    (0x400921FB54442D18, 0x4005BF0A8B145769, 0x3FD5555555555555),
    (0xC00921FB54442D18, 0x3FB999999999999A, 0x3FE0000000000000),
    (0x3FF0000000000000, 0x4008000000000000, 0x0000000000000000),
    (0xBFF0000000000000, 0x4008000000000000, 0x8000000000000000),
    (0x7FEFFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF),
    (0x0010000000000000, 0x3FE0000000000000, 0x8008000000000000),
    (0x0000000000000001, 0x3FD0000000000000, 0x0000000000000003),
    (0x8000000000000000, 0x0000000000000000, 0x8000000000000000),
    (0x0000000000000000, 0x8000000000000000, 0x0000000000000000),
    (0x7FF0000000000000, 0xFFF0000000000000, 0x3FF0000000000000),
    (0x7FF8000000000000, 0x3FF0000000000000, 0x4000000000000000),
    (0x4000000000000000, 0x3FF0000000000000, 0xBFF0000000000000),
    (0x3FEFFFFFFFFFFFFF, 0x3FF0000000000001, 0xBFF0000000000000),
]


class Xorshift:
    """A fixed generator (xorshift64*), so the random rows never change between Python versions."""

    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s ^= self.s >> 12
        self.s ^= (self.s << 25) & M64
        self.s ^= self.s >> 27
        return (self.s * 0x2545F4914F6CDD1D) & M64


def random_triples(fmt, n, seed):
    """Operands with nearby exponents (so sums round instead of absorbing) and c close to -a*b (so
    fma cancels): the rounding modes disagree on almost every result."""
    g = Xorshift(seed)
    out = []
    for _ in range(n):
        def pick(spread):
            r = g.next()
            e = fmt.bias + (r % (2 * spread + 1)) - spread
            return (r >> 63) << (fmt.bits - 1) | e << fmt.m | (g.next() & ((1 << fmt.m) - 1))

        a, b = pick(6), pick(6)
        p = rnd(fmt, op_mul(decode(fmt, a), decode(fmt, b)))
        c = (p ^ fmt.sign) + (g.next() % 5) - 2 if g.next() % 2 else pick(8)
        out.append((a, b, c & ((1 << fmt.bits) - 1)))
    return out


F32_IN += random_triples(F32, 16, 0x1234567)
F64_IN += random_triples(F64, 18, 0x7654321)


def minmax(fmt, a, b, is_max, nan_mode=False, xorsign=False):
    """min/max per the manual's pseudocode; +0 > -0."""
    xs = None
    if xorsign:
        xs = bool(a & fmt.sign) != bool(b & fmt.sign)
        a &= ~fmt.sign
        b &= ~fmt.sign
    va, vb = decode(fmt, a), decode(fmt, b)
    if va.nan and vb.nan:
        return fmt.nan
    if nan_mode and (va.nan or vb.nan):
        return fmt.nan
    if va.nan:
        d = b
    elif vb.nan:
        d = a
    else:

        def key(v):
            if v.inf:
                return (F(-1) if v.neg else F(1)) * F(2) ** 20000, 0
            return v.val(), (0 if v.neg else 1)

        ka, kb = key(va), key(vb)
        if is_max:
            d = a if ka > kb else b
        else:
            d = a if ka < kb else b
    if xorsign:
        d = (d & ~fmt.sign) | (fmt.sign if xs else 0)
    return d


def testp_bits(fmt, a):
    v = decode(fmt, a)
    finite = v.kind == "num"
    sub = is_sub(fmt, a)
    normal = finite and not sub  # the manual counts +0 and -0 as normal (an H100 agrees)
    bits = [finite, v.inf, not v.nan, v.nan, normal, sub]
    return sum(int(b) << i for i, b in enumerate(bits))


def nan_payload(fmt, bits, *ins):
    """f64 keeps NaN payloads (manual 9.7.3, "NaN payloads are supported for double-precision
    instructions"): a NaN result of an operation with a NaN input is that input, quieted; an
    invalid operation gives the default NaN. f32 returns its canonical NaN whatever the inputs."""
    if fmt is F64 and decode(fmt, bits).nan:
        for x in ins:
            if decode(fmt, x).nan:
                return x | (1 << (fmt.m - 1))
    return bits


def float_ops(fmt, a, b, c):
    """The outputs one thread of float_arith.ptx writes for one (a, b, c): see the kernel's comments."""
    A, B, C = decode(fmt, a), decode(fmt, b), decode(fmt, c)
    P = lambda bits, *ins: nan_payload(fmt, bits, *ins)
    out = []
    for m in MODES:
        out.append(P(rnd(fmt, op_add(A, B, m), m), a, b))
    for m in MODES:
        out.append(P(rnd(fmt, op_add(A, op_neg(B), m), m), a, b))
    for m in MODES:
        out.append(P(rnd(fmt, op_mul(A, B), m), a, b))
    for m in MODES:
        out.append(P(rnd(fmt, op_fma(A, B, C, m), m), a, b, c))
    for m in MODES:
        out.append(P(rnd(fmt, op_div(A, B), m), a, b))
    for m in MODES:
        out.append(P(sqrt_round(fmt, A, m), a))
    for m in MODES:
        out.append(P(rnd(fmt, op_div(num(1), A), m), a))
    out.append(minmax(fmt, a, b, False))
    out.append(minmax(fmt, a, b, True))
    out.append(testp_bits(fmt, a))
    out.append((b & ~fmt.sign) | (a & fmt.sign))  # copysign d, a, b: sign of a on b
    if fmt is F32:
        out.append(minmax(fmt, a, b, False, nan_mode=True))
        out.append(minmax(fmt, a, b, True, nan_mode=True))
        out.append(minmax(fmt, a, b, False, xorsign=True))
        out.append(minmax(fmt, a, b, True, xorsign=True))
        out.append(rnd(fmt, op_add(A, B, "rn"), "rn", sat=True))
        out.append(rnd(fmt, op_fma(A, B, C, "rn"), "rn", sat=True))
        fa, fb, fc = (decode(fmt, ftz_in(fmt, x)) for x in (a, b, c))
        out.append(rnd(fmt, op_add(fa, fb, "rn"), "rn", ftz=True))
        out.append(rnd(fmt, op_mul(fa, fb), "rz", ftz=True))
        out.append(rnd(fmt, op_fma(fa, fb, fc, "rn"), "rn", ftz=True))
        out.append(rnd(fmt, op_div(fa, fb), "rn", ftz=True))
        out.append(sqrt_round(fmt, fa, "rn", ftz=True))
        out.append(minmax(fmt, ftz_in(fmt, a), ftz_in(fmt, b), False))
    out.append(sign_op(fmt, a, lambda x: x ^ fmt.sign))  # neg
    out.append(sign_op(fmt, a, lambda x: x & ~fmt.sign))  # abs
    return out


def sign_op(fmt, a, op):
    """neg/abs as an H100 computes them: an f32 NaN gives the canonical NaN, an f64 NaN comes back
    quieted with its sign and payload (the manual leaves f32's unspecified)."""
    if not decode(fmt, a).nan:
        return op(a)
    return fmt.nan if fmt is F32 else a | 1 << (fmt.m - 1)


@family("float_arith.ptx")
def fam_float():
    o32, o64 = [], []
    for t in F32_IN:
        o32 += float_ops(F32, *t)
    for t in F64_IN:
        o64 += float_ops(F64, *t)
    n32, n64 = len(F32_IN), len(F64_IN)
    k32, k64 = len(o32) // n32, len(o64) // n64
    ins = lambda rows, i, ty: fmt_list(ty, [r[i] for r in rows])
    run = "kernel=k grid=1 block=%d args=%s;%s;%s;%s;%s;%s;u32*%d;u64*%d;u32:%d" % (
        n32,
        ins(F32_IN, 0, "u32"), ins(F32_IN, 1, "u32"), ins(F32_IN, 2, "u32"),
        ins(F64_IN + [(0, 0, 0)] * (n32 - n64), 0, "u64"),
        ins(F64_IN + [(0, 0, 0)] * (n32 - n64), 1, "u64"),
        ins(F64_IN + [(0, 0, 0)] * (n32 - n64), 2, "u64"),
        len(o32), len(o64), n64,
    )
    return run, [(6, "u32", o32), (7, "u64", o64)]


# ---------------------------------------------------------------------------------------------
# 1b. NaN payloads through chains of f32 operations: every result a thread can see as bits is the
# canonical NaN (neg and abs too, as on an H100), whichever NaN (payload, sign, signalling) went in.
# ---------------------------------------------------------------------------------------------

NAN_IN = [
    (0x40000000, 0x3F800000, 0x40400000),  # 2, 1, 3
    (0x7FC00001, 0x3F800000, 0x40000000),  # quiet NaN with a payload
    (0xFFC00123, 0x3F800000, 0x40000000),  # negative quiet NaN with a payload
    (0x7F800001, 0x3F800000, 0x40000000),  # signalling NaN
    (0x7F800000, 0xFF800000, 0x3F800000),  # inf - inf makes a NaN
    (0x3F800000, 0x40000000, 0x7FC00042),  # the NaN comes in late in the chain
    (0xBF800000, 0x3F800000, 0x00000000),  # -1 + 1: zeros
    (0x7F800000, 0x00000000, 0x3F800000),  # inf * 0 makes a NaN
]
NAN_K, NAN_LOOP = 7, 4


@family("nan_chains.ptx")
def fam_nan():
    out = []
    for a, b, c in NAN_IN:
        A, B, C = (decode(F32, x) for x in (a, b, c))
        ab = op_add(A, B, "rn")
        o = [rnd(F32, op_add(op_mul(ab, C), op_neg(B), "rn"))]  # ((a + b) * c) - b
        o.append(rnd(F32, op_neg(ab)))  # neg(a + b): a NaN stays the canonical one
        o.append(rnd(F32, op_mul(A, B)) & ~F32.sign & M32)  # abs(a * b)
        s = num(0)
        for _ in range(NAN_LOOP):  # s = fma(s, c, a) in a loop
            s = decode(F32, rnd(F32, op_fma(s, C, A, "rn")))
        o.append(rnd(F32, s))
        o.append(int(not ab.nan and not C.nan and ab.kind != "nan" and cmp_gt(ab, C)))  # setp.gt (a + b), c
        o.append(rnd(F32, C if ab.nan else ab if C.nan else min_num(ab, C)))  # min(a + b, c)
        o.append(rnd(F32, op_add(A, op_neg(C), "rn")))  # (a - c) as bits, through an integer op
        assert len(o) == NAN_K
        out += o
    cols = lambda i: fmt_list("u32", [r[i] for r in NAN_IN])
    run = "kernel=k grid=1 block=%d args=%s;%s;%s;u32*%d" % (len(NAN_IN), cols(0), cols(1), cols(2), len(out))
    return run, [(3, "u32", out)]


def cmp_gt(x, y):
    if x.inf or y.inf:
        xv = (-1 if x.neg else 1) * (2 if x.inf else 0)
        yv = (-1 if y.neg else 1) * (2 if y.inf else 0)
        return xv > yv
    return x.val() > y.val()


def min_num(x, y):
    """min of two non-NaN values, -0 below +0."""
    if x.inf or y.inf:
        if x.inf and x.neg or (y.inf and not y.neg):
            return x
        return y
    if x.val() == y.val():
        return x if x.neg else y
    return x if x.val() < y.val() else y


# ---------------------------------------------------------------------------------------------
# 1c. Guards on a thread index (`if (base + tid < n)`), which the host optimiser versions per CTA:
# bases where the CTA's indices cross the signed and the unsigned wrap, and CTAs wholly in or out.
# ---------------------------------------------------------------------------------------------

GUARD_BLOCK, GUARD_GRID = 64, 4
GUARD_CASES = [  # (base of CTA 0, CTA stride, n)
    (0x7FFFFFC0, 32, 0x7FFFFFF0),  # the indices cross INT_MAX
    (0xFFFFFFC0, 32, 0x00000010),  # the indices cross 2^32
    (0, 64, 100),  # CTA 0 all in, CTA 1 partly, CTAs 2 and 3 out
]


def s32(x):
    x &= M32
    return x - (1 << 32) if x >> 31 else x


@family("guards.ptx")
def fam_guards():
    out = []
    for base, stride, n in GUARD_CASES:
        for cta in range(GUARD_GRID):
            for t in range(GUARD_BLOCK):
                x = (base + cta * stride + t) & M32
                o = [int(s32(x) < s32(n)), int(x < n), int(s32(x) < s32(n)), int(s32(n) > s32(x)), int(x >= n)]
                out += o
    run = "kernel=k grid=%d block=%d args=u32[%s];u32[%s];u32[%s];u32*%d" % (
        GUARD_GRID, GUARD_BLOCK,
        ",".join(h(c[0]) for c in GUARD_CASES), ",".join(h(c[1]) for c in GUARD_CASES),
        ",".join(h(c[2]) for c in GUARD_CASES), len(out))
    return run, [(3, "u32", out)]


# ---------------------------------------------------------------------------------------------
# 2. Half precision: f16, bf16 and their x2 forms
# ---------------------------------------------------------------------------------------------

F16_IN = [
    (0x3C00, 0x1001, 0x0000),  # 1 + just over half an ulp
    (0x3C01, 0x3C01, 0xBC00),
    (0x4248, 0x4170, 0x3555),
    (0x7BFF, 0x7BFF, 0xFBFF),  # overflow
    (0x0400, 0x3800, 0x8200),  # subnormal results (and .ftz)
    (0x0001, 0x3400, 0x0003),  # tiny subnormals
    (0x8000, 0x0000, 0x8000),
    (0x0000, 0x8000, 0x0000),
    (0x7C00, 0xFC00, 0x3C00),  # inf - inf
    (0x7E00, 0x3C00, 0x4000),  # NaN
    (0x3A00, 0xFE01, 0x3C00),  # NaN with payload in b
    (0xBC00, 0x4000, 0x3800),  # negative results: .relu and .sat give 0
    (0x3800, 0x3800, 0x3A00),  # .sat reaches 1.0
    (0x3BFF, 0x3C01, 0xBC00),
]
BF16_IN = [
    (0x3F80, 0x3B81, 0x0000),
    (0x3F81, 0x3F81, 0xBF80),
    (0x4049, 0x402E, 0x3EAB),
    (0x7F7F, 0x7F7F, 0xFF7F),
    (0x0080, 0x3F00, 0x8040),
    (0x0001, 0x3E80, 0x0003),
    (0x8000, 0x0000, 0x8000),
    (0x0000, 0x8000, 0x0000),
    (0x7F80, 0xFF80, 0x3F80),
    (0x7FC0, 0x3F80, 0x4000),
    (0x3F35, 0xFFC1, 0x3F80),
    (0xBF80, 0x4000, 0x3F00),
    (0x3F00, 0x3F00, 0x3F40),
    (0x3F7F, 0x3F81, 0xBF80),
]

F16_IN += random_triples(F16, 16, 0xF16)
BF16_IN += random_triples(BF16, 16, 0xBF16)


CMP = {
    "eq": lambda o, lt, eq: o and eq,
    "ne": lambda o, lt, eq: o and not eq,
    "lt": lambda o, lt, eq: o and lt,
    "le": lambda o, lt, eq: o and (lt or eq),
    "gt": lambda o, lt, eq: o and not lt and not eq,
    "ge": lambda o, lt, eq: o and not lt,
    "equ": lambda o, lt, eq: not o or eq,
    "neu": lambda o, lt, eq: not o or not eq,
    "ltu": lambda o, lt, eq: not o or lt,
    "leu": lambda o, lt, eq: not o or lt or eq,
    "gtu": lambda o, lt, eq: not o or (not lt and not eq),
    "geu": lambda o, lt, eq: not o or not lt,
    "num": lambda o, lt, eq: o,
    "nan": lambda o, lt, eq: not o,
}


def fcmp(fmt, op, a, b):
    """Float comparison per the manual's CmpOp table (+0 == -0; unordered if either is NaN)."""
    va, vb = decode(fmt, a), decode(fmt, b)
    o = not va.nan and not vb.nan
    lt = eq = False
    if o:

        def key(v):
            return (F(-1) if v.neg else F(1)) * F(2) ** 20000 if v.inf else v.val()

        lt, eq = key(va) < key(vb), key(va) == key(vb)
    return CMP[op](o, lt, eq)


def half_lane_ops(fmt, a, b, c):
    """Per-lane results, in kernel order, for one lane of the x2 forms."""
    A, B, C = decode(fmt, a), decode(fmt, b), decode(fmt, c)
    one = encode_mag(fmt, F(1), False)
    r = {}
    r["add"] = rnd(fmt, op_add(A, B, "rn"))
    r["sub"] = rnd(fmt, op_add(A, op_neg(B), "rn"))
    r["mul"] = rnd(fmt, op_mul(A, B))
    r["fma"] = rnd(fmt, op_fma(A, B, C, "rn"))
    r["fma.relu"] = rnd(fmt, op_fma(A, B, C, "rn"), relu=True)
    r["fma.sat"] = rnd(fmt, op_fma(A, B, C, "rn"), sat=True)
    r["add.sat"] = rnd(fmt, op_add(A, B, "rn"), sat=True)
    fa, fb = decode(fmt, ftz_in(fmt, a)), decode(fmt, ftz_in(fmt, b))
    r["mul.ftz"] = rnd(fmt, op_mul(fa, fb), ftz=True)
    # neg/abs of a NaN give an unspecified NaN (manual 9.7.4.5/6), so they take c, which has none
    r["neg"] = c ^ fmt.sign
    r["abs"] = c & ~fmt.sign
    r["min"] = minmax(fmt, a, b, False)
    r["max.NaN"] = minmax(fmt, a, b, True, nan_mode=True)
    r["min.NaN"] = minmax(fmt, a, b, False, nan_mode=True)
    r["lt"] = fcmp(fmt, "lt", a, b)
    r["gt"] = fcmp(fmt, "gt", a, b)
    r["gtu"] = one if fcmp(fmt, "gtu", a, b) else 0
    r["neu"] = one if fcmp(fmt, "neu", a, b) else 0
    return r


F16_X2 = ["add", "sub", "mul", "fma", "fma.relu", "fma.sat", "add.sat", "mul.ftz", "neg", "abs", "min", "max.NaN", "setp.lt", "set.gtu"]
BF16_X2 = ["add", "sub", "mul", "fma", "fma.relu", "neg", "abs", "min", "max.NaN", "min.NaN", "setp.gt", "set.neu"]


def x2_ops(fmt, names, lo, hi):
    rl, rh = half_lane_ops(fmt, *lo), half_lane_ops(fmt, *hi)
    out = []
    for n in names:
        if n.startswith("setp."):
            k = n[5:]
            out.append(int(rl[k]) | int(rh[k]) << 1)  # p from the low halves, q from the high ones
        elif n.startswith("set."):
            k = n[4:]
            out.append(rl[k] | rh[k] << 16)
        else:
            out.append(rl[n] | rh[n] << 16)
    # scalar forms on the low lane
    if fmt is F16:
        out.append(rl["add"])
        out.append(rl["fma.sat"])
    else:
        out.append(rl["fma"])
        out.append(rl["fma.relu"])
    return out


@family("half_arith.ptx")
def fam_half():
    o = []
    ins = [[], [], [], [], [], []]
    n = len(F16_IN) // 2
    for t in range(n):
        lo, hi = F16_IN[2 * t], F16_IN[2 * t + 1]
        blo, bhi = BF16_IN[2 * t], BF16_IN[2 * t + 1]
        for j in range(3):
            ins[j].append(lo[j] | hi[j] << 16)
            ins[3 + j].append(blo[j] | bhi[j] << 16)
        o += x2_ops(F16, F16_X2, lo, hi) + x2_ops(BF16, BF16_X2, blo, bhi)
    run = "kernel=k grid=1 block=%d args=%s;u32*%d" % (n, ";".join(fmt_list("u32", v) for v in ins), len(o))
    return run, [(6, "u32", o)]


# ---------------------------------------------------------------------------------------------
# 3. cvt
# ---------------------------------------------------------------------------------------------

CVT_X = [0x40200000, 0xC0200000, 0x40600000, 0xBF000000, 0x501502F9, 0xD01502F9, 0x7FC00000, 0x7F800000,
         0xFF800000, 0x477FF000, 0x00000001, 0x33000001, 0x3F808001, 0x3F818000, 0x80000000, 0x43E80000,
         0x4F7FFFFF, 0xC3E00000, 0xFFC00123, 0x7F800001]  # NaNs with sign, payload, signalling
CVT_X2 = [0x3F800000, 0x3E800000, 0xC4000000, 0x3B800000, 0x3A000000, 0x47800000, 0x7FC00000, 0xFF800000,
          0x3F900000, 0x3FA00000, 0x3DCCCCCD, 0xBDCCCCCD, 0x40E00000, 0x41880000, 0x41980000, 0x00000000,
          0x80000000, 0x3C000000, 0x3F800000, 0xBF800000]
CVT_Y = [f64bits(x) for x in (1 / 3, -1 / 3, 2.5, -2.5, 1e300, -1e300)] + [
    0x7FF8000000000000, 0x43E0000000000000, 0xC3E0000000000001, 0x36A8000000000000, 0x36A0000000000000,
    0x3690000000000000, 0x3FF0000010000000, 0x3FF0000010000001, 0xC1E0000000200000, 0x41EFFFFFFFFF0000,
    0x7FF0000000000000, 0x8000000000000000, 0xFFF4000020000000, 0x7FF0000000000001]
CVT_I = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 0x7FFFFFFF, -0x80000000, 16777217,
         -16777217, 0x7FFFFFC0, 33554435, 65535, -65536]
CVT_J = [5, -5, 300, -300, 7, 8, -8, 9, 1, 2, 3, 65536, -65536, 100, 127, -128, 15, -7, 0, -1]
CVT_L = [0, 1, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0x80000000, 0x7FFFFFFF,
         0x100000000, 0xFFFFFFFF, 0xFFFFFFFEFFFFFFFF, 2**53 + 1, 0x20000000000003, 0x8000008000000001,
         123456789, 0xFFFFFFFF80000000, 0xFFFFFFFFF, 0x7FFFFFFFFFFFFF80, 0x100000001, 0x8000000000000001,
         0xFFFFFFFFFFFFFFFE]
CVT_C = 0xABCDEF12  # the c operand of cvt.pack


def to_signed(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def round_int(q, irnd):
    """Exact rational to integer with .rni/.rzi/.rmi/.rpi."""
    fl = math.floor(q)
    if irnd == "rzi":
        return math.trunc(q)
    if irnd == "rmi":
        return fl
    if irnd == "rpi":
        return math.ceil(q)
    r = q - fl
    return fl + (1 if r > F(1, 2) or (r == F(1, 2) and fl % 2) else 0)


def f2i(fmt, b, irnd, bits, signed):
    """Float to integer: out-of-range values clamp (manual 9.7.10.20). A NaN gives 0 from f32 into at
    most 32 bits, else the destination's top bit alone (an H100's values; the manual says 0)."""
    v = decode(fmt, b)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if v.nan:
        return 0 if fmt is not F64 and bits <= 32 else 1 << (bits - 1)
    if v.inf:
        r = lo if v.neg else hi
    else:
        r = min(max(round_int(v.val(), irnd), lo), hi)
    return r & ((1 << bits) - 1)


def narrow_f64(fmt, y, mode="rn"):
    """f64 to a narrower float: a NaN keeps its sign and the top of its payload, made quiet (an H100's
    values, as x86's cvtsd2ss gives them)."""
    if not decode(F64, y).nan:
        return rnd(fmt, decode(F64, y), mode)
    width = 1 + fmt.e + fmt.m
    return (y >> 63) << (width - 1) | ((1 << (fmt.e + 1)) - 1) << (fmt.m - 1) | (y & (1 << 52) - 1) >> (52 - fmt.m)


def tf32_rna(x, satfinite):
    """cvt.rna(.satfinite).tf32.f32; a NaN keeps its bits truncated, and .satfinite takes one unit off
    them, as an H100 does."""
    if decode(F32, x).nan:
        return (x & 0xFFFFE000) - (0x2000 if satfinite else 0)
    return rnd(TF32, decode(F32, x), "rna", satfinite=satfinite) << 13


def f2f_int(fmt, b, irnd):
    """cvt.rni.f32.f32: round to an integral value, kept in the same format."""
    v = decode(fmt, b)
    if v.nan:
        return fmt.nan
    if v.inf or v.zero:
        return b
    r = round_int(v.val(), irnd)
    return encode_mag(fmt, F(abs(r)), v.neg) if r else (fmt.sign if v.neg else 0)


def sat_int(v, bits, signed):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return min(max(v, lo), hi) & ((1 << bits) - 1)


def f8_to_f16(fmt8, b):
    v = decode(fmt8, b)
    if v.nan:
        return F16.nan
    return rnd(F16, v if not v.inf else V("inf", v.neg))


def widen_f32_f64(b):
    v = decode(F32, b)
    if v.nan:  # the payload moves to the top of the wider fraction (IEEE 754 conversion), quieted
        return (b >> 31) << 63 | 0x7FF << 52 | (b & 0x7FFFFF) << 29 | 1 << 51
    return rnd(F64, v)


def random_cvt_rows(n, seed):
    g = Xorshift(seed)

    def f(fmt, spread):
        r = g.next()
        e = fmt.bias + (r % (2 * spread + 1)) - spread
        return (r >> 63) << (fmt.bits - 1) | e << fmt.m | (g.next() & ((1 << fmt.m) - 1))

    for _ in range(n):
        CVT_X.append(f(F32, 20))
        CVT_X2.append(f(F32, 12))
        CVT_Y.append(f(F64, 40))
        CVT_I.append(to_signed(g.next() >> (g.next() % 32), 32))
        CVT_J.append(to_signed(g.next() >> (32 + g.next() % 32), 32))
        CVT_L.append(g.next() >> (g.next() % 64))


random_cvt_rows(14, 0xC47)


def cvt_ops(x, x2, y, i, j, l):
    X, X2, Y = decode(F32, x), decode(F32, x2), decode(F64, y)
    out = []
    for m in ("rni", "rzi", "rmi", "rpi"):
        out.append(f2i(F32, x, m, 32, True))
    out.append(f2i(F32, x, "rni", 32, False))
    out.append(f2i(F32, x, "rzi", 64, True))
    out.append(f2i(F32, x, "rpi", 64, False))
    out.append(f2f_int(F32, x, "rni"))
    out.append(f2i(F32, x, "rzi", 16, True))
    out.append(f2i(F32, x, "rni", 8, False))
    for m in MODES:
        out.append(rnd(F16, X, m))
    for m in ("rn", "rz"):
        out.append(rnd(BF16, X, m))
    out.append(rnd(F16, X, "rn", relu=True))
    out.append(rnd(F16, X, "rn", satfinite=True))
    out.append(tf32_rna(x, False))
    out.append(tf32_rna(x, True))
    out.append(widen_f32_f64(x))
    out.append(rnd(F16, X) << 16 | rnd(F16, X2))
    out.append(rnd(BF16, X, "rz") << 16 | rnd(BF16, X2, "rz"))
    e4 = rnd(E4M3, X, satfinite=True) << 8 | rnd(E4M3, X2, satfinite=True)
    e5 = rnd(E5M2, X, satfinite=True) << 8 | rnd(E5M2, X2, satfinite=True)
    out.append(e4)
    out.append(e5)
    out.append(f8_to_f16(E4M3, e4 >> 8) << 16 | f8_to_f16(E4M3, e4 & 0xFF))
    out.append(f8_to_f16(E5M2, e5 >> 8) << 16 | f8_to_f16(E5M2, e5 & 0xFF))
    out.append(rnd(E4M3, X, satfinite=True, relu=True) << 8 | rnd(E4M3, X2, satfinite=True, relu=True))
    for m in MODES:
        out.append(narrow_f64(F32, y, m))
    out.append(f2i(F64, y, "rzi", 64, True))
    out.append(f2i(F64, y, "rni", 64, False))
    out.append(f2i(F64, y, "rpi", 32, True))
    out.append(f2i(F64, y, "rmi", 32, False))
    out.append(narrow_f64(F16, y))
    si = to_signed(i, 32)
    # 32-bit destination registers: signed results are sign-extended (manual 9.7.10.20, Notes)
    out.append(to_signed(sat_int(si, 8, True), 8) & 0xFFFFFFFF)
    out.append(sat_int(si, 8, False))
    out.append(si & 0xFF)
    out.append(to_signed(si, 8) & 0xFFFFFFFF)  # truncated to s8, sign-extended into the 32-bit register
    out.append(to_signed(sat_int(si, 16, True), 16) & 0xFFFFFFFF)
    out.append(sat_int(si, 16, False))
    out.append(sat_int(si, 32, False))
    out.append(si & 0xFFFFFFFFFFFFFFFF)
    for m in MODES:
        out.append(rnd(F32, num(si), m))
    out.append(rnd(F32, num(i & 0xFFFFFFFF), "rn"))
    sj = to_signed(j, 32)
    out.append(sat_int(si, 16, True) << 16 | sat_int(sj, 16, True))
    out.append((CVT_C << 16 | sat_int(si, 8, False) << 8 | sat_int(sj, 8, False)) & 0xFFFFFFFF)
    out.append((CVT_C << 8 | sat_int(si, 4, True) << 4 | sat_int(sj, 4, True)) & 0xFFFFFFFF)
    sl = to_signed(l, 64)
    out.append(sat_int(sl, 32, True))
    out.append(sat_int(l, 32, False))
    out.append(l & 0xFFFFFFFF)
    out.append(sat_int(sl, 64, False))
    out.append(sat_int(l, 64, True))
    for m in MODES:
        out.append(rnd(F32, num(l), m))
    out.append(rnd(F64, num(sl), "rn"))
    out.append(rnd(F64, num(l), "rz"))
    out.append(rnd(BF16, X, "rm"))
    out.append(rnd(BF16, X, "rp"))
    h16 = rnd(F16, X)
    out.append(rnd(F32, decode(F16, h16)))  # widening is exact; a NaN gives the f32 canonical NaN
    out.append(rnd(F32, decode(BF16, rnd(BF16, num(si)))))  # int to bf16, then exactly back (never NaN)
    out.append(rnd(BF16, decode(F16, h16), "rn"))
    out.append(widen_to_f64(F16, h16))
    out.append(widen_to_f64(BF16, rnd(BF16, X, "rn")))
    return out


def widen_to_f64(fmt, h):
    """cvt.f64.f16/bf16: exact; a NaN keeps its sign and payload, made quiet (an H100's values)."""
    if not decode(fmt, h).nan:
        return rnd(F64, decode(fmt, h))
    width = 1 + fmt.e + fmt.m
    return (h >> (width - 1)) << 63 | 0xFFF << 51 | (h & (1 << fmt.m) - 1) << (52 - fmt.m)


@family("cvt_all.ptx")
def fam_cvt():
    o = []
    cols = (CVT_X, CVT_X2, CVT_Y, [v & 0xFFFFFFFF for v in CVT_I], [v & 0xFFFFFFFF for v in CVT_J], CVT_L)
    for row in zip(*cols):
        o += cvt_ops(*row)
    tys = ("u32", "u32", "u64", "u32", "u32", "u64")
    run = "kernel=k grid=1 block=%d args=%s;u64*%d" % (
        len(CVT_X), ";".join(fmt_list(t, c) for t, c in zip(tys, cols)), len(o))
    return run, [(6, "u64", o)]


# ---------------------------------------------------------------------------------------------
# 4. Integer and bit instructions
# ---------------------------------------------------------------------------------------------

INT_A = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x00FFFFFF, 0x00800000, 0x12345678, 0xDEADBEEF, 0xAAAAAAAA,
         0x0000F0F0, 0xFFFF8000, 0x7FFF0001, 0x00000100, 0xFFFFFFF9, 0x80000001, 0x13572468, 0x00000020]
INT_B = [0, 0xFFFFFFFF, 1, 0xFFFFFFFF, 0xFFFFFFFF, 0x00FFFFFF, 0x00800000, 0x9ABCDEF0, 3, 5, 0x0000001F, 7,
         0x0001FFFF, 0x00000080, 0x00000021, 0x00000003, 0x24681357, 0xFFFFFFE0]
INT_C = [0, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFF, 0x00003210, 0x00007654, 0x0000BA98, 0x00001234, 0x00000001,
         0x00000002, 0x00000003, 0xFFFFFFFD, 0x0000FEDC, 0x80000000, 0x00000004, 0x7F800000, 0xFFC00000, 0x80000001]
INT_A64 = [0, 1, M64, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0x0000000100000000, 0x123456789ABCDEF0, 12345,
           0xFFFFFFFF00000000, 2**40 + 7, 0x8000000000000000, 0xF0F0F0F0F0F0F0F0, 100, 0xFFFFFFFFFFFFFFF6, 77,
           0x00000000FFFFFFFF, 0x4000000000000000, 3]
INT_B64 = [0, 0, 1, M64, M64, 7, 0x10, 0, 3, 2**20, 2, 0xFFFF, 0xFFFFFFFFFFFFFFFD, 3, 0, 0x100000000, 5, 7]

def random_int_rows(n, seed):
    g = Xorshift(seed)
    for k in range(n):
        INT_A.append(g.next() >> 32 >> (g.next() % 4 * 8))
        INT_B.append(g.next() >> 32 >> (g.next() % 4 * 8))
        INT_C.append((g.next() >> 32) if k % 2 else (g.next() % 9) - 4 & M32)  # fns offsets -4..4
        INT_A64.append(g.next() >> (g.next() % 64))
        INT_B64.append(g.next() >> (g.next() % 64))


random_int_rows(14, 0x1A7)


PRMT_MODES = {
    "f4e": [(0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)],  # (b0, b1, b2, b3) sources per c[1:0]
    "b4e": [(0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)],
    "rc8": [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)],
    "ecl": [(0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)],
    "ecr": [(0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)],
    "rc16": [(0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)],
}


def prmt(a, b, c, mode=None):
    src = (b << 32 | a).to_bytes(8, "little")
    if mode is None:
        d = 0
        for i in range(4):
            sel = (c >> (4 * i)) & 0xF
            byte = src[sel & 7]
            if sel & 8:
                byte = 0xFF if byte & 0x80 else 0
            d |= byte << (8 * i)
        return d
    return sum(src[x] << (8 * i) for i, x in enumerate(PRMT_MODES[mode][c & 3]))


def mul24(a, b, signed, hi):
    a, b = a & 0xFFFFFF, b & 0xFFFFFF
    if signed:
        a, b = to_signed(a, 24), to_signed(b, 24)
    t = (a * b) & ((1 << 48) - 1)
    return (t >> 16) & M32 if hi else t & M32


def bfind(a, bits, signed, shiftamt):
    if signed and a >> (bits - 1):
        a = ~a & ((1 << bits) - 1)
    if a == 0:
        return M32
    d = a.bit_length() - 1
    return bits - 1 - d if shiftamt else d


def fns(mask, base, offset):
    offset = to_signed(offset, 32)
    if offset == 0:
        return base if mask >> base & 1 else M32
    if offset == -(1 << 31):
        return 0  # an H100's answer for every mask and base (tests/gpu/probes/fns_offsets.ptx)
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if mask >> pos & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return M32


def bmsk(a, b, clamp):
    a1, b1 = a & 31, b & 31
    mask0 = (M32 << a1) & M32
    s = a1 + b1
    mask1 = (M32 << s) & M32 if s < 32 else 0
    over = s >= 32
    if clamp:
        if a >= 32:
            over, mask0 = True, 0
        if b >= 32:
            over = True
    if over:
        mask1 = 0
    elif b1 == 0:
        mask1 = M32
    return mask0 & ~mask1 & M32


def szext(a, b, clamp, signed):
    b1 = b & 31
    too_large = b >= 32 and clamp
    mask = 0 if too_large else (M32 << b1) & M32
    sign = False if (b1 == 0 or too_large or not signed) else bool(a >> ((b1 - 1) & 31) & 1)
    return (a & ~mask & M32) | (mask if sign else 0)


def lanes(v, n, w, signed):
    return [to_signed(v >> (w * i), w) if signed else (v >> (w * i)) & ((1 << w) - 1) for i in range(n)]


def dp4a(a, b, c, sa, sb):
    return (c + sum(x * y for x, y in zip(lanes(a, 4, 8, sa), lanes(b, 4, 8, sb)))) & M32


def dp2a(a, b, c, sa, sb, hi):
    vb = lanes(b, 4, 8, sb)[2:] if hi else lanes(b, 4, 8, sb)[:2]
    return (c + sum(x * y for x, y in zip(lanes(a, 2, 16, sa), vb))) & M32


def x16(a, b, f, signed):
    la, lb = lanes(a, 2, 16, signed), lanes(b, 2, 16, signed)
    return sum((f(x, y) & 0xFFFF) << (16 * i) for i, (x, y) in enumerate(zip(la, lb)))


def brev(v, bits):
    return int(format(v, "0%db" % bits)[::-1], 2)


def tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_ops(a, b, c, a64, b64):
    sa, sb, sc = to_signed(a, 32), to_signed(b, 32), to_signed(c, 32)
    out = [
        mul24(a, b, False, False), mul24(a, b, False, True), mul24(a, b, True, False), mul24(a, b, True, True),
        (mul24(a, b, False, False) + c) & M32,
        (to_signed(mul24(a, b, True, True), 32) + sc) & M32,
        sat_int(to_signed(mul24(a, b, True, True), 32) + sc, 32, True),
        (c + abs(a - b)) & M32,
        (sc + abs(sa - sb)) & M32,
        bfind(a, 32, False, False), bfind(a, 32, True, False), bfind(a, 32, False, True),
        bfind(a64, 64, True, True),
        fns(a, b & 31, c),
        bmsk(a & 63, b & 63, True), bmsk(a & 63, b & 63, False),
        szext(a, b & 63, True, True), szext(a, b & 63, False, True),
        szext(a, b & 63, True, False), szext(a, b & 63, False, False),
        dp4a(a, b, c, False, False), dp4a(a, b, c, True, True), dp4a(a, b, c, True, False),
        dp2a(a, b, c, False, False, False), dp2a(a, b, c, True, True, True), dp2a(a, b, c, True, False, False),
        prmt(a, b, c & 0xFFFF),
    ]
    out += [prmt(a, b, c, m) for m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")]
    out += [
        x16(a, b, lambda x, y: x + y, False),
        x16(a, b, lambda x, y: x + y, True),
        x16(a, b, min, False),
        x16(a, b, max, True),
        x16(a, b, lambda x, y: max(min(x, y), 0), True),  # min.relu.s16x2
        max(min(sa, sb), 0) & M32,  # min.relu.s32
        max(sa, sb, 0) & M32,  # max.relu.s32
        a if sc >= 0 else b,  # slct.b32.s32
    ]
    C = decode(F32, c)
    out.append(a if (not C.nan and (C.zero or not C.neg)) else b)  # slct.b32.f32: -0 >= 0, NaN picks b
    out += [
        int(a == 0),
        bin(a).count("1"),
        32 - a.bit_length(),
        brev(a, 32),
        bin(a64).count("1"),
        64 - a64.bit_length(),
    ]
    r = brev(a64, 64)
    out += [r & M32, r >> 32]
    out += [a // b if b else M32, a % b if b else M32]  # x/0 and x%0 are all ones (an H100's values)
    sdiv = tdiv(sa, sb) if sb else None
    out += [sdiv & M32 if sb else 0, (sa - sb * tdiv(sa, sb)) & M32 if sb else 0]
    s64a, s64b = to_signed(a64, 64), to_signed(b64, 64)
    q = tdiv(s64a, s64b) & M64 if s64b else 0
    r = a64 % b64 if b64 else M64
    out += [q & M32, q >> 32, r & M32, r >> 32]
    return out


@family("int_bits.ptx")
def fam_int():
    o = []
    for row in zip(INT_A, INT_B, INT_C, INT_A64, INT_B64):
        o += int_ops(*row)
    cols = [INT_A, INT_B, INT_C, INT_A64, INT_B64]
    tys = ["u32", "u32", "u32", "u64", "u64"]
    run = "kernel=k grid=1 block=%d args=%s;u32*%d" % (
        len(INT_A), ";".join(fmt_list(t, c) for t, c in zip(tys, cols)), len(o))
    return run, [(5, "u32", o)]


# SIMD video instructions: the manual's pseudocode (9.7.18.2), applied to each instruction written
# in the kernel (the kernel is the list of forms; this evaluates them from their text).
SIMD_A = [0x00000000, 0xFFFFFFFF, 0x7FFF8000, 0x80007FFF, 0x7F7F8080, 0x80807F7F, 0x01FF02FE, 0x12345678,
          0xFFFF0001, 0x00017FFF, 0x807F017F, 0xDEADBEEF]
SIMD_B = [0xFFFFFFFF, 0x00000001, 0x80007FFF, 0x7FFF8000, 0x01010101, 0xFEFEFEFE, 0xFF01FE02, 0x87654321,
          0x0001FFFF, 0x7FFF0001, 0x7F80FF80, 0xCAFEBABE]
SIMD_C = [0x89ABCDEF, 0x00000000, 0xFFFFFFFF, 0x7FFFFFFF, 0x13579BDF, 0x80000000, 0x00FF00FF, 0x0F0F0F0F,
          0xFFFFFFFE, 0x00000005, 0x55AA55AA, 0x10203040]
_g = Xorshift(0x51D)
for _ in range(20):
    SIMD_A.append(_g.next() >> 32)
    SIMD_B.append(_g.next() >> 32)
    SIMD_C.append(_g.next() >> 32)

SIMD_RE = re.compile(r"^\s*(v[a-z]+)([24])((?:\.[a-z0-9]+)+)\s+%r4(\.\w+)?,\s*%r1(\.\w+)?,\s*%r2(\.\w+)?,\s*%r3;")


def simd_video(opname, lanes, mods, dmask, asel, bsel, a, b, c):
    bits = 32 // lanes
    lane_max = (1 << bits) - 1
    types = [m for m in mods if m in ("u32", "s32")]
    if opname == "vset":
        dsigned, (asig, bsig) = False, [t == "s32" for t in types]
    else:
        dsigned, asig, bsig = [t == "s32" for t in types]
    ab = (b << 32) | a

    def part(k, signed):
        v = (ab >> (k * bits)) & lane_max
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    def digits(sel, default):
        if sel is None:
            return default
        return [int(ch) for ch in reversed(sel[2:])]

    asel = digits(asel, list(range(lanes)))
    bsel = digits(bsel, list(range(lanes, 2 * lanes)))
    mask = (1 << lanes) - 1 if dmask is None else sum(1 << int(ch) for ch in dmask[2:])
    t = []
    for i in range(lanes):
        x, y = part(asel[i], asig), part(bsel[i], bsig)
        if opname == "vadd":
            r = x + y
        elif opname == "vsub":
            r = x - y
        elif opname == "vavrg":
            r = (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1
        elif opname == "vabsdiff":
            r = abs(x - y)
        elif opname == "vmin":
            r = min(x, y)
        elif opname == "vmax":
            r = max(x, y)
        else:
            cmp = [m for m in mods if m in CMP_INT][0]
            r = int(CMP_INT[cmp](x, y))
        if "sat" in mods:
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dsigned else (0, lane_max)
            r = min(max(r, lo), hi)
        t.append(r)
    if "add" in mods:
        d = c
        for i in range(lanes):
            if mask >> i & 1:
                d += t[i]
    else:
        d = 0
        for i in range(lanes):
            v = t[i] if mask >> i & 1 else c >> (i * bits)
            d |= (v & lane_max) << (i * bits)
    return d & M32


CMP_INT = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
           "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


@family("simd_video.ptx")
def fam_simd_video():
    forms = []
    for line in open(os.path.join(HOST, "simd_video.ptx")):
        m = SIMD_RE.match(line)
        if m:
            opname, lanes, mods, dmask, asel, bsel = m.groups()
            forms.append((opname, int(lanes), mods.split(".")[1:], dmask, asel, bsel))
    assert len(forms) == 132, len(forms)
    o = []
    for a, b, c in zip(SIMD_A, SIMD_B, SIMD_C):
        o += [simd_video(*f, a, b, c) for f in forms]
    run = "kernel=k grid=1 block=%d args=%s;%s;%s;u32*%d" % (
        len(SIMD_A), fmt_list("u32", SIMD_A), fmt_list("u32", SIMD_B), fmt_list("u32", SIMD_C), len(o))
    return run, [(3, "u32", o)]


# cp.reduce.async.bulk: each element of a 256-byte destination region combined with the source's.
BULK_RE = re.compile(r"^\s*cp\.reduce\.async\.bulk\.global\.shared::cta\.bulk_group\.([a-z0-9.]+) ")


def bulk_random_floats(fmt, n, seed):
    """Moderate values of both signs (sums neither overflow nor cancel to nothing), as bits."""
    g = Xorshift(seed)
    out = []
    for _ in range(n):
        r = g.next()
        x = F(int(r & 0xFFFF) + 1, 1 << 12) * F(2) ** (int(r >> 16 & 7) - 3)
        out.append(rnd(fmt, num(-x if r >> 20 & 1 else x), "rn"))
    return out


def bulk_combine(op, ty, old, v):
    bits = {"u32": 32, "s32": 32, "b32": 32, "u64": 64, "s64": 64, "f32": 32, "f16": 16, "bf16": 16}[ty]
    m = (1 << bits) - 1
    sx = lambda x: x - (1 << bits) if ty[0] == "s" and x >> (bits - 1) else x
    if ty in ("f32", "f16", "bf16"):
        fmt = {"f32": F32, "f16": F16, "bf16": BF16}[ty]
        if op == "add":
            # Every add keeps subnormal inputs and results: the manual says the f32 one flushes them,
            # an H200 (driver 580.159.04) does not.
            return nan_payload(fmt, rnd(fmt, op_add(decode(fmt, old), decode(fmt, v), "rn"), "rn"), old, v)
        return minmax(fmt, old, v, op == "max")
    return {
        "add": lambda: (old + v) & m,
        "xor": lambda: old ^ v,
        "inc": lambda: 0 if old >= v else old + 1,
        "dec": lambda: v if old == 0 or old > v else old - 1,
        "min": lambda: old if sx(old) <= sx(v) else v,
        "max": lambda: old if sx(old) >= sx(v) else v,
    }[op]()


@family("bulk_reduce.ptx")
def fam_bulk_reduce():
    ops = [m.group(1).split(".") for m in map(BULK_RE.match, open(os.path.join(HOST, "bulk_reduce.ptx"))) if m]
    assert len(ops) == 10, ops
    g = Xorshift(0xB01C)
    src = [g.next() >> 32 for _ in range(64)]
    init = [g.next() >> 32 for _ in range(64 * len(ops))]
    # Small old values for inc/dec, and float regions of moderate values.
    for k, op in enumerate(ops):
        ty = op[-1]
        if op[0] in ("inc", "dec"):
            init[64 * k: 64 * (k + 1)] = [x % 9 for x in init[64 * k: 64 * (k + 1)]]
        if ty in ("f32", "f16", "bf16"):
            fmt = {"f32": F32, "f16": F16, "bf16": BF16}[ty]
            w = 32 // fmt.bits
            vals = bulk_random_floats(fmt, 64 * w, 0xF00 + k)
            init[64 * k: 64 * (k + 1)] = [sum(vals[j * w + i] << (fmt.bits * i) for i in range(w)) for j in range(64)]
    # The source is random bits, every third word small (bounds near inc/dec's old values): the float
    # regions meet NaNs, infinities and subnormals in it as well as ordinary values.
    src = [x % 9 if i % 3 == 0 else x for i, x in enumerate(src)]
    # Subnormal inputs and sums in the f32 region (the seventh), which an H200 keeps.
    src[1], src[2] = 0x00400000, 0x80800000
    init[64 * 6 + 1], init[64 * 6 + 2] = 0x00000000, 0x00800001
    src_bytes = b"".join(struct.pack("<I", x) for x in src)
    out = []
    for k, op in enumerate(ops):
        ty = op[-1]
        size = {"u64": 8, "s64": 8, "f16": 2, "bf16": 2}.get(ty, 4)
        fmtc = {8: "<Q", 4: "<I", 2: "<H"}[size]
        region = b"".join(struct.pack("<I", x) for x in init[64 * k: 64 * (k + 1)])
        res = b""
        for e in range(256 // size):
            old = struct.unpack_from(fmtc, region, e * size)[0]
            v = struct.unpack_from(fmtc, src_bytes, e * size)[0]
            res += struct.pack(fmtc, bulk_combine(op[0], ty, old, v))
        out += list(struct.unpack("<64I", res))
    words64 = [src[2 * i] | src[2 * i + 1] << 32 for i in range(32)]
    run = "kernel=k grid=1 block=32 args=%s;%s" % (fmt_list("u64", words64), fmt_list("u32", init))
    return run, [(1, "u32", out)]


# PTX 8.6's packed f32 pairs: each lane as the f32 instruction (f32x2.ptx names the forms).
F32X2_RE = re.compile(r"^\s*(add|sub|mul|fma)((?:\.[a-z]+)*)\.f32x2 ")


def f32x2_op(name, mods, a, b, c):
    mode = next((m for m in MODES if m in mods), "rn")
    ftz = "ftz" in mods
    if ftz:
        a, b, c = (ftz_in(F32, x) for x in (a, b, c))
    A, B, C = decode(F32, a), decode(F32, b), decode(F32, c)
    v = {"add": lambda: op_add(A, B, mode), "sub": lambda: op_add(A, op_neg(B), mode),
         "mul": lambda: op_mul(A, B), "fma": lambda: op_fma(A, B, C, mode)}[name]()
    return nan_payload(F32, rnd(F32, v, mode, ftz=ftz), a, b, *([c] if name == "fma" else []))


@family("f32x2.ptx")
def fam_f32x2():
    forms = [m.groups() for m in map(F32X2_RE.match, open(os.path.join(HOST, "f32x2.ptx"))) if m]
    assert len(forms) == 15, len(forms)
    rows = F32_IN[: 2 * (len(F32_IN) // 2)]
    cols = [[], [], []]
    o = []
    for t in range(len(rows) // 2):
        lo, hi = rows[2 * t], rows[2 * t + 1]
        for j in range(3):
            cols[j].append(lo[j] | hi[j] << 32)
        for name, mods in forms:
            o.append(f32x2_op(name, mods, *lo) | f32x2_op(name, mods, *hi) << 32)
    run = "kernel=k grid=1 block=%d args=%s;u64*%d" % (len(cols[0]), ";".join(fmt_list("u64", c) for c in cols), len(o))
    return run, [(3, "u64", o)]


# The narrow floats of PTX 8.6-9.2 in cvt, from the definitions of NVIDIA's host conversions
# (cuda_fp4.hpp, cuda_fp6.hpp, cuda_fp8.hpp): fp4/fp6 have no infinity or NaN, saturate, and take NaN
# to the positive largest value; a ue8m0 scale is an exponent (2^(e-127); 0xff is NaN).


def finite_fmt(name, e, m):
    f = Fmt(name, e, m, ieee=False)  # no NaN pattern either (nan=None)
    f.emax = (1 << e) - 1 - f.bias  # every exponent holds numbers
    f.maxf = F(2 ** (m + 1) - 1, 2**m) * F(2) ** f.emax
    return f


E2M1 = finite_fmt("e2m1", 2, 1)
E2M3 = finite_fmt("e2m3", 2, 3)
E3M2 = finite_fmt("e3m2", 3, 2)
NARROW = {"e2m1x2": (E2M1, 4), "e2m3x2": (E2M3, 8), "e3m2x2": (E3M2, 8)}
assert (E2M1.maxf, E2M3.maxf, E3M2.maxf) == (6, F(15, 2), 28)


def to_narrow(fmt, v, relu):
    if v.nan:
        return encode_mag(fmt, fmt.maxf, False)
    if relu and v.neg:
        return 0
    if v.inf or v.x > fmt.maxf:
        return encode_mag(fmt, fmt.maxf, v.neg)
    if v.x == 0:
        return fmt.sign if v.neg else 0
    return encode_mag(fmt, min(round_mag(fmt, v.x, v.neg, "rn"), fmt.maxf), v.neg)


def f32_to_bf16_bits(b, up):
    """bf16 bits of an f32: truncated, or (`up`) its magnitude rounded up; NaN canonical."""
    a = b & 0x7FFFFFFF
    if a > 0x7F800000:
        return 0x7FFF
    if up:
        return (a >> 16) + 1 if a < 0x7F800000 and a & 0xFFFF else a >> 16
    return b >> 16


def to_ue8m0(hb, up, sat):
    """A bf16 value's scale: its exponent, plus one when rounding up past a power of two."""
    a = hb & 0x7FFF
    e = (hb >> 7) & 0xFF
    if up and hb & 0x7F and 0x40 < a < 0x7F80:
        e += 1
    if sat and a <= 0x7F80 and e == 0xFF:
        e = 0xFE
    return e


def ue8m0_to_bf16(e):
    return {0xFF: 0x7FFF, 0: 0x40}.get(e, e << 7)


NARROW_RE = re.compile(r"^\s*cvt\.([a-z0-9.]+) %\w+, %(\w+)(?:, %(\w+))?;")
NARROW_X = [0x00000000, 0x80000000, 0x3E800000, 0x3E851EB8, 0x3F400000, 0x3FA00000, 0x3FE00000, 0x40200000,
            0x40600000, 0x40A00000, 0x40BCCCCD, 0x40C00000, 0x40D00000, 0x40E00000, 0x42C80000, 0x7F800000,
            0xFF800000, 0x7FC00000, 0xFFC00001, 0x3A83126F, 0xBE99999A, 0x41E00000, 0x41E80000, 0x41F00000,
            0x40F00000, 0x40F80000, 0x00000001, 0x00400000, 0x00600000, 0x7F7FFFFF, 0x7F000001, 0xC1E40000]
NARROW_Y = [0x3F000000, 0xBF000000, 0x3D800000, 0x3DC00000, 0x3E000000, 0xC0400000, 0x40300000, 0x40500000,
            0xC0B00000, 0x41000000, 0x3F900000, 0x3FB00000, 0xBFD00000, 0x3FF00000, 0x40880000, 0x00200000,
            0x00500000, 0x00800000, 0x3F800001, 0x40000000, 0x7F7F0000, 0x7F7F8000, 0x7F7FFFFF, 0x80600000,
            0xBE000000, 0x3E400000, 0x3EC00000, 0xC0E00000, 0x41E20000, 0x41D00000, 0x41C80000, 0x42000000]
NARROW_P = [0x3C00C000, 0x7E00FC00, 0x3F7FBF80, 0x4600C600, 0x34003400, 0x3A00B600, 0x47004780, 0x7C00FC00,
            0x00010400, 0x80013800, 0x7FC0FF80, 0x40C040D0, 0x41E041E8, 0x3E803E90, 0x5BFFDBFF, 0x00400060]
NARROW_Q = [0x3F7F, 0x8081, 0x0000, 0xFFFF, 0x1234, 0x3F1F, 0x2A15, 0x0FF0, 0x01FE, 0x7F80, 0xFE01, 0x0102,
            0x3737, 0x2F2F, 0x0808, 0x7F7F]
_g = Xorshift(0xF4)
NARROW_P += [_g.next() >> 32 for _ in range(16)]
NARROW_Q += [_g.next() >> 48 for _ in range(16)]


def narrow_cvt(mods, srcs, x, y, p, q):
    mods = mods.split(".")
    dst, src = mods[-2], mods[-1]
    relu, sat = "relu" in mods, "satfinite" in mods
    f32 = lambda b: decode(F32, b)
    if src == "f32":
        pair = [x, y]  # a goes to the upper lane
    elif src in ("f16x2", "bf16x2"):
        pair = [p >> 16, p & 0xFFFF]
    elif src == "e2m1x2":
        pair = [(q >> 4) & 0xF, q & 0xF]
    else:
        pair = [(q >> 8) & 0xFF, q & 0xFF]
    if dst in NARROW:
        fmt, w = NARROW[dst]
        vals = [f32(b) if src == "f32" else decode(F16 if src == "f16x2" else BF16, b) for b in pair]
        return to_narrow(fmt, vals[0], relu) << w | to_narrow(fmt, vals[1], relu)
    if dst == "ue8m0x2":
        up = "rp" in mods
        hb = [f32_to_bf16_bits(b, up) for b in pair] if src == "f32" else pair
        return to_ue8m0(hb[0], up, sat) << 8 | to_ue8m0(hb[1], up, sat)
    if dst == "e4m3x2":
        return rnd(E4M3, decode(BF16, pair[0]), satfinite=True, relu=relu) << 8 | rnd(
            E4M3, decode(BF16, pair[1]), satfinite=True, relu=relu)
    out_fmt = F16 if dst == "f16x2" else BF16
    if src == "ue8m0x2":
        return ue8m0_to_bf16(pair[0]) << 16 | ue8m0_to_bf16(pair[1])
    in_fmt = {"e2m1x2": E2M1, "e2m3x2": E2M3, "e3m2x2": E3M2, "e4m3x2": E4M3, "e5m2x2": E5M2}[src]
    return rnd(out_fmt, decode(in_fmt, pair[0]), relu=relu, satfinite=sat) << 16 | rnd(
        out_fmt, decode(in_fmt, pair[1]), relu=relu, satfinite=sat)


@family("narrow_floats.ptx")
def fam_narrow():
    forms = [m.groups() for m in map(NARROW_RE.match, open(os.path.join(HOST, "narrow_floats.ptx"))) if m]
    forms = [f for f in forms if any(t in f[0] for t in ("x2.", ".ue8m0x2", "e2m1x2", "e3m2x2", "e2m3x2", "e5m2x2", "e4m3x2"))]
    assert len(forms) == 27, len(forms)
    o = []
    for x, y, p, q in zip(NARROW_X, NARROW_Y, NARROW_P, NARROW_Q):
        o += [narrow_cvt(f[0], f[1:], x, y, p, q) for f in forms]
    run = "kernel=k grid=1 block=%d args=%s;%s;%s;%s;u32*%d" % (
        len(NARROW_X), fmt_list("u32", NARROW_X), fmt_list("u32", NARROW_Y), fmt_list("u32", NARROW_P),
        fmt_list("u32", NARROW_Q), len(o))
    return run, [(4, "u32", o)]


# ---------------------------------------------------------------------------------------------
# 5. Warp collectives on a block of 48 threads (warp 1 has lanes 0-15 only)
# ---------------------------------------------------------------------------------------------

WARP_BLOCK = 48
WARP_K = 39


def shfl(vals, lane, mode, b, c):
    """The manual's shfl.sync pseudocode; vals maps lane -> a."""
    segmask, cval = (c >> 8) & 31, c & 31
    maxl = (lane & segmask) | (cval & ~segmask & 31)
    minl = lane & segmask
    if mode == "up":
        j = lane - b
        ok = j >= maxl
    elif mode == "down":
        j = lane + b
        ok = j <= maxl
    elif mode == "bfly":
        j = lane ^ b
        ok = j <= maxl
    else:
        j = minl | (b & ~segmask & 31)
        ok = j <= maxl
    return vals[j if ok else lane], int(ok)


def warp_values(t):
    return (t * 0x9E3779B9) & M32


def warp_out():
    out = []
    for t in range(WARP_BLOCK):
        lane, w = t % 32, t // 32
        members = [x for x in range(WARP_BLOCK) if x // 32 == w]
        m = sum(1 << (x % 32) for x in members)
        V = {x % 32: warp_values(x) for x in members}
        v = V[lane]
        sv = {k: to_signed(x, 32) for k, x in V.items()}
        c = 0x1F if len(members) == 32 else 0x0F
        o = [m]
        o += [sum(V.values()) & M32, min(V.values()), max(V.values()), min(sv.values()) & M32, max(sv.values()) & M32]
        acc_and, acc_or, acc_xor = M32, 0, 0
        for x in V.values():
            acc_and &= x
            acc_or |= x
            acc_xor ^= x
        o += [acc_and, acc_or, acc_xor]
        o.append(sum(1 << k for k in V if V[k] & 3 == v & 3))
        o += [m, 1]  # match.all on the warp number: everyone agrees
        keys = {k: k & 1 for k in V}
        same = len(set(keys.values())) == 1
        o += [m if same else 0, int(same)]
        o.append(sum(1 << k for k in V if k % 3 == lane % 3))
        o += [1, 1]  # elect.sync: p marks exactly the lane d names, and one leader per warp
        o.append(int(all(k < 20 for k in V)))
        o.append(int(any(k == 31 for k in V)))
        o.append(int(len({k < 16 for k in V}) == 1))
        o.append(sum(1 << k for k in V if V[k] & 1))
        for mode, b, cc in (("up", 3, 0), ("down", 5, c)):
            o += list(shfl(V, lane, mode, b, cc))
        o.append(shfl(V, lane, "bfly", 6, c)[0])
        o.append(shfl(V, lane, "idx", 9, c)[0])
        o.append(shfl(V, lane, "idx", 3, 0x181F)[0])
        o += list(shfl(V, lane, "down", 2, 0x181F))
        o += list(shfl(V, lane, "up", 4, 0x1000))
        if lane % 2 == 0:  # the even lanes, in a divergent branch, with a partial member mask
            E = {k: x for k, x in V.items() if k % 2 == 0}
            o.append(sum(1 << k for k in E if E[k] & 2))
            o.append(shfl(E, lane, "bfly", 2, 0x1F)[0])
            o.append(sum(E.values()) & M32)
        else:
            o += [0, 0, 0]
        o.append(1)  # activemask in a branch holds the caller and no lane of the other branch
        o.append(sum(1 << k for k in V if (k & 4) == (lane & 4)))  # ... namely the lanes of its branch
        o += [m, 1]  # match.all.sync.b64 on the warp number
        assert len(o) == WARP_K
        out += o
    return out


@family("warp_partial.ptx")
def fam_warp():
    o = warp_out()
    return "kernel=k grid=1 block=%d args=u32*%d" % (WARP_BLOCK, len(o)), [(0, "u32", o)]


# ---------------------------------------------------------------------------------------------
# 6. CTA barriers (128 threads)
# ---------------------------------------------------------------------------------------------

BAR_N, BAR_LOOPS, BAR_LIVE = 128, 5, 100


@family("cta_barriers.ptx")
def fam_bar():
    s = list(range(BAR_N))
    for _ in range(BAR_LOOPS):
        s = [(s[t] + s[(t + 1) % BAR_N]) & M32 for t in range(BAR_N)]
    out = []
    for t in range(BAR_N):
        o = [(t ^ 32) * 3 + 1]
        o.append(sum(1 for x in range(BAR_N) if x % 3 == 0))
        o.append(int(all(x < BAR_N - 1 for x in range(BAR_N))))
        o.append(int(any(x == 77 for x in range(BAR_N))))
        o.append(((t - 64) ** 2 + 5) if t >= 64 else 0)
        o.append(s[t])
        o += [BAR_LIVE - 1 - t + 1000, BAR_LIVE] if t < BAR_LIVE else [0, 0]
        out += o
    return "kernel=k grid=1 block=%d args=u32*%d;u32:%d" % (BAR_N, len(out), BAR_LOOPS), [(0, "u32", out)]


# ---------------------------------------------------------------------------------------------
# 7. Special registers: grid 3x2, 40 threads (a partial second warp), dynamic shared memory
# ---------------------------------------------------------------------------------------------

SREG_GRID, SREG_BLOCK, SREG_SHARED, SREG_K = (3, 2), 40, 200, 17


@family("special_regs.ptx")
def fam_sreg():
    out = []
    for by in range(SREG_GRID[1]):
        for bx in range(SREG_GRID[0]):
            for t in range(SREG_BLOCK):
                lane = t % 32
                o = [lane, 1]  # 1: %warpid < %nwarpid and %warpid == the warp holding the thread
                o += [1 << lane, (1 << lane) - 1, (1 << (lane + 1)) - 1, (M32 << (lane + 1)) & M32, (M32 << lane) & M32]
                o += [SREG_SHARED, SREG_GRID[0], SREG_GRID[1], bx, by, 1, 1, 0, SREG_BLOCK]
                o.append(((t + 1) % SREG_BLOCK) * 7 + bx + 10 * by)
                assert len(o) == SREG_K
                out += o
    return "kernel=k grid=%d,%d block=%d shared=%d args=u32*%d" % (
        SREG_GRID[0], SREG_GRID[1], SREG_BLOCK, SREG_SHARED, len(out)), [(0, "u32", out)]


# ---------------------------------------------------------------------------------------------
# 8. Calls and control flow
# ---------------------------------------------------------------------------------------------

CALL_BLOCK, CALL_K = 12, 10


@family("calls_control.ptx")
def fam_calls():
    out = []
    for t in range(CALL_BLOCK):
        x = t * 37 + 5
        o = [x // 7, x % 7]
        o.append(t + 10 + 3 if t % 2 == 0 else (t + 10) * 5)
        f = math.factorial(t + 3)
        o += [f & M32, f >> 32]
        v = [t, 2 * t, 3 * t, 100]
        o += [sum(v), v[0] ^ v[1] ^ v[2] ^ v[3]]
        o.append([111, 222, 333][t % 3] + t)
        o.append(sum(i * i + t for i in range(t + 1)) & M32)
        o.append(1)
        assert len(o) == CALL_K
        out += o
    return "kernel=k grid=1 block=%d args=u32*%d" % (CALL_BLOCK, len(out)), [(0, "u32", out)]


# ---------------------------------------------------------------------------------------------
# 9. Memory: cp.async, mbarrier, isspacep, ldu, 128-bit and vector accesses, atomics
# ---------------------------------------------------------------------------------------------

MEM_N, MEM_K = 64, 16
MEM_IN = [(i * 0x9E3779B1 + 0x1234567) & M32 for i in range(MEM_N)]
ACC32_INIT = [0, 1000, M32, 0x80000000, 0, 0, 0, 5, M32, 0, 0x5A5A5A5A, 7, 0, 0, 0, 0, 0, 0]
ACC64_INIT = [1, 0, 0, 1 << 63, M64, M64, 0, 0, 3, 0, 0, 0]
EXCH32_INIT = [0x1000 + t for t in range(MEM_N)]
EXCH64_INIT = [0x100000000 * t + 0x77 for t in range(MEM_N)]


def f_bits(fmt, q):
    return rnd(fmt, num(q))


def mem_acc():
    T = range(MEM_N)
    a = list(ACC32_INIT)
    a[0] = (a[0] + sum(t + 1 for t in T)) & M32
    a[1] = (a[1] + sum(t - 40 for t in T)) & M32
    a[2] = min([a[2]] + [(t * 7919) % 1000 + 5 for t in T])
    a[3] = max([to_signed(a[3], 32)] + [t - 50 for t in T]) & M32
    a[4] = min([to_signed(a[4], 32)] + [t - 50 for t in T]) & M32
    a[5] = max([a[5]] + [t * 3 for t in T])
    x = a[6]
    for _ in T:
        x = 0 if x >= 50 else x + 1  # inc(r, s) = (r >= s) ? 0 : r+1
    a[6] = x
    x = a[7]
    for _ in T:
        x = 40 if (x == 0 or x > 40) else x - 1  # dec(r, s) = (r == 0 || r > s) ? s : r-1
    a[7] = x
    for t in T:
        a[8] &= ~(1 << (t % 20)) & M32
        a[9] |= 1 << (t % 27)
        a[10] ^= (t * 0x01010101) & M32
    a[11] = (a[11] + sum(T)) & M32
    a[12] = (a[12] + 2 * MEM_N) & M32
    a[13] = f_bits(F32, sum(F(t, 2) for t in T))
    a[14] = f_bits(F16, MEM_N) | f_bits(BF16, 2 * MEM_N) << 16
    a[15] = f_bits(F16, MEM_N) | f_bits(F16, F(MEM_N, 2)) << 16
    a[16] = f_bits(BF16, 2 * MEM_N) | f_bits(BF16, F(MEM_N, 4)) << 16
    a[17] = sum(t + 1 for t in T) + MEM_N
    b = list(ACC64_INIT)
    b[0] = (b[0] + sum(t << 33 for t in T)) & M64
    b[1] = min([to_signed(b[1], 64)] + [(t - 30) << 40 for t in T]) & M64
    b[2] = max([b[2]] + [t * 0x0123456789 for t in T])
    b[3] = max([to_signed(b[3], 64)] + [(t - 70) << 30 for t in T]) & M64
    b[4] = min([b[4]] + [(t + 5) << 35 for t in T])
    for t in T:
        b[5] &= ~(1 << (t % 50)) & M64
        b[6] |= 1 << t
        b[7] ^= (t * 0x0101010101010101) & M64
    b[8] = (b[8] + sum(t << 32 for t in T)) & M64
    b[9] = (b[9] + MEM_N) & M64
    b[10] = rnd(F64, num(sum(F(t, 4) for t in T)))
    b[11] = rnd(F64, num(F(3, 2) * MEM_N))
    return a, b


@family("memory.ptx")
def fam_mem():
    out = []
    for t in range(MEM_N):
        o = [0 if (t + 1) % MEM_N % 4 == 3 else MEM_IN[(t + 1) % MEM_N]]  # src-size 0 fills zeros
        o.append(t * 11 if t < 32 else (t - 32) * 11)
        o.append(1)
        o.append(0b100010001)  # isspacep {global,shared,local} of a global, a shared, a local address
        o.append(MEM_IN[t ^ 1])
        o.append(EXCH32_INIT[t])
        o += [EXCH64_INIT[t] & M32, EXCH64_INIT[t] >> 32]
        o += MEM_IN[4 * (t % 16): 4 * (t % 16) + 4]
        o += MEM_IN[4 * ((t + 3) % 16): 4 * ((t + 3) % 16) + 4]
        assert len(o) == MEM_K
        out += o
    a, b = mem_acc()
    run = "kernel=k grid=1 block=%d args=%s;u32*%d;%s;%s;%s;%s" % (
        MEM_N, fmt_list("u32", MEM_IN), len(out), fmt_list("u32", ACC32_INIT), fmt_list("u64", ACC64_INIT),
        fmt_list("u32", EXCH32_INIT), fmt_list("u64", EXCH64_INIT))
    return run, [(1, "u32", out), (2, "u32", a), (3, "u64", b),
                 (4, "u32", [t * 3 for t in range(MEM_N)]), (5, "u64", [t << 20 for t in range(MEM_N)])]


# ---------------------------------------------------------------------------------------------
# 10. mma, ldmatrix, movmatrix: plain matrix products; the fragment layouts live in the kernel only
# ---------------------------------------------------------------------------------------------

MMA_TA = [[F((r * 3 + c * 5) % 9 - 4, 2) for c in range(8)] for r in range(16)]  # halves: exact in tf32
MMA_TB = [[F((k * 7 + n * 2) % 7 - 3) for n in range(8)] for k in range(8)]
MMA_TC = [[F((r + 2 * c) % 5 - 2, 4) for c in range(8)] for r in range(16)]
MMA_DA = [[F((r * 5 + c) % 11 - 5, 4) for c in range(4)] for r in range(8)]
MMA_DB = [[F((k * 3 + n * 5) % 13 - 6, 8) for n in range(8)] for k in range(4)]
MMA_DC = [[F(r - c, 16) for c in range(8)] for r in range(8)]
MMA_IA = [[((r * 37 + c * 11) % 256) - 128 for c in range(32)] for r in range(16)]
MMA_IB = [[((k * 29 + n * 13 + 7) % 256) - 128 for n in range(8)] for k in range(32)]
MMA_IC = [[(r * 1000 - c * 77) for c in range(8)] for r in range(16)]
LDM = [[[(j * 64 + r * 8 + c) * 0x0101 ^ 0x8000 for c in range(8)] for r in range(8)] for j in range(2)]


def matmul(A, B, C):
    return [[sum(A[i][k] * B[k][j] for k in range(len(B))) + C[i][j] for j in range(len(C[0]))] for i in range(len(A))]


@family("mma_matrix.ptx")
def fam_mma():
    flat = lambda M: [x for row in M for x in row]
    b32 = lambda M: [rnd(F32, num(x)) for x in flat(M)]
    b64 = lambda M: [rnd(F64, num(x)) for x in flat(M)]
    dt = b32(matmul(MMA_TA, MMA_TB, MMA_TC))
    dd = b64(matmul(MMA_DA, MMA_DB, MMA_DC))
    di = [x & M32 for x in flat(matmul(MMA_IA, MMA_IB, MMA_IC))]
    ib_colmajor = [MMA_IB[k][n] & 0xFF for n in range(8) for k in range(32)]
    ldm = []
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        L = [[LDM[j][7 - r] for r in range(8)] for j in range(2)]  # rows are addressed in reverse order
        for j in range(2):
            ldm.append(L[j][g][2 * t] | L[j][g][2 * t + 1] << 16)
        for j in range(2):
            ldm.append(L[j][2 * t][g] | L[j][2 * t + 1][g] << 16)
        ldm.append(L[0][2 * t][g] | L[0][2 * t + 1][g] << 16)  # movmatrix.trans of the first fragment
    args = [fmt_list("u32", b32(MMA_TA)), fmt_list("u32", b32(MMA_TB)), fmt_list("u32", b32(MMA_TC)),
            fmt_list("u64", b64(MMA_DA)), fmt_list("u64", b64(MMA_DB)), fmt_list("u64", b64(MMA_DC)),
            fmt_list("u8", [x & 0xFF for x in flat(MMA_IA)]), fmt_list("u8", ib_colmajor),
            fmt_list("u32", [x & M32 for x in flat(MMA_IC)]), fmt_list("u16", flat(LDM[0]) + flat(LDM[1])),
            "u32*%d" % len(dt), "u64*%d" % len(dd), "u32*%d" % len(di), "u32*%d" % len(ldm)]
    run = "kernel=k grid=1 block=32 args=" + ";".join(args)
    return run, [(10, "u32", dt), (11, "u64", dd), (12, "u32", di), (13, "u32", ldm)]


# ---------------------------------------------------------------------------------------------
# Self-test: the rounding routine against the host's IEEE double arithmetic and struct's f32/f16
# rounding (both round to nearest even), on random operands
# ---------------------------------------------------------------------------------------------


def selftest():
    import random

    rng = random.Random(5)
    checked = 0
    for _ in range(20000):
        a = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        b = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if rng.random() < 0.5:
            b = a * (1 + rng.random() * 1e-3) if math.isfinite(a) else b
        A, B = decode(F64, f64bits(a)), decode(F64, f64bits(b))
        with_py = [
            (op_add(A, B, "rn"), a + b),
            (op_mul(A, B), a * b),
        ]
        if b != 0:
            with_py.append((op_div(A, B), a / b))
        for v, want in with_py:
            got = rnd(F64, v)
            if math.isnan(want):
                assert decode(F64, got).nan
            else:
                assert got == f64bits(want), (a, b, hex(got), want)
            checked += 1
        if a >= 0 and math.isfinite(a):
            assert sqrt_round(F64, A, "rn") == f64bits(math.sqrt(a)), a
            checked += 1
        # f32 and f16: the product of two such values is exact in a double, so struct's rounding of it
        # to the narrow format is the correctly rounded product.
        for fmt, code in ((F32, "<f"), (F16, "<e")):
            x = rng.getrandbits(fmt.bits)
            y = rng.getrandbits(fmt.bits)
            X, Y = decode(fmt, x), decode(fmt, y)
            if X.nan or Y.nan or X.inf or Y.inf:
                continue
            p = math.copysign(float(X.x * Y.x), -1.0 if X.neg != Y.neg else 1.0)
            try:
                want = struct.unpack("<I" if fmt is F32 else "<H", struct.pack(code, p))[0]
            except OverflowError:
                continue
            assert rnd(fmt, op_mul(X, Y)) == want, (hex(x), hex(y))
            checked += 1
    # directed modes bracket the exact value and are one ulp apart when inexact
    for _ in range(5000):
        x, y = rng.getrandbits(32), rng.getrandbits(32)
        X, Y = decode(F32, x), decode(F32, y)
        if X.kind != "num" or Y.kind != "num" or Y.zero:
            continue
        q = op_div(X, Y)
        lo, hi = decode(F32, rnd(F32, q, "rm")), decode(F32, rnd(F32, q, "rp"))
        if lo.kind == "num" and hi.kind == "num":
            assert lo.val() <= q.val() <= hi.val()
        checked += 1
    print("selftest: %d comparisons agree" % checked)


# ---------------------------------------------------------------------------------------------
# Lane-vectorised regions: 2 CTAs of 80 threads (two groups of 32 and 16 threads on their own)
# ---------------------------------------------------------------------------------------------

LANES_GRID, LANES_BLOCK = 2, 80
LANES_IN = [(i * 37 + 11) % 97 for i in range(256)]


@family("lanes.ptx")
def fam_lanes():
    out = []
    for c in range(LANES_GRID):
        sh, rows = [], []
        for t in range(LANES_BLOCK):
            acc = 0
            for j in range(t % 7 + c):
                acc = (acc * 3 + LANES_IN[(t * 5 + j * 11) & 255]) & M32
            count = 0
            while LANES_IN[(t + count) & 255] % 13 != 0 and count < 40:
                count += 1
            q = 1000 // (t % 3) if t % 3 else 7
            sh.append((acc + count) & M32)
            rows.append([acc, count, q])
        for t in range(LANES_BLOCK):
            s = sum(sh[(t + 7 * k) % LANES_BLOCK] for k in range(4)) & M32
            out += rows[t] + [s]
    run = "kernel=k grid=%d block=%d args=u32[%s];u32*%d" % (
        LANES_GRID, LANES_BLOCK, ",".join(h(x) for x in LANES_IN), len(out))
    return run, [(1, "u32", out)]


# Warp collectives inside lane-vectorised groups: 2 CTAs of 64 x 2 threads (whole warps along x)
# ---------------------------------------------------------------------------------------------

LW_GRID, LW_BLOCK = 2, (64, 2)


@family("lanes_warp.ptx")
def fam_lanes_warp():
    n = LW_BLOCK[0] * LW_BLOCK[1]
    out = []
    for c in range(LW_GRID):
        acc = []
        for t in range(n):
            a = ((c * n + t) * 0x9E3779B9) & M32
            for i in range((t % 32) & 3):
                a = (a * 3 + i) & M32
            acc.append(a)
        for t in range(n):
            lane, base = t % 32, t - t % 32
            V = {k: acc[base + k] for k in range(32)}
            o = [acc[t]]
            o += list(shfl(V, lane, "up", 1, 0))
            o += list(shfl(V, lane, "down", 3, 31))
            o.append(shfl(V, lane, "bfly", 5, 31)[0])
            o.append(shfl(V, lane, "idx", (lane * 7) & 31, 31)[0])
            o += list(shfl(V, lane, "down", 2, 0x181F))
            o += list(shfl(V, lane, "up", 4, 0x1000))
            o.append(sum(1 << k for k in V if V[k] & 1))
            o.append(int(all(x >= 1 << 31 for x in V.values())))
            o.append(int(any(x & 255 < 8 for x in V.values())))
            o.append(1)  # tid.y is the same across a warp of 32 threads along x = 64
            s = dict(V)
            for r in (1, 2, 4):
                s = {k: (s[k] + shfl(s, k, "bfly", r, 31)[0]) & M32 for k in s}
            o.append(s[lane])
            assert len(o) == 16
            out += o
    run = "kernel=k grid=%d block=%d,%d args=u32*%d" % (LW_GRID, LW_BLOCK[0], LW_BLOCK[1], len(out))
    return run, [(0, "u32", out)]


# NaNs in lane-vectorised regions: 64 threads sum (t & 3) + 1 entries of a table with NaN payloads
# ---------------------------------------------------------------------------------------------

LANES_NAN_TABLE = [0x3F800000, 0x40000000, 0x7FA00001, 0x40800000, 0xFFC00002, 0x3F000000, 0x3E800000, 0x41000000]


@family("lanes_nan.ptx")
def fam_lanes_nan():
    sums = []
    for t in range(64):
        s = num(0)
        for i in range((t & 3) + 1):
            s = decode(F32, rnd(F32, op_add(s, decode(F32, LANES_NAN_TABLE[(t + i) & 7]), "rn")))
        sums.append(rnd(F32, s))
    out = []
    for t in range(64):
        out += [sums[t], sums[t ^ 1]]
    run = "kernel=k grid=1 block=64 args=u32[%s];u32*%d" % (",".join(h(x) for x in LANES_NAN_TABLE), len(out))
    return run, [(1, "u32", out)]


# Branches on affine comparisons in lane-vectorised groups: 2 CTAs of 96 threads
# ---------------------------------------------------------------------------------------------

LB_GRID, LB_BLOCK = 2, 96
LB_B, LB_E, LB_C, LB_N = 0x7FFFFF44, 0x7FFFFFF5, 90, 200


@family("lanes_bounds.ptx")
def fam_lanes_bounds():
    out = []
    for c in range(LB_GRID):
        for t in range(LB_BLOCK):
            s = u = w = 0
            for k in range(8):
                if s32((LB_B + 8 * c + t + 16 * k) & M32) < s32(LB_E):
                    s |= 1 << k
                if (LB_C - t - 16 * k) & M32 >= 5:
                    u |= 1 << k
                if 3 * t + k < 2 * t + 40:
                    w |= 1 << k
            n = len(range(t, LB_N, LB_BLOCK))
            out += [s, u, w, n]
    run = "kernel=k grid=%d block=%d args=u32*%d;u32:%d;u32:%d;u32:%d;u32:%d" % (
        LB_GRID, LB_BLOCK, len(out), LB_B, LB_E, LB_C, LB_N)
    return run, [(0, "u32", out)]


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------


def render(fn):
    run, outs = fn()
    lines = ["// run: " + run] + ["// out: arg%d=%s" % (n, fmt_list(ty, v)) for n, ty, v in outs]
    return lines, sum(len(v) for _, _, v in outs)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "--check"
    if mode == "--selftest":
        selftest()
        return
    bad = 0
    total = 0
    for fname, fn in FAMILIES:
        lines, n = render(fn)
        total += n
        path = os.path.join(HOST, fname)
        if mode == "--print":
            print("==", fname)
            print("\n".join(lines))
            continue
        src = open(path).read() if os.path.exists(path) else ""
        kept = [l for l in src.split("\n") if not re.match(r"\s*// (run|out):", l)]
        # directives go right after the leading comment block
        i = 0
        while i < len(kept) and kept[i].startswith("//"):
            i += 1
        new = "\n".join(kept[:i] + lines + kept[i:])
        if mode == "--write":
            if new != src:
                open(path, "w").write(new)
                print("wrote", fname)
        elif new != src:
            print("MISMATCH", fname, "(run with --write to regenerate)")
            bad += 1
        else:
            print("ok", fname, n, "values")
    if mode != "--print":
        print(total, "checked values in", len(FAMILIES), "files")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
