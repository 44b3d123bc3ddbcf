/// A byte range in the source text. `u32` keeps AST nodes small; PTX files over 4 GiB are not a use case.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

/// `@12..15`: short, and easy to strip when comparing trees regardless of position.
impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "@{}..{}", self.start, self.end)
    }
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(src: &str, offset: u32) -> (usize, usize) {
    let mut off = (offset as usize).min(src.len());
    while !src.is_char_boundary(off) {
        off -= 1;
    }
    let before = &src[..off];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Byte offsets where the lines of `src` start.
pub fn line_starts(src: &str) -> Vec<u32> {
    std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i as u32 + 1))
        .collect()
}

/// 1-based line of byte offset `at`, given the text's [`line_starts`].
pub fn line_of(starts: &[u32], at: u32) -> usize {
    starts.partition_point(|&start| start <= at)
}

/// Line starts of a text, built once, for converting many offsets (a file's diagnostics) to lines and
/// columns in logarithmic time instead of rescanning the text for each.
pub struct LineIndex<'s> {
    src: &'s str,
    starts: Vec<u32>,
    ascii: bool,
}

impl<'s> LineIndex<'s> {
    pub fn new(src: &'s str) -> Self {
        LineIndex {
            src,
            starts: line_starts(src),
            ascii: src.is_ascii(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset, as [`line_col`] computes them.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let mut off = (offset as usize).min(self.src.len());
        while !self.src.is_char_boundary(off) {
            off -= 1;
        }
        let line = line_of(&self.starts, off as u32);
        let start = self.starts[line - 1] as usize;
        let col = if self.ascii {
            off - start
        } else {
            self.src[start..off].chars().count()
        };
        (line, col + 1)
    }

    /// The 0-based line of a byte offset (offsets past the end are on the last line).
    pub fn line(&self, offset: u32) -> usize {
        line_of(&self.starts, offset) - 1
    }

    /// The byte range of a 0-based line, without its line break.
    pub fn line_range(&self, line: usize) -> std::ops::Range<usize> {
        let start = self.starts[line] as usize;
        let end = self.starts.get(line + 1).map_or(self.src.len(), |&s| s as usize - 1);
        let end = if self.src.as_bytes()[start..end].ends_with(b"\r") {
            end - 1
        } else {
            end
        };
        start..end
    }

    pub fn src(&self) -> &'s str {
        self.src
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_agrees_with_the_scan() {
        let src = "ab\nçd\n\nxyz";
        let idx = LineIndex::new(src);
        for off in 0..=src.len() as u32 + 2 {
            assert_eq!(idx.line_col(off), line_col(src, off), "offset {off}");
        }
    }

    #[test]
    fn lines_and_their_ranges() {
        let src = "ab\r\nçd\n\nxyz";
        let idx = LineIndex::new(src);
        let lines: Vec<&str> = (0..4).map(|l| &src[idx.line_range(l)]).collect();
        assert_eq!(lines, ["ab", "çd", "", "xyz"]);
        assert_eq!(
            [0, 3, 4, 7, 8, 9, 12, 99].map(|o| idx.line(o)),
            [0, 0, 1, 1, 2, 3, 3, 3]
        );
    }
}
