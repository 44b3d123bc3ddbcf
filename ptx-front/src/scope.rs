//! Name resolution shared by the checker and the lowering: module symbols, function registers
//! (including `%r<N>` ranges) and nested `{ }` blocks.

use crate::ast::*;
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;

#[derive(Clone, Copy, Debug)]
pub enum Entry<'m, 'a> {
    /// A register; `id` is unique within the function, so shadowing blocks get their own storage.
    Reg {
        ty: Type,
        vector: Option<u32>,
        id: u32,
        decl: &'m VarDecl<'a>,
    },
    Var(&'m VarDecl<'a>),
    Func(&'m Function<'a>),
}

#[derive(Default)]
struct Level<'m, 'a> {
    names: HashMap<&'a str, Entry<'m, 'a>>,
    /// `%r<N>` declarations: prefix → (N, entry of element 0).
    ranges: HashMap<&'a str, (u32, Entry<'m, 'a>)>,
}

pub struct Scope<'m, 'a> {
    levels: Vec<Level<'m, 'a>>,
    next_id: u32,
    /// The numbers module-level registers take (fragments only): each function's start after them.
    module_ids: u32,
}

/// Splits `%rd12` into (`%rd`, 12).
pub fn split_indexed(name: &str) -> Option<(&str, u32)> {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits == name.len() {
        return None;
    }
    let (p, n) = name.split_at(name.len() - digits);
    if n.len() > 1 && n.starts_with('0') {
        return None; // `%r01` is not an element of `%r<N>`
    }
    Some((p, n.parse().ok()?))
}

/// A special register (PTX ISA chapter 10): its type, and whether it is a vector read through `.x`,
/// `.y`, `.z` (or whole by `mov.v4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sreg {
    pub ty: Type,
    pub vector: bool,
    /// Legacy code may read the low bits with a narrower `mov` or `cvt` (the manual allows it for
    /// `%tid`, `%ntid`, `%ctaid`, `%nctaid` and `%gridid`).
    pub narrow: bool,
}

pub fn special_register(name: &str) -> Option<Sreg> {
    use Type::*;
    let scalar = |ty| {
        Some(Sreg {
            ty,
            vector: false,
            narrow: false,
        })
    };
    match name {
        "%tid" | "%ntid" | "%ctaid" | "%nctaid" => Some(Sreg {
            ty: U32,
            vector: true,
            narrow: true,
        }),
        "%clusterid" | "%nclusterid" | "%cluster_ctaid" | "%cluster_nctaid" => Some(Sreg {
            ty: U32,
            vector: true,
            narrow: false,
        }),
        "%gridid" => Some(Sreg {
            ty: U64,
            vector: false,
            narrow: true,
        }),
        "%laneid" | "%warpid" | "%nwarpid" | "%smid" | "%nsmid" | "%cluster_ctarank" | "%cluster_nctarank"
        | "%lanemask_eq" | "%lanemask_le" | "%lanemask_lt" | "%lanemask_ge" | "%lanemask_gt" | "%clock"
        | "%clock_hi" | "%globaltimer_lo" | "%globaltimer_hi" | "%total_smem_size" | "%aggr_smem_size"
        | "%dynamic_smem_size" => scalar(U32),
        "%clock64" | "%globaltimer" | "%current_graph_exec" => scalar(U64),
        "%is_explicit_cluster" => scalar(Pred),
        "%reserved_smem_offset_begin" | "%reserved_smem_offset_end" | "%reserved_smem_offset_cap" => scalar(B32),
        _ => {
            // Numbered families: %pm0–%pm7, %pm0_64–%pm7_64, %envreg0–%envreg31, %reserved_smem_offset_0/1.
            // Every instruction's register operands come here (`%r12`), so the families are told apart
            // by prefix before any number is read.
            if !["%pm", "%envreg", "%reserved_smem_offset_"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                return None;
            }
            let pm64 = name
                .strip_suffix("_64")
                .and_then(split_indexed)
                .filter(|(p, _)| *p == "%pm");
            let (prefix, n) = match pm64 {
                Some((_, n)) => ("%pm_64", n),
                None => split_indexed(name)?,
            };
            match (prefix, n) {
                ("%pm", 0..=7) => scalar(U32),
                ("%pm_64", 0..=7) => scalar(U64),
                ("%envreg", 0..=31) => scalar(B32),
                ("%reserved_smem_offset_", 0..=1) => scalar(B32),
                _ => None,
            }
        }
    }
}

