//! Codex's chunk placement: an `*** Update File`'s chunks applied as Codex 0.169's
//! `apply_patch` applies them ([`update`]), and located in the file they left ([`locate`]).
//! Reads and writes nothing.
//!
//! A chunk's new side (its context and `+` lines) is sought in the file after the patch; the
//! placement is accepted only when it is the one Codex's own algorithm gives (the chunks' old
//! sides put back where they were found, then the patch applied again as Codex applies it, give
//! the same file and the same places). A `+` line that only restates a `-` line of the same run
//! of changes (a line removed and put back unchanged) is not written.

use crate::patch::{Chunk, Side};
use crate::LineRanges;

/// How many places a chunk's new side may occur at before it counts as too common to place.
const MAX_CANDIDATES: usize = 16;

/// The file an `*** Update File`'s chunks make of `before` as Codex 0.169 writes it, and the
/// lines they write in it; `None` where Codex would fail (or this does not model it).
pub fn update(before: &str, chunks: &[Chunk]) -> Option<(String, LineRanges)> {
    let patched = apply(&codex_lines(before), chunks)?;
    Some((patched.content(), patched.written()))
}

/// A file's lines as Codex's `apply_patch` sees them on Unix: split at each `\n`, without the
/// empty piece after a final newline.
pub fn codex_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// How strictly two lines must agree, in the order Codex's `seek_sequence` tries.
#[derive(Clone, Copy)]
enum Strictness {
    Exact,
    TrimEnd,
    Trim,
    Normalised,
}

const STRICTNESS: [Strictness; 4] = [
    Strictness::Exact,
    Strictness::TrimEnd,
    Strictness::Trim,
    Strictness::Normalised,
];

fn agree(a: &str, b: &str, how: Strictness) -> bool {
    match how {
        Strictness::Exact => a == b,
        Strictness::TrimEnd => a.trim_end() == b.trim_end(),
        Strictness::Trim => a.trim() == b.trim(),
        // Normalising changes only characters beyond ASCII: two ASCII lines agree exactly when
        // they are equal once trimmed, most of a file's lines and most of a hook's time.
        Strictness::Normalised => agree_trimmed(a.trim(), b.trim()),
    }
}

/// [`Strictness::Normalised`] agreement of two lines already trimmed.
fn agree_trimmed(a: &str, b: &str) -> bool {
    a == b || !(a.is_ascii() && b.is_ascii()) && normalise(a).eq(normalise(b))
}

/// Codex's last resort: typographic dashes, quotes and spaces as their ASCII kin, trimmed.
fn normalise(s: &str) -> impl Iterator<Item = char> + '_ {
    s.trim().chars().map(|c| match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    })
}

fn agrees_at(lines: &[&str], at: usize, pattern: &[&str], how: Strictness) -> bool {
    pattern
        .iter()
        .enumerate()
        .all(|(i, p)| agree(lines[at + i], p, how))
}

/// Codex's `seek_sequence`: the first place at or after `start` where `pattern` occurs, exactly,
/// else ignoring trailing whitespace, else ignoring surrounding whitespace, else normalised;
/// with `eof`, only the place that ends the file.
fn seek(lines: &[&str], pattern: &[&str], start: usize, eof: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let from = if eof { last } else { start };
    // Each level's agreement implies the loosest one's: the places whose first line agrees
    // normalised are the only candidates, found in one pass (mostly none) instead of four.
    let candidates: Vec<usize> = (from..=last)
        .filter(|&at| agree(lines[at], pattern[0], Strictness::Normalised))
        .collect();
    STRICTNESS.iter().find_map(|&how| {
        candidates
            .iter()
            .copied()
            .find(|&at| agrees_at(lines, at, pattern, how))
    })
}

/// One chunk applied: where its new lines start in the new file, and which of them it wrote.
struct Segment {
    start: usize,
    written: Vec<bool>,
}

/// The chunks applied to a file as Codex 0.169 applies them.
struct Patched<'a> {
    /// The new file's lines before Codex's final newline handling.
    lines: Vec<&'a str>,
    segments: Vec<Segment>,
}

