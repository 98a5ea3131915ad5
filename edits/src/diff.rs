//! The one line diff: the lines of the file after a change that are not in a longest common
//! subsequence with the file before it (Myers' O(ND) diff over interned lines, after the common
//! head and tail are trimmed). Reads and writes nothing.
//!
//! Bounded: past [`MAX_EDIT_DISTANCE`] insertions and deletions the whole middle (between the
//! common head and tail) counts as written, which over-states, never under-states.

use std::collections::HashMap;
use std::hash::Hash;

use crate::LineRanges;

/// Past this many inserted plus deleted lines, the diff stops looking for the shortest script
/// and counts the middle as written: its memory grows with the square of this.
pub const MAX_EDIT_DISTANCE: usize = 1000;

/// The line ranges of `after` that are not in `before`. A change that only deletes lines wrote
/// none. Lines end at `\n`; a last line without one is a line, and a final newline added or
/// removed changes no line.
pub fn written_lines(before: &[u8], after: &[u8]) -> LineRanges {
    let inserted = inserted(&lines(before), &lines(after));
    LineRanges::of_lines(
        inserted
            .iter()
            .enumerate()
            .filter_map(|(i, &ins)| ins.then_some(i + 1)),
    )
}

/// For each item of `new`, whether it is inserted: not part of a longest common subsequence
/// with `old` (common head and tail first kept, the rest by Myers' diff); past
/// [`MAX_EDIT_DISTANCE`] every item between the common head and tail counts as inserted.
pub fn inserted<T: Eq + Hash>(old: &[T], new: &[T]) -> Vec<bool> {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_mid, new_mid) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut out = vec![false; new.len()];
    let mid = myers(old_mid, new_mid).unwrap_or_else(|| vec![true; new_mid.len()]);
    out[head..head + mid.len()].copy_from_slice(&mid);
    out
}

/// The lines of `content`, without their newlines.
pub fn lines(content: &[u8]) -> Vec<&[u8]> {
    if content.is_empty() {
        return Vec::new();
    }
    let body = content.strip_suffix(b"\n").unwrap_or(content);
    body.split(|&b| b == b'\n').collect()
}