/// The PTX version that introduced a special register, where it is later than 2.0 (PTX ISA manual,
/// chapter 10, each register's "PTX ISA Notes").
pub fn special_register_ptx(name: &str) -> (u32, u32) {
    match name {
        "%reserved_smem_offset_begin" | "%reserved_smem_offset_end" | "%reserved_smem_offset_cap" => (7, 6),
        "%aggr_smem_size" => (8, 1),
        "%current_graph_exec" => (8, 0),
        "%dynamic_smem_size" | "%total_smem_size" => (4, 1),
        "%clusterid"
        | "%nclusterid"
        | "%cluster_ctaid"
        | "%cluster_nctaid"
        | "%cluster_ctarank"
        | "%cluster_nctarank"
        | "%is_explicit_cluster" => (7, 8),
        "%globaltimer" | "%globaltimer_lo" | "%globaltimer_hi" => (3, 1),
        "%nwarpid" | "%nsmid" => (2, 0),
        n if n.starts_with("%reserved_smem_offset_") => (7, 6),
        n if n.starts_with("%pm") && n.ends_with("_64") => (4, 0),
        n if n.starts_with("%pm") && n[3..].parse::<u32>().is_ok_and(|k| k >= 4) => (3, 0),
        _ => (1, 0),
    }
}

impl<'m, 'a> Scope<'m, 'a> {
    /// The module level: variables and functions, declared in any order.
    pub fn module(m: &'m Module<'a>) -> (Self, Vec<(&'m Name<'a>, Entry<'m, 'a>)>) {
        let mut s = Scope {
            levels: vec![Level::default()],
            next_id: 0,
            module_ids: 0,
        };
        let mut dups = vec![];
        for item in &m.items {
            let (name, e) = match item {
                // Only fragments have module-level registers.
                Item::Var(v) if v.space == crate::types::Space::Reg => {
                    let id = s.next_id;
                    s.next_id = s.next_id.saturating_add(v.range.unwrap_or(1));
                    let e = Entry::Reg {
                        ty: v.ty,
                        vector: v.vector,
                        id,
                        decl: v,
                    };
                    if let Some(n) = v.range {
                        s.levels[0].ranges.insert(v.name.text, (n, e));
                        continue;
                    }
                    (&v.name, e)
                }
                Item::Var(v) => (&v.name, Entry::Var(v)),
                Item::Function(f) => (&f.name, Entry::Func(f)),
                Item::Directive(_) | Item::Statement(_) => continue,
            };
            // A declaration (prototype) followed by its definition is one function.
            let prev = s.levels[0].names.insert(name.text, e);
            if let (Some(Entry::Func(a)), Entry::Func(b)) = (prev, e) {
                if a.body.is_none() || b.body.is_none() {
                    if b.body.is_none() {
                        s.levels[0].names.insert(name.text, Entry::Func(a));
                    }
                    continue;
                }
            }
            if let Some(p) = prev {
                dups.push((name, p));
            }
        }
        s.module_ids = s.next_id;
        (s, dups)
    }

    /// A scope for one function body whose outer level is a copy of the module level.
    pub fn module_child(m: &Scope<'m, 'a>) -> Self {
        let l = &m.levels[0];
        Scope {
            levels: vec![Level {
                names: l.names.clone(),
                ranges: l.ranges.clone(),
            }],
            next_id: m.module_ids,
            module_ids: m.module_ids,
        }
    }

    /// How many register numbers module-scope declarations take (a function's are numbered after).
    pub fn module_registers(&self) -> u32 {
        self.module_ids
    }

    pub fn push(&mut self) {
        self.levels.push(Level::default());
    }

    /// Enters a function body: a new level, and register numbers that start again (they are numbered
    /// per function, densely).
    pub fn push_function(&mut self) {
        self.push();
        self.next_id = self.module_ids;
    }
    pub fn pop(&mut self) {
        self.levels.pop();
    }

    /// Declares a function-local name; returns the earlier entry in the same block on a duplicate.
    pub fn declare(&mut self, d: &'m VarDecl<'a>) -> Result<Entry<'m, 'a>, Entry<'m, 'a>> {
        let e = if d.space == crate::types::Space::Reg {
            let id = self.next_id;
            self.next_id = self.next_id.saturating_add(d.range.unwrap_or(1));
            Entry::Reg {
                ty: d.ty,
                vector: d.vector,
                id,
                decl: d,
            }
        } else {
            Entry::Var(d)
        };
        let lvl = self.levels.last_mut().expect("scope has a level");
        if let Some(n) = d.range {
            if let Some(&(_, prev)) = lvl.ranges.get(d.name.text) {
                return Err(prev);
            }
            lvl.ranges.insert(d.name.text, (n, e));
        } else if let Some(&prev) = lvl.names.get(d.name.text) {
            return Err(prev);
        } else {
            lvl.names.insert(d.name.text, e);
        }
        Ok(e)
    }