impl Patched<'_> {
    /// The new file as Codex writes it: the lines joined by newlines, ending with one.
    fn content(&self) -> String {
        let mut lines = self.lines.clone();
        if lines.last() != Some(&"") {
            lines.push("");
        }
        lines.join("\n")
    }

    /// The new file's lines as they read back from disk.
    fn final_len(&self) -> usize {
        self.lines.len() - usize::from(self.lines.last() == Some(&""))
    }

    fn written(&self) -> LineRanges {
        let len = self.final_len();
        LineRanges::of_lines(self.segments.iter().flat_map(|segment| {
            segment
                .written
                .iter()
                .enumerate()
                .filter(|(_, w)| **w)
                .map(|(i, _)| segment.start + i)
                .filter(|&line| line < len)
                .map(|line| line + 1)
        }))
    }
}

/// Where a chunk goes in the old file (its first line, how many old lines it replaces) and its
/// new lines, each with whether the chunk wrote it.
type Replacement<'a> = (usize, usize, Vec<(&'a str, bool)>);

/// Codex's `compute_replacements` and `apply_replacements`: each chunk's `@@` context and old
/// side sought from where the previous chunk ended (an old side that ends with an empty line
/// sought again without it), a chunk with no old side added at the end; `None` where Codex
/// fails, or where its replacements would overlap (which this does not model).
fn apply<'a>(original: &[&'a str], chunks: &[Chunk<'a>]) -> Option<Patched<'a>> {
    let mut replacements: Vec<Replacement<'a>> = Vec::new();
    let mut at = 0;
    for chunk in chunks {
        if let Some(context) = chunk.context {
            at = seek(original, &[context], at, false)? + 1;
        }
        let mut old = chunk.old_side();
        let mut new = new_side_written(chunk);
        if old.is_empty() {
            let end = original.len() - usize::from(original.last() == Some(&""));
            replacements.push((end, 0, new));
            continue;
        }
        let mut found = seek(original, &old, at, chunk.end_of_file);
        if found.is_none() && old.last() == Some(&"") {
            old.pop();
            if new.last().is_some_and(|(text, _)| text.is_empty()) {
                new.pop();
            }
            found = seek(original, &old, at, chunk.end_of_file);
        }
        let start = found?;
        at = start + old.len();
        replacements.push((start, old.len(), new));
    }
    replacements.sort_by_key(|(start, _, _)| *start);
    let mut lines = Vec::with_capacity(original.len());
    let mut segments = Vec::new();
    let mut copied = 0;
    for (start, old_len, new) in replacements {
        if start < copied {
            return None;
        }
        lines.extend_from_slice(&original[copied..start]);
        segments.push(Segment {
            start: lines.len(),
            written: new.iter().map(|(_, w)| *w).collect(),
        });
        lines.extend(new.iter().map(|(text, _)| *text));
        copied = start + old_len;
    }
    lines.extend_from_slice(&original[copied.min(original.len())..]);
    Some(Patched { lines, segments })
}

/// A chunk's new side, each line with whether the chunk wrote it: its `+` lines, except those
/// that only restate a `-` line of the same run of changes (matched in order, as a longest
/// common subsequence of the run's `-` and `+` lines, [`crate::diff::inserted`]).
fn new_side_written<'a>(chunk: &Chunk<'a>) -> Vec<(&'a str, bool)> {
    fn close_run<'a>(side: &mut [(&'a str, bool)], old: &mut Vec<&'a str>, new: &mut Vec<usize>) {
        if !old.is_empty() && !new.is_empty() {
            let texts: Vec<&str> = new.iter().map(|&i| side[i].0).collect();
            for (k, inserted) in crate::diff::inserted(old, &texts).into_iter().enumerate() {
                side[new[k]].1 = inserted;
            }
        }
        old.clear();
        new.clear();
    }
    let mut side: Vec<(&'a str, bool)> = Vec::new();
    let mut run_old: Vec<&'a str> = Vec::new();
    let mut run_new: Vec<usize> = Vec::new();
    for &(kind, text) in &chunk.lines {
        match kind {
            Side::Both => {
                close_run(&mut side, &mut run_old, &mut run_new);
                side.push((text, false));
            }
            Side::Old => run_old.push(text),
            Side::New => {
                run_new.push(side.len());
                side.push((text, true));
            }
        }
    }
    close_run(&mut side, &mut run_old, &mut run_new);
    side
}

