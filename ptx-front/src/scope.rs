//! Name resolution shared by the checker and the lowering: module symbols, function registers
//! (including `%r<N>` ranges) and nested `{ }` blocks.

use crate::ast::*;
use crate::types::Type;
use std::collections::HashMap;

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

/// Special registers and the components they take. `None` means no component.
pub fn special_register(name: &str) -> Option<bool> {
    match name {
        "%tid" | "%ntid" | "%ctaid" | "%nctaid" => Some(true),
        "%laneid" | "%warpid" | "%nwarpid" | "%smid" | "%nsmid" | "%gridid" | "%clock" | "%clock64"
        | "%lanemask_eq" | "%lanemask_le" | "%lanemask_lt" | "%lanemask_ge" | "%lanemask_gt" | "%globaltimer"
        | "%dynamic_smem_size" | "WARP_SZ" => Some(false),
        _ => None,
    }
}

impl<'m, 'a> Scope<'m, 'a> {
    /// The module level: variables and functions, declared in any order.
    pub fn module(m: &'m Module<'a>) -> (Self, Vec<(&'m Name<'a>, Entry<'m, 'a>)>) {
        let mut s = Scope {
            levels: vec![Level::default()],
            next_id: 0,
        };
        let mut dups = vec![];
        for item in &m.items {
            let (name, e) = match item {
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
            next_id: 0,
        }
    }

    pub fn push(&mut self) {
        self.levels.push(Level::default());
    }
    pub fn pop(&mut self) {
        self.levels.pop();
    }

    /// Declares a function-local name; returns the earlier entry in the same block on a duplicate.
    pub fn declare(&mut self, d: &'m VarDecl<'a>) -> Result<Entry<'m, 'a>, Entry<'m, 'a>> {
        let e = if d.space == crate::types::Space::Reg {
            let id = self.next_id;
            self.next_id += d.range.unwrap_or(1);
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
        let split = split_indexed(name);
        for lvl in self.levels.iter().rev() {
            if let Some(e) = lvl.names.get(name) {
                return Some(*e);
            }
            if let Some((prefix, i)) = split {
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

/// Collects the labels of a function body (labels are function-scoped, whatever block they are in).
pub fn labels<'m, 'a>(
    body: &'m [Statement<'a>],
    out: &mut HashMap<&'a str, &'m Name<'a>>,
    dups: &mut Vec<(&'m Name<'a>, &'m Name<'a>)>,
) {
    visit(body, &mut |s| {
        if let Statement::Label(n) = s {
            if let Some(prev) = out.insert(n.text, n) {
                dups.push((n, prev));
            }
        }
    });
}

/// Label names in source order (for deterministic output).
pub fn label_order<'a>(body: &[Statement<'a>], out: &mut Vec<&'a str>) {
    visit(body, &mut |s| {
        if let Statement::Label(n) = s {
            out.push(n.text);
        }
    });
}