    pub fn lookup(&self, name: &str) -> Option<Entry<'m, 'a>> {
        // Splitting `%r12` is only needed when the plain name misses, which is the common case for
        // `%r<N>` ranges but not for named registers and variables.
        let mut split = None;
        for lvl in self.levels.iter().rev() {
            if let Some(e) = lvl.names.get(name) {
                return Some(*e);
            }
            if lvl.ranges.is_empty() {
                continue;
            }
            if let Some((prefix, i)) = *split.get_or_insert_with(|| split_indexed(name)) {
                if let Some(&(n, e)) = lvl.ranges.get(prefix) {
                    if i < n {
                        return Some(match e {
                            Entry::Reg { ty, vector, id, decl } => Entry::Reg {
                                ty,
                                vector,
                                id: id + i,
                                decl,
                            },
                            other => other,
                        });
                    }
                }
            }
        }
        None
    }

    /// Names a typo could have meant: declared names, and for ranges the last valid element.
    pub fn candidates(&self) -> Vec<String> {
        let mut v = vec![];
        for lvl in &self.levels {
            v.extend(lvl.names.keys().map(|k| k.to_string()));
            for (p, (n, _)) in &lvl.ranges {
                if *n > 0 {
                    v.push(format!("{p}{}", n - 1));
                }
                v.push(p.to_string());
            }
        }
        v
    }

    /// The range declaration a name like `%r7` would belong to, when it is out of range.
    pub fn range_for(&self, name: &str) -> Option<(u32, &'m VarDecl<'a>)> {
        let (prefix, _) = split_indexed(name)?;
        self.levels.iter().rev().find_map(|l| {
            l.ranges.get(prefix).and_then(|&(n, e)| match e {
                Entry::Reg { decl, .. } | Entry::Var(decl) => Some((n, decl)),
                Entry::Func(_) => None,
            })
        })
    }
}

/// The labels of a function body, each use resolved as nested `{ }` blocks scope them: a label is
/// visible in the block that declares it (before and after its place) and in the blocks inside, where
/// a label of the same name hides it. Inline assembly wraps each expansion in a block of its own, so
/// one function may hold many labels of one name (CUTLASS's `DONE:` after every mbarrier wait, say);
/// ptxas takes that, and so do we.
#[derive(Debug, Default)]
pub struct Labels<'m, 'a> {
    /// Every label, in source order.
    pub defs: Vec<&'m Name<'a>>,
    /// A second label of a name in one block, with the first.
    pub dups: Vec<(&'m Name<'a>, &'m Name<'a>)>,
    /// The label each name of a branch, call or target list stands for, by the name's place in the text.
    uses: HashMap<u32, &'m Name<'a>>,
}

impl<'m, 'a> Labels<'m, 'a> {
    pub fn of(body: &'m [Statement<'a>]) -> Self {
        let mut out = Labels {
            defs: vec![],
            dups: vec![],
            uses: HashMap::default(),
        };
        visit(body, &mut |s| {
            if let Statement::Label(n) = s {
                out.defs.push(n);
            }
        });
        out.block(body, &mut vec![]);
        out
    }

    fn block(&mut self, body: &'m [Statement<'a>], open: &mut Vec<HashMap<&'a str, &'m Name<'a>>>) {
        let mut here: HashMap<&'a str, &'m Name<'a>> = HashMap::default();
        for s in body {
            if let Statement::Label(n) = s {
                if let Some(prev) = here.insert(n.text, n) {
                    self.dups.push((n, prev));
                }
            }
        }
        open.push(here);
        for s in body {
            let mut resolve = |n: &Name<'a>| {
                if let Some(def) = open.iter().rev().find_map(|l| l.get(n.text)) {
                    self.uses.insert(n.span.start, def);
                }
            };
            match s {
                // Only branches (and calls, through prototypes) name labels.
                Statement::Inst(i) if matches!(i.opcode.text, "bra" | "brx" | "call") => {
                    i.operands.iter().for_each(|o| o.names(&mut resolve))
                }
                Statement::Directive(Directive::Targets { targets, .. }) => targets.iter().for_each(resolve),
                Statement::Block(b, _) => self.block(b, open),
                _ => {}
            }
        }
        open.pop();
    }

    /// The places (span starts) of the names that a visible label answers.
    pub fn resolved(&self) -> impl Iterator<Item = u32> + '_ {
        self.uses.keys().copied()
    }

    /// The label a name in an operand or target list stands for, if a visible label has its name.
    pub fn resolve(&self, n: &Name<'_>) -> Option<&'m Name<'a>> {
        self.uses.get(&n.span.start).copied()
    }
}
