//! Diagnostics: stable codes, spans, labels, notes and fix hints, rendered with ariadne (or, on very
//! long lines, as a window around each label: see `long_line`).

mod long_line;

use crate::span::{line_col, LineIndex, Span};
use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

macro_rules! codes {
    ($($code:ident => $title:literal, $explain:literal;)*) => {
        /// Stable diagnostic codes. Each has a title and an explanation for `ptx-jit explain`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code { $($code),* }
        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$code),*];
            pub fn as_str(self) -> &'static str { match self { $(Code::$code => stringify!($code)),* } }
            pub fn title(self) -> &'static str { match self { $(Code::$code => $title),* } }
            pub fn explanation(self) -> &'static str { match self { $(Code::$code => $explain),* } }
            /// The code named `s` (any case), as `explain` and `--allow` take it.
            pub fn parse(s: &str) -> Option<Code> {
                Self::ALL.iter().copied().find(|c| c.as_str().eq_ignore_ascii_case(s))
            }
        }
    };
}

codes! {
    P0001 => "unexpected character",
    "The text contains a character that cannot start any PTX token.\n\nWrong:\n    add.s32 %r1, %r2, #3;\nRight:\n    add.s32 %r1, %r2, 3;";
    P0002 => "syntax error",
    "The tokens do not form a valid PTX statement or directive. Parsing resumes at the next `;` or `}`.\n\nWrong:\n    add.s32 %r1 %r2, 3;\nRight:\n    add.s32 %r1, %r2, 3;";
    P0101 => "unknown instruction",
    "The opcode is not a PTX instruction known to ptx-jit's ISA table.\n\nWrong:\n    addd.s32 %r1, %r2, %r3;\nRight:\n    add.s32 %r1, %r2, %r3;";
    P0102 => "invalid modifier",
    "A modifier (the `.xxx` parts after an opcode) is not allowed on this instruction, or is given twice, or conflicts with another of its group.\n\nWrong:\n    add.u23 %r1, %r2, %r3;\nRight:\n    add.u32 %r1, %r2, %r3;";
    P0103 => "missing modifier",
    "The instruction needs a modifier it does not have, usually its type.\n\nWrong:\n    add %r1, %r2, %r3;\nRight:\n    add.s32 %r1, %r2, %r3;";
    P0104 => "wrong number of operands",
    "The instruction has more or fewer operands than its form takes.\n\nWrong:\n    add.s32 %r1, %r2;\nRight:\n    add.s32 %r1, %r2, %r3;";
    P0105 => "wrong kind of operand",
    "An operand is of the wrong kind: for example an immediate where a destination register is needed, or a register where an address in brackets is needed.\n\nWrong:\n    ld.global.f32 %f1, %rd1;\nRight:\n    ld.global.f32 %f1, [%rd1];";
    P0201 => "undefined name",
    "A register, variable, parameter or function is used but never declared in scope.\n\nWrong:\n    .reg .b32 %r<4>;\n    mov.u32 %r4, 0;\nRight:\n    .reg .b32 %r<5>;\n    mov.u32 %r4, 0;";
    P0202 => "duplicate declaration",
    "A name is declared twice in the same scope.\n\nWrong:\n    .reg .b32 %x;\n    .reg .f32 %x;\nRight:\n    .reg .b32 %x;\n    .reg .f32 %y;";
    P0203 => "undefined label",
    "A branch targets a label that does not exist in the function.\n\nWrong:\n    bra DONE;\nRight:\n    bra DONE;\n    ...\nDONE:\n    ret;";
    P0204 => "operand type mismatch",
    "A register's declared type is not compatible with the instruction type. Sizes must agree, and a float register can only meet a float or bit-size instruction type (PTX ISA, Operand Size).\n\nWrong:\n    .reg .f32 %f1;\n    add.s32 %r1, %f1, 1;\nRight:\n    .reg .f32 %f1;\n    add.f32 %f2, %f1, 0f3F800000;";
    P0205 => "state space mismatch",
    "A variable is accessed through an instruction of another state space.\n\nWrong:\n    .global .u32 g;\n    ld.shared.u32 %r1, [g];\nRight:\n    .global .u32 g;\n    ld.global.u32 %r1, [g];";
    P0206 => "invalid declaration",
    "A variable declaration breaks a rule of the state space or type: an alignment that is not a power of two, a vector wider than 128 bits, or an initializer with more elements than the array.\n\nWrong:\n    .global .align 3 .u32 x;\n    .global .u32 a[2] = {1, 2, 3};\nRight:\n    .global .align 4 .u32 x;\n    .global .u32 a[3] = {1, 2, 3};";
    P0207 => "exceeds a hardware limit",
    "The module asks for more than the hardware allows, with ptxas's limits: a kernel's parameters (4,352 bytes before PTX 8.1, 32,764 from it), a kernel's static shared memory (48 KiB; more must be dynamic shared memory, given at launch), a `.param` variable of 4 GiB or more, or a variable beyond a 48-bit address space.\n\nWrong:\n    .shared .align 4 .b8 tile[65536];\nRight:\n    .extern .shared .align 4 .b8 tile[];";
    P0301 => "needs a newer PTX version or target",
    "The instruction or one of its modifiers needs a higher `.version` or `.target` than the module declares.\n\nWrong:\n    .version 6.0\n    .target sm_50\n    fma.rn.bf16 %h1, %h2, %h3, %h4;\nRight:\n    .version 7.8\n    .target sm_90\n    fma.rn.bf16 %h1, %h2, %h3, %h4;";
    P0302 => "bad module header",
    "`.version` must come first and `.target` must follow it; both are required, and `.address_size` may only be 32 or 64.\n\nWrong:\n    .target sm_90\nRight:\n    .version 8.5\n    .target sm_90\n    .address_size 64";
    P0501 => "unused register",
    "A register is declared but no instruction reads or writes it (for a `%r<N>` range: none of its registers). Warning.\n\nWrong:\n    .reg .b32 %tmp;\n    ret;\nRight:\n    ret;";
    P0502 => "unused label",
    "No branch, branch-target list or debug section refers to the label. Warning.\n\nWrong:\nSKIP:\n    ret;\nRight:\n    ret;";
    P0503 => "unreachable code",
    "No path from the function's entry reaches the instruction: it follows an unconditional `bra`, `ret` or `exit` and no label leads to it. Warning.\n\nWrong:\n    ret;\n    add.s32 %r1, %r1, 1;\nRight:\n    add.s32 %r1, %r1, 1;\n    ret;";
    P0504 => "register read before it is written",
    "No path from the function's entry writes the register before this read, so its value is undefined. Warning.\n\nWrong:\n    .reg .b32 %r<3>;\n    add.s32 %r2, %r1, 1;\nRight:\n    .reg .b32 %r<3>;\n    mov.u32 %r1, 0;\n    add.s32 %r2, %r1, 1;";
    P0505 => "barrier under thread-dependent control flow",
    "A CTA barrier (`bar.sync`, `barrier.sync`, `bar.red`) sits under a branch or guard whose predicate depends on `%tid`, `%laneid` or another per-thread value. Threads that take the other path never arrive, so the others wait forever (or the behaviour is undefined). Warning.\n\nWrong:\n    mov.u32 %r1, %tid.x;\n    setp.lt.u32 %p1, %r1, 32;\n    @%p1 bar.sync 0;\nRight:\n    bar.sync 0;";
    P0506 => "member mask differs between threads",
    "The member mask of a warp collective (`shfl.sync`, `vote.sync`, `match.sync`, `redux.sync`, `bar.warp.sync`) is computed from a per-thread value. Every thread named in the mask must execute the instruction with the same mask. Warning.\n\nWrong:\n    mov.u32 %r1, %laneid;\n    shl.b32 %r2, 1, %r1;\n    vote.sync.any.pred %p2, %p1, %r2;\nRight:\n    vote.sync.any.pred %p2, %p1, 0xffffffff;";
    P0507 => "deprecated form refused by NVIDIA's tools",
    "The instruction is valid PTX of an older ISA, but NVIDIA's ptxas refuses it for the module's target and version: `shfl` and `vote` without `.sync` on sm_70 and later from PTX 6.4. ptx-jit still accepts and runs it. Warning.\n\nWrong:\n    .version 7.0\n    .target sm_70\n    vote.ballot.b32 %r1, %p1;\nRight:\n    vote.sync.ballot.b32 %r1, %p1, 0xffffffff;";
    P0508 => "immediate does not fit its operand",
    "An integer immediate has more bits than the operand's type; ptxas keeps the low bits silently. Warning.\n\nWrong:\n    add.u16 %rs1, %rs2, 70000;\nRight:\n    add.u16 %rs1, %rs2, 4464;";
    P0509 => "non-ASCII character",
    "The text has a character outside ASCII, here in a comment or string where the grammar allows it. ptxas and ptx-jit accept it, but NVIDIA's driver JIT (`cuModuleLoadData` on a GPU) refuses the whole module. Warning.\n\nWrong:\n    // a café's kernel\nRight:\n    // a cafe's kernel";
    P0510 => "query NVIDIA's driver refuses for objects",
    "`txq` and `suq` on a texture or surface object (a `.u64` handle in a register) other than `.width`, `.height` and `.depth` (and `txq.level`'s): valid PTX that ptxas compiles and ptx-jit runs, but NVIDIA's driver refuses. Measured on an H200 (driver 580.159.04): a kernel with such a `txq` fails at its lookup (`CUDA_ERROR_NOT_FOUND`; at `cuModuleLoadData` when loading is eager), a module with such a `suq` at load (`CUDA_ERROR_NOT_SUPPORTED`). Warning.\n\nWrong:\n    txq.normalized_coords.b32 %r1, [%rd1];\nRight:\n    pass what the kernel needs to know about the texture as a kernel parameter"
    ;
    P0401 => "not supported by this backend yet",
    "The PTX is valid, but ptx-jit cannot lower this instruction or form for the requested backend yet. The message names the instruction; see README.md for what works today.";
    P0403 => "does not fit in the device's memory",
    "The module's `.global` and `.const` variables together need more memory than the device presents (for the CPU backend, half of the host's physical memory). Loading it through the driver fails with CUDA_ERROR_OUT_OF_MEMORY.\n\nWrong:\n    .global .align 8 .b8 table[1099511627776];\nRight:\n    allocate the buffer with cuMemAlloc and pass its address as a kernel parameter";
    P0404 => "calls a function no module defines",
    "A `.func` declared `.extern` (or without a body) is called, but the module does not define it, and it is not one of the device runtime's functions (`vprintf`, `malloc`, `free`, `__assertfail`). A separately compiled module must be linked with the one that defines it (cuLinkAddData, nvJitLink) before it is loaded, as NVIDIA's driver requires.\n\nWrong:\n    .extern .func helper ();\n    ... call helper, ();   // in a module loaded on its own\nRight:\n    link the module that defines `helper` with this one, then load the linked image";
    P0402 => "invalid target or PTX version",
    "The requested sm_XX and PTX version are not a pair that LLVM's NVPTX backend and the PTX ISA allow, for example sm_90 with PTX 7.0 (sm_90 needs PTX 7.8).";
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    pub label: Option<String>,
    pub secondary: Vec<(Span, String)>,
    pub note: Option<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            secondary: vec![],
            note: None,
            help: None,
        }
    }
    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Self::error(code, span, message)
        }
    }
    pub fn label(mut self, l: impl Into<String>) -> Self {
        self.label = Some(l.into());
        self
    }
    pub fn secondary(mut self, span: Span, l: impl Into<String>) -> Self {
        self.secondary.push((span, l.into()));
        self
    }
    pub fn note(mut self, n: impl Into<String>) -> Self {
        self.note = Some(n.into());
        self
    }
    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.help = Some(h.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders in rustc style. `color` should be true only when writing to a terminal.
    pub fn render(&self, file: &str, src: &str, color: bool) -> String {
        self.render_in(file, &LineIndex::new(src), &Source::from(src), color)
    }

    /// Renders many diagnostics of one file, indexing its lines once (rendering each with a fresh
    /// index would be quadratic in a file with thousands of diagnostics).
    pub fn render_all(diags: &[Diagnostic], file: &str, src: &str, color: bool) -> String {
        let mut out = String::new();
        Self::render_each(diags, file, src, color, |r| out.push_str(r));
        out
    }

    /// Like [`Diagnostic::render_all`], handing each rendering to `f` as it is made, so that printing
    /// a huge number of diagnostics needs no memory for all of them.
    pub fn render_each(diags: &[Diagnostic], file: &str, src: &str, color: bool, mut f: impl FnMut(&str)) {
        let (idx, source) = (LineIndex::new(src), Source::from(src));
        for d in diags {
            f(&d.render_in(file, &idx, &source, color));
        }
    }

    /// ariadne prints every line a label touches in full, so a label on a line of megabytes (a huge
    /// initializer) would print megabytes; such diagnostics show a window of each line instead.
    fn render_in(&self, file: &str, idx: &LineIndex<'_>, source: &Source<&str>, color: bool) -> String {
        if long_line::touches_long_line(self, idx) {
            return long_line::render(self, file, idx, color);
        }
        let src = idx.src();
        let kind = match self.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
        };
        let clamp = |s: Span| {
            let len = src.len();
            let (a, b) = ((s.start as usize).min(len), (s.end as usize).min(len));
            (file, a..b.max(a))
        };
        let primary_color = if self.severity == Severity::Error {
            Color::Red
        } else {
            Color::Yellow
        };
        let mut r = Report::build(kind, clamp(self.span))
            .with_config(Config::default().with_color(color).with_index_type(IndexType::Byte))
            .with_code(self.code.as_str())
            .with_message(&self.message)
            .with_label({
                let l = Label::new(clamp(self.span)).with_color(primary_color).with_order(0);
                match &self.label {
                    Some(m) => l.with_message(m),
                    None => l,
                }
            });
        for (i, (s, m)) in self.secondary.iter().enumerate() {
            r = r.with_label(
                Label::new(clamp(*s))
                    .with_message(m)
                    .with_color(Color::Blue)
                    .with_order(i as i32 + 1),
            );
        }
        if let Some(n) = &self.note {
            r = r.with_note(n);
        }
        if let Some(h) = &self.help {
            r = r.with_help(h);
        }
        let mut out = Vec::new();
        let _ = r.finish().write((file, source), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// One line, `file:line:col: error[P0201]: message`, for logs such as the CUDA JIT error log.
    pub fn one_line(&self, file: &str, src: &str) -> String {
        let (l, c) = line_col(src, self.span.start);
        let sev = if self.is_error() { "error" } else { "warning" };
        let mut s = format!("{file}:{l}:{c}: {sev}[{}]: {}", self.code.as_str(), self.message);
        if let Some(h) = &self.help {
            s.push_str(&format!(" (help: {h})"));
        }
        s
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be a plausible typo.
pub fn nearest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (word.len() / 3).max(1);
    candidates
        .into_iter()
        // The distance is at least the difference in length: skip the costly ones that cannot win.
        .filter(|c| c.len().abs_diff(word.len()) <= limit)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, c)| (d, c.len()))
        .map(|(_, c)| c)
}

/// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions, the commonest typo
/// (`.u23` for `.u32`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, x) in d.iter_mut().enumerate().take(w) {
        *x = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_finds_typos() {
        assert_eq!(nearest(".u23", [".u32", ".s32", ".f32"]), Some(".u32"));
        assert_eq!(nearest("%rd", ["%r", "%rd1"]), Some("%r"));
        assert_eq!(nearest(".zzzzzz", [".u32"]), None);
    }

    #[test]
    fn codes_round_trip() {
        for c in Code::ALL {
            assert_eq!(Code::parse(c.as_str()), Some(*c));
            assert!(c.explanation().contains("Wrong") || *c == Code::P0401 || *c == Code::P0402);
        }
    }
}