/// Where a patch's chunks are in a file that may be its post-image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// Placed for sure, as Codex's own algorithm places them: the written lines.
    At(LineRanges),
    /// A chunk's new side fits more than one place its context allows: the written lines of
    /// every such place (identical text, so the same matches).
    Among(LineRanges),
    /// Some chunk's new side is nowhere in the file: it is not the post-image.
    Absent,
    /// The new sides are there, but where cannot be told.
    Unplaced,
}

/// Places each chunk's new side in `post` (the file after the patch), then checks the
/// placement: the old sides put back where the new ones were give a pre-image which Codex's
/// algorithm turns back into `post`, with every chunk where it was placed. A chunk whose new
/// side fits more than one place that way gives [`Located::Among`].
pub fn locate(post: &str, chunks: &[Chunk]) -> Located {
    locate_lines(&codex_lines(post), chunks)
}

/// The 0-based lines a chunk placed with its new side at line `q` wrote.
fn chunk_written(chunk: &Chunk, q: usize) -> Vec<usize> {
    new_side_written(chunk)
        .into_iter()
        .enumerate()
        .filter(|(_, (_, wrote))| *wrote)
        .map(|(i, _)| q + i)
        .collect()
}

fn locate_lines(post: &[&str], chunks: &[Chunk]) -> Located {
    let trimmed_post: Vec<&str> = post.iter().map(|l| l.trim()).collect();
    let mut placed: Vec<(usize, usize, usize)> = Vec::new(); // (chunk, start, new len)
    let mut appended: Vec<usize> = Vec::new();
    // The lines of chunks that fit more than one place (0-based), when any did.
    let mut among: Option<Vec<usize>> = None;
    let mut at = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        if let Some(context) = chunk.context {
            match seek(post, &[context], at, false) {
                Some(found) => at = found + 1,
                None => return Located::Absent,
            }
        }
        let old = chunk.old_side();
        let new: Vec<&str> = chunk.new_side().into_iter().map(|(text, _)| text).collect();
        if old.is_empty() {
            appended.push(index);
            continue;
        }
        if new.is_empty() {
            // It only deletes: it wrote nothing, from a place that cannot be told.
            among.get_or_insert_with(Vec::new);
            continue;
        }
        if new.len() > post.len() {
            return Located::Absent;
        }
        let last = post.len() - new.len();
        let from = if chunk.end_of_file { last } else { at };
        // One pass over the file, its lines trimmed once: where the new side's first line
        // agrees (loosely), then whether the whole new side does.
        let first = new[0].trim();
        let mut before_from = false;
        let mut candidates: Vec<usize> = Vec::new();
        for (q, line) in trimmed_post.iter().enumerate().take(last + 1) {
            if !agree_trimmed(line, first) || !agrees_at(post, q, &new, Strictness::Normalised) {
                continue;
            }
            if q < from {
                before_from = true;
            } else {
                candidates.push(q);
                if candidates.len() > MAX_CANDIDATES {
                    break;
                }
            }
        }
        if candidates.is_empty() {
            return if before_from {
                Located::Unplaced
            } else {
                Located::Absent
            };
        }
        if candidates.len() > MAX_CANDIDATES {
            return Located::Unplaced;
        }
        // Where Codex would have found the old side, had it been at `q` before the patch.
        let fits = |q: usize| {
            let mut before: Vec<&str> = Vec::with_capacity(post.len() + old.len());
            before.extend_from_slice(&post[..q]);
            before.extend_from_slice(&old);
            before.extend_from_slice(&post[q + new.len()..]);
            seek(&before, &old, at, chunk.end_of_file) == Some(q)
        };
        let fitting: Vec<usize> = candidates.into_iter().filter(|&q| fits(q)).collect();
        match fitting[..] {
            [] => return Located::Unplaced,
            [q] => placed.push((index, q, new.len())),
            _ => among
                .get_or_insert_with(Vec::new)
                .extend(fitting.iter().flat_map(|&q| chunk_written(chunk, q))),
        }
        at = fitting[0] + new.len();
    }
    // Chunks without an old side were added at the end, in order.
    let block: Vec<&str> = appended
        .iter()
        .flat_map(|&i| chunks[i].new_side().into_iter().map(|(text, _)| text))
        .collect();
    let mut ends = Vec::new();
    for blank_after in [false, true] {
        if blank_after && (block.is_empty() || post.last() != Some(&"")) {
            continue;
        }
        let end = post.len() - usize::from(blank_after);
        if block.len() <= end && post[end - block.len()..end] == block[..] {
            ends.push(end - block.len());
        }
    }
    if ends.is_empty() {
        return Located::Absent;
    }
    let unverified = |mut lines: Vec<usize>| {
        for &(index, q, _) in &placed {
            lines.extend(chunk_written(&chunks[index], q));
        }
        for &end in &ends {
            let mut block_at = end;
            for &i in &appended {
                lines.extend(chunk_written(&chunks[i], block_at));
                block_at += chunks[i].new_side().len();
            }
        }
        Located::Among(LineRanges::of_lines(lines.into_iter().map(|l| l + 1)))
    };
    if let Some(lines) = among {
        return unverified(lines);
    }
    let verified: Vec<LineRanges> = ends
        .iter()
        .filter_map(|&block_start| verify(post, chunks, &placed, &appended, block_start))
        .collect();
    match verified.len() {
        0 => Located::Unplaced,
        1 => Located::At(verified.into_iter().next().unwrap_or_default()),
        _ => unverified(Vec::new()),
    }
}

