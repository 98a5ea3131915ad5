//! [`LineRanges`]: the lines an edit wrote in one file, as sorted, merged `[first, last]` ranges
//! (1-based, inclusive). Reads and writes nothing.

/// Sorted, merged (neither overlapping nor adjacent) 1-based inclusive line ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LineRanges(Vec<[usize; 2]>);

impl LineRanges {
    /// No line.
    pub fn new() -> LineRanges {
        LineRanges(Vec::new())
    }

    /// Every line of a file of `count` lines: `[[1, count]]`, or none for an empty file.
    pub fn all(count: usize) -> LineRanges {
        LineRanges(if count == 0 {
            Vec::new()
        } else {
            vec![[1, count]]
        })
    }

    /// Line numbers given in any order, repeated or not; line 0 is no line.
    pub fn of_lines(lines: impl IntoIterator<Item = usize>) -> LineRanges {
        LineRanges::of_ranges(lines.into_iter().map(|line| [line, line]))
    }

    /// Ranges given in any order, overlapping or not; a range with `first == 0` or
    /// `first > last` is dropped.
    pub fn of_ranges(ranges: impl IntoIterator<Item = [usize; 2]>) -> LineRanges {
        let mut ranges: Vec<[usize; 2]> = ranges
            .into_iter()
            .filter(|&[first, last]| first > 0 && first <= last)
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<[usize; 2]> = Vec::with_capacity(ranges.len());
        for [first, last] in ranges {
            match merged.last_mut() {
                Some(prev) if first <= prev[1].saturating_add(1) => prev[1] = prev[1].max(last),
                _ => merged.push([first, last]),
            }
        }
        LineRanges(merged)
    }

    /// The ranges, ascending.
    pub fn as_slice(&self) -> &[[usize; 2]] {
        &self.0
    }

    /// Whether no line is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many ranges the set holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether any of the lines `first..=last` is in the set.
    pub fn overlaps(&self, first: usize, last: usize) -> bool {
        // The first range that ends at or after `first`.
        let i = self.0.partition_point(|r| r[1] < first);
        self.0.get(i).is_some_and(|r| r[0] <= last)
    }

    /// The lines of both sets.
    pub fn union(&self, other: &LineRanges) -> LineRanges {
        LineRanges::of_ranges(self.0.iter().chain(&other.0).copied())
    }
}

impl From<Vec<[usize; 2]>> for LineRanges {
    /// Sorted and merged, as [`LineRanges::of_ranges`] takes them.
    fn from(ranges: Vec<[usize; 2]>) -> Self {
        LineRanges::of_ranges(ranges)
    }
}

impl PartialEq<[[usize; 2]]> for LineRanges {
    fn eq(&self, other: &[[usize; 2]]) -> bool {
        self.0 == other
    }
}

impl<const N: usize> PartialEq<[[usize; 2]; N]> for LineRanges {
    fn eq(&self, other: &[[usize; 2]; N]) -> bool {
        self.0 == other
    }
}

impl PartialEq<Vec<[usize; 2]>> for LineRanges {
    fn eq(&self, other: &Vec<[usize; 2]>) -> bool {
        &self.0 == other
    }
}

impl From<LineRanges> for Vec<[usize; 2]> {
    fn from(lines: LineRanges) -> Self {
        lines.0
    }
}

/// How many lines `text` has: its newlines, and one more for a last line without one.
pub fn line_count(text: &[u8]) -> usize {
    let newlines = text.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with(b"\n"))
}

/// The 1-based line that byte `at` of `text` is on.
pub fn line_of(text: &[u8], at: usize) -> usize {
    1 + text[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_sorted_merged_and_checked() {
        let r = LineRanges::of_ranges([[5, 6], [1, 2], [3, 3], [9, 8], [0, 4], [10, 12], [11, 11]]);
        assert_eq!(r.as_slice(), [[1, 3], [5, 6], [10, 12]]);
        assert_eq!(
            LineRanges::of_lines([4, 2, 3, 3, 7, 0]).as_slice(),
            [[2, 4], [7, 7]]
        );
        assert_eq!(LineRanges::all(0), LineRanges::new());
        assert_eq!(LineRanges::all(3).as_slice(), [[1, 3]]);
        assert_eq!(
            r.union(&LineRanges::of_lines([7, 8, 9])).as_slice(),
            [[1, 3], [5, 12]]
        );
    }

    #[test]
    fn overlaps_finds_any_line_in_the_span() {
        let r = LineRanges::of_ranges([[3, 4], [10, 10]]);
        assert!(r.overlaps(1, 3) && r.overlaps(4, 9) && r.overlaps(10, 20));
        assert!(!r.overlaps(1, 2) && !r.overlaps(5, 9) && !r.overlaps(11, 30));
        assert!(!LineRanges::new().overlaps(1, usize::MAX));
    }

    #[test]
    fn lines_are_counted_as_an_editor_shows_them() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a"), 1);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
        assert_eq!(line_of(b"a\nb\nc", 2), 2);
        assert_eq!(line_of(b"a\nb\nc", 0), 1);
    }
}