/// For each line of `new`, whether it is inserted (not part of the longest common
/// subsequence with `old`), or `None` past [`MAX_EDIT_DISTANCE`].
fn myers<T: Eq + Hash>(old: &[T], new: &[T]) -> Option<Vec<bool>> {
    if old.is_empty() || new.is_empty() {
        return Some(vec![true; new.len()]);
    }
    // Lines compared as small integers.
    let mut ids: HashMap<&T, u32> = HashMap::new();
    let mut a = Vec::with_capacity(old.len());
    let mut b = Vec::with_capacity(new.len());
    for (lines, out) in [(old, &mut a), (new, &mut b)] {
        for line in lines {
            let next = ids.len() as u32;
            out.push(*ids.entry(line).or_insert(next));
        }
    }
    let (n, m) = (a.len() as i64, b.len() as i64);
    let max = (n + m).min(MAX_EDIT_DISTANCE as i64);
    let offset = max + 1;
    let mut v = vec![0i64; 2 * offset as usize + 1];
    // For each d, the furthest x on diagonals -d-1..=d+1 before step d: what walking the path
    // back needs, and no more (the whole of `v` per step would be quadratic in `max`).
    let mut trace: Vec<Vec<i32>> = Vec::new();
    let mut found = None;
    'search: for d in 0..=max {
        let (lo, hi) = ((offset - d - 1).max(0) as usize, (offset + d + 1) as usize);
        trace.push(
            v[lo..=hi.min(v.len() - 1)]
                .iter()
                .map(|&x| x as i32)
                .collect(),
        );
        let mut k = -d;
        while k <= d {
            let at = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[at - 1] < v[at + 1]) {
                v[at + 1]
            } else {
                v[at - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'search;
            }
            k += 2;
        }
    }
    let mut d = found?;
    // Walk back from (n, m): every step down (y + 1, x unchanged) is an inserted line.
    let mut inserted = vec![false; new.len()];
    // (The snake back to the point just after each step's edit needs no walking: the step's
    // start is read from the trace.)
    let (mut x, mut y) = (n, m);
    while d > 0 {
        let before = &trace[d as usize];
        let lo = (offset - d - 1).max(0);
        let at = |k: i64| i64::from(before[(k + offset - lo) as usize]);
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        if down {
            inserted[prev_y as usize] = true;
        }
        x = prev_x;
        y = prev_y;
        d -= 1;
    }
    Some(inserted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(before: &str, after: &str) -> Vec<[usize; 2]> {
        written_lines(before.as_bytes(), after.as_bytes()).into()
    }

    #[test]
    fn a_changed_line_is_written_and_the_rest_is_not() {
        assert_eq!(w("a\nb\nc\n", "a\nB\nc\n"), [[2, 2]]);
        assert_eq!(w("a\nb\nc\n", "a\nb\nc\n"), Vec::<[usize; 2]>::new());
        assert_eq!(
            w("a\nb\nc\n", "a\nc\n"),
            Vec::<[usize; 2]>::new(),
            "a deletion"
        );
        assert_eq!(w("a\nc\n", "a\nb1\nb2\nc\n"), [[2, 3]]);
        assert_eq!(w("", "x\ny\n"), [[1, 2]]);
        assert_eq!(
            w("a\nb", "a\nb\n"),
            Vec::<[usize; 2]>::new(),
            "a final newline"
        );
        assert_eq!(w("a\n", "z\na\n"), [[1, 1]]);
    }

    #[test]
    fn scattered_changes_are_found_each() {
        let before: String = (1..=500).map(|i| format!("line {i}\n")).collect();
        let after: String = (1..=500)
            .map(|i| {
                if i % 100 == 0 {
                    format!("LINE {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        assert_eq!(
            w(&before, &after),
            [[100, 100], [200, 200], [300, 300], [400, 400], [500, 500]]
        );
        // Moved blocks: the shorter side moves.
        assert_eq!(w("a\nb\nc\nd\n", "c\nd\na\nb\n"), [[3, 4]]);
        // Either `x` may be the kept one: one shortest script is as good as another.
        assert_eq!(w("x\na\nx\n", "x\nx\nb\nx\n"), [[2, 3]]);
    }

    #[test]
    fn past_the_bound_the_middle_counts_as_written() {
        let before: String = (0..1500).map(|i| format!("{i}\n")).collect();
        let after: String = (0..1500).map(|i| format!("{i}x\n")).collect();
        let mut with_ends = String::from("head\n");
        with_ends.push_str(&after);
        with_ends.push_str("tail\n");
        let mut before_ends = String::from("head\n");
        before_ends.push_str(&before);
        before_ends.push_str("tail\n");
        assert_eq!(w(&before_ends, &with_ends), [[2, 1501]]);
    }

    /// The script is a shortest one: its inserted lines and the lines kept form `new`, and the
    /// number kept is the longest common subsequence's length (checked by a plain DP).
    #[test]
    fn the_lines_kept_are_a_longest_common_subsequence() {
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let old: Vec<String> = (0..(next() % 12))
                .map(|_| (next() % 4).to_string())
                .collect();
            let new: Vec<String> = (0..(next() % 12))
                .map(|_| (next() % 4).to_string())
                .collect();
            let (o, n): (Vec<&[u8]>, Vec<&[u8]>) = (
                old.iter().map(|s| s.as_bytes()).collect(),
                new.iter().map(|s| s.as_bytes()).collect(),
            );
            let inserted = myers(&o, &n).unwrap();
            let kept: Vec<&[u8]> = n
                .iter()
                .zip(&inserted)
                .filter(|(_, &ins)| !ins)
                .map(|(l, _)| *l)
                .collect();
            let mut dp = vec![vec![0usize; n.len() + 1]; o.len() + 1];
            for i in 0..o.len() {
                for j in 0..n.len() {
                    dp[i + 1][j + 1] = if o[i] == n[j] {
                        dp[i][j] + 1
                    } else {
                        dp[i][j + 1].max(dp[i + 1][j])
                    };
                }
            }
            assert_eq!(kept.len(), dp[o.len()][n.len()], "{old:?} → {new:?}");
            // `kept` is a subsequence of `old`.
            let mut rest = o.iter();
            assert!(
                kept.iter().all(|k| rest.any(|l| l == k)),
                "{old:?} → {new:?}"
            );
        }
    }
}
