//! Machine-readable diagnostics: one JSON object per diagnostic, and SARIF 2.1.0 for code-scanning
//! tools. Positions are 1-based lines and columns (columns count characters), end exclusive.

use crate::diag::{Code, Diagnostic, Severity};
use crate::span::{LineIndex, Span};
use serde_json::{json, Value};

fn region(idx: &LineIndex<'_>, s: Span) -> (usize, usize, usize, usize) {
    let (l, c) = idx.line_col(s.start);
    let (el, ec) = idx.line_col(s.end.max(s.start));
    (l, c, el, ec)
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// `{file, code, severity, message, line, column, end_line, end_column, labels, help, note}`; the
/// primary label is first in `labels`. `idx` is the file's [`LineIndex`].
pub fn json(d: &Diagnostic, file: &str, idx: &LineIndex<'_>) -> Value {
    let (line, column, end_line, end_column) = region(idx, d.span);
    let label = |s: Span, m: &str, primary: bool| {
        let (l, c, el, ec) = region(idx, s);
        json!({"line": l, "column": c, "end_line": el, "end_column": ec, "message": m, "primary": primary})
    };
    let mut labels = vec![label(d.span, d.label.as_deref().unwrap_or(""), true)];
    labels.extend(d.secondary.iter().map(|(s, m)| label(*s, m, false)));
    json!({
        "file": file,
        "code": d.code.as_str(),
        "severity": severity(d.severity),
        "message": d.message,
        "line": line,
        "column": column,
        "end_line": end_line,
        "end_column": end_column,
        "labels": labels,
        "help": d.help,
        "note": d.note,
    })
}

/// One SARIF 2.1.0 log for a whole run: `files` pairs each file name with its text and diagnostics.
pub fn sarif(files: &[(String, String, Vec<Diagnostic>)]) -> Value {
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.as_str(),
                "name": c.title(),
                "shortDescription": {"text": c.title()},
                "fullDescription": {"text": c.explanation()},
                "help": {"text": c.explanation()},
            })
        })
        .collect();
    let mut results = vec![];
    for (file, src, diags) in files {
        let idx = LineIndex::new(src);
        for d in diags {
            let loc = |s: Span, msg: Option<&str>| {
                let (l, c, el, ec) = region(&idx, s);
                let mut v = json!({"physicalLocation": {
                    "artifactLocation": {"uri": file},
                    "region": {"startLine": l, "startColumn": c, "endLine": el, "endColumn": ec}
                }});
                if let Some(m) = msg {
                    v["message"] = json!({"text": m});
                }
                v
            };
            let mut text = d.message.clone();
            if let Some(h) = &d.help {
                text.push_str(&format!("\nhelp: {h}"));
            }
            results.push(json!({
                "ruleId": d.code.as_str(),
                "ruleIndex": Code::ALL.iter().position(|c| *c == d.code),
                "level": severity(d.severity),
                "message": {"text": text},
                "locations": [loc(d.span, d.label.as_deref())],
                "relatedLocations": d.secondary.iter().enumerate().map(|(k, (s, m))| {
                    let mut v = loc(*s, Some(m));
                    v["id"] = json!(k);
                    v
                }).collect::<Vec<_>>(),
            }));
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "ptx-jit",
                "informationUri": "https://github.com/ptx-jit/ptx-jit",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = ".version 8.5\n.target sm_90\n.entry k {\n  .reg .b32 %r<2>;\n  add.u23 %r1, %r1, 1;\n}\n";

    #[test]
    fn json_fields() {
        let (_, d) = crate::parse_and_check(SRC);
        let v = json(&d[0], "k.ptx", &LineIndex::new(SRC));
        assert_eq!(v["code"], "P0102");
        assert_eq!(v["severity"], "error");
        assert_eq!((v["line"].as_u64(), v["column"].as_u64()), (Some(5), Some(6)));
        assert_eq!((v["end_line"].as_u64(), v["end_column"].as_u64()), (Some(5), Some(10)));
        assert_eq!(v["help"], "did you mean `.u32`?");
        assert_eq!(v["labels"][0]["primary"], true);
    }

    #[test]
    fn sarif_shape() {
        let (_, d) = crate::parse_and_check(SRC);
        let log = sarif(&[("k.ptx".into(), SRC.into(), d)]);
        assert_eq!(log["version"], "2.1.0");
        let r = &log["runs"][0]["results"][0];
        assert_eq!(r["ruleId"], "P0102");
        assert_eq!(r["level"], "error");
        assert_eq!(r["locations"][0]["physicalLocation"]["region"]["startLine"], 5);
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(log["runs"][0]["tool"]["driver"]["rules"][idx]["id"], "P0102");
    }
}