/// The written lines if the placement holds: the pre-image it implies, patched as Codex
/// patches it, gives `post` back with every chunk where it was placed.
fn verify(
    post: &[&str],
    chunks: &[Chunk],
    placed: &[(usize, usize, usize)],
    appended: &[usize],
    block_start: usize,
) -> Option<LineRanges> {
    let block_len: usize = appended.iter().map(|&i| chunks[i].new_side().len()).sum();
    let mut before: Vec<&str> = Vec::with_capacity(post.len());
    let mut copied = 0;
    for &(index, start, len) in placed {
        if start < copied {
            return None;
        }
        before.extend_from_slice(&post[copied..start]);
        before.extend(chunks[index].old_side());
        copied = start + len;
    }
    if copied > block_start && block_len > 0 {
        return None;
    }
    if block_len > 0 {
        before.extend_from_slice(&post[copied..block_start]);
        before.extend_from_slice(&post[block_start + block_len..]);
    } else {
        before.extend_from_slice(&post[copied..]);
    }
    let patched = apply(&before, chunks)?;
    // Codex drops a file's final blank line (it pops one empty line before patching and adds
    // none back); a file that still ends in blank lines was written by something else after
    // it (or replayed from git), which moves no line the patch wrote.
    fn trimmed<'l, 's>(lines: &'l [&'s str]) -> &'l [&'s str] {
        let keep = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1);
        &lines[..keep]
    }
    if trimmed(&patched.lines[..patched.final_len()]) != trimmed(post) {
        return None;
    }
    let mut expected: Vec<usize> = placed.iter().map(|&(_, start, _)| start).collect();
    let mut block_at = block_start;
    for &i in appended {
        expected.push(block_at);
        block_at += chunks[i].new_side().len();
    }
    expected.sort_unstable();
    let mut starts: Vec<usize> = patched.segments.iter().map(|s| s.start).collect();
    starts.sort_unstable();
    (starts == expected).then(|| patched.written())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse_patch;

    fn chunks(patch: &str) -> Vec<Chunk<'_>> {
        match parse_patch(patch).unwrap().remove(0) {
            crate::patch::FileOp::Update { chunks, .. } => chunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_chunk_that_fits_two_places_names_both() {
        // `a`/`X` twice after the patch: either `Y` could have become `X`.
        let patch = "*** Begin Patch\n*** Update File: J.kt\n@@\n a\n-Y\n+X\n*** End Patch";
        assert_eq!(
            locate("a\nX\na\nX\n", &chunks(patch)),
            Located::Among(LineRanges::of_lines([2, 4]))
        );
        // The context allows one of them only: placed for sure.
        let patch = "*** Begin Patch\n*** Update File: J.kt\n@@ b\n a\n-Y\n+X\n*** End Patch";
        assert_eq!(
            locate("a\nX\nb\na\nX\n", &chunks(patch)),
            Located::At(LineRanges::of_lines([5]))
        );
    }

    #[test]
    fn a_new_side_nowhere_is_absent_and_one_only_before_its_context_is_unplaced() {
        let patch = "*** Begin Patch\n*** Update File: J.kt\n@@\n a\n-Y\n+X\n*** End Patch";
        assert_eq!(locate("a\nY\n", &chunks(patch)), Located::Absent);
        let patch = "*** Begin Patch\n*** Update File: J.kt\n@@ z\n a\n-Y\n+X\n*** End Patch";
        assert_eq!(locate("a\nX\nz\n", &chunks(patch)), Located::Unplaced);
    }

    #[test]
    fn an_update_is_applied_as_codex_applies_it() {
        let patch = "*** Begin Patch\n*** Update File: J.kt\n@@\n a\n-b\n+B\n+b\n*** End Patch";
        let (content, lines) = update("a\nb\nc", &chunks(patch)).unwrap();
        assert_eq!(content, "a\nB\nb\nc\n");
        assert_eq!(
            lines,
            LineRanges::of_lines([2]),
            "b was put back, not written"
        );
        assert_eq!(update("x\n", &chunks(patch)), None);
    }

    /// Codex's algorithm run forward on random files and patches of one or two chunks (some
    /// with an `@@` context line): wherever the placement on the post-image answers, it answers
    /// what the patch wrote.
    #[test]
    fn located_lines_are_always_the_ones_codex_wrote() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let words = ["a", "b", "c", "  a", "}", ""];
        let (mut answered, mut cases, mut among, mut among_with_truth) = (0, 0, 0, 0);
        while cases < 4000 {
            let len = 2 + next(14) as usize;
            let file: Vec<&str> = (0..len)
                .map(|_| words[next(words.len() as u64) as usize])
                .collect();
            let mut chunks = Vec::new();
            let mut from = 0;
            for _ in 0..1 + next(2) {
                if from >= len {
                    break;
                }
                let at = from + next((len - from) as u64) as usize;
                let end = (at + 1 + next(3) as usize).min(len);
                let context = (at > from && next(3) == 0).then(|| file[at - 1]);
                let mut lines = Vec::new();
                for (i, line) in file[at..end].iter().enumerate() {
                    let side = if i == 0 || next(2) == 0 {
                        Side::Both
                    } else {
                        Side::Old
                    };
                    lines.push((side, *line));
                }
                for _ in 0..1 + next(2) {
                    let spot = next(lines.len() as u64 + 1) as usize;
                    lines.insert(spot, (Side::New, ["x", "b", "y"][next(3) as usize]));
                }
                chunks.push(Chunk {
                    context,
                    lines,
                    end_of_file: false,
                });
                from = end;
            }
            let Some(patched) = apply(&file, &chunks) else {
                continue;
            };
            cases += 1;
            let content = patched.content();
            let post = codex_lines(&content);
            let plus: Vec<&str> = chunks
                .iter()
                .flat_map(|c| {
                    c.lines
                        .iter()
                        .filter(|(s, _)| *s == Side::New)
                        .map(|(_, t)| *t)
                })
                .collect();
            match locate(&content, &chunks) {
                Located::At(lines) => {
                    answered += 1;
                    assert_eq!(lines, patched.written(), "{file:?} {chunks:?} → {post:?}");
                }
                Located::Among(lines) => {
                    among += 1;
                    // Every line named holds the text of a `+` line: the same matches.
                    for &[first, last] in lines.as_slice() {
                        for line in first..=last {
                            assert!(
                                plus.contains(&post[line - 1]),
                                "{file:?} {chunks:?} → {post:?}: {line}"
                            );
                        }
                    }
                    if patched.written().union(&lines) == lines {
                        among_with_truth += 1;
                    }
                }
                Located::Absent | Located::Unplaced => {}
            }
        }
        assert!(answered > cases / 2, "placed {answered} of {cases}");
        assert!(among > 0, "no case fit more than one place");
        assert!(
            among_with_truth * 10 >= among * 9,
            "{among_with_truth} of {among} held the truth"
        );
    }
}
