//! Codex's `apply_patch` grammar: a patch parsed once into file operations ([`parse_patch`],
//! [`resolved_ops`]) and the files it leaves ([`targets`]); the patches a shell script feeds to
//! `apply_patch`; Codex's result summary. Reads: the text handed in. Writes: nothing.

use std::ops::Range;

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File:";
const UPDATE_FILE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const SUMMARY_HEADER: &str = "Success. Updated the following files:";

/// One file operation of a patch, read as Codex's `apply_patch` parser reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum FileOp<'a> {
    /// `*** Add File`: the new file's lines.
    Add { path: &'a str, lines: Vec<&'a str> },
    /// `*** Delete File`.
    Delete { path: &'a str },
    /// `*** Update File`, with an optional `*** Move to`, and its chunks in order.
    Update {
        path: &'a str,
        move_to: Option<&'a str>,
        chunks: Vec<Chunk<'a>>,
    },
}

/// One chunk of an `*** Update File`: an optional `@@ context` line that narrows where it
/// applies, its lines in order, and whether it must apply at the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub context: Option<&'a str>,
    pub lines: Vec<(Side, &'a str)>,
    pub end_of_file: bool,
}

/// Which side of a chunk a line belongs to: a context line (` `, or an empty line) to both, a
/// `-` line to the old side, a `+` line to the new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Both,
    Old,
    New,
}

impl Chunk<'_> {
    /// The chunk's old side: its context and `-` lines.
    pub fn old_side(&self) -> Vec<&str> {
        self.side(Side::Old)
    }

    /// The chunk's new side: its context and `+` lines, each with whether it is a `+` line.
    pub fn new_side(&self) -> Vec<(&str, bool)> {
        self.lines
            .iter()
            .filter(|(side, _)| *side != Side::Old)
            .map(|&(side, text)| (text, side == Side::New))
            .collect()
    }

    fn side(&self, other: Side) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|(side, _)| *side == Side::Both || *side == other)
            .map(|&(_, text)| text)
            .collect()
    }
}

const DELETE_FILE: &str = "*** Delete File:";
const END_OF_FILE: &str = "*** End of File";

/// The file operations of `patch` (the text from its first `*** Begin Patch` line to the next
/// `*** End Patch` line, or the whole text when it has no `*** Begin Patch` line), as Codex
/// 0.169's lenient parser reads them, or `None` where Codex would reject the patch: an unknown
/// header, an update without chunks, a chunk that is neither context nor `+`/`-` lines. Paths
/// are trimmed.
pub fn parse_patch(patch: &str) -> Option<Vec<FileOp<'_>>> {
    let bounded = patch.lines().any(|line| line.trim() == BEGIN_PATCH);
    let mut lines = patch
        .lines()
        .skip_while(|line| bounded && line.trim() != BEGIN_PATCH)
        .skip(usize::from(bounded));
    let body: Vec<&str> = lines
        .by_ref()
        .take_while(|line| line.trim() != END_PATCH)
        .collect();
    let mut ops = Vec::new();
    let mut rest = &body[..];
    while let Some(first) = rest.first() {
        let header = first.trim();
        rest = &rest[1..];
        if let Some(path) = header_path(header, ADD_FILE) {
            let count = rest.iter().take_while(|l| l.starts_with('+')).count();
            let added = rest[..count].iter().map(|l| &l[1..]).collect();
            ops.push(FileOp::Add { path, lines: added });
            rest = &rest[count..];
        } else if let Some(path) = header_path(header, DELETE_FILE) {
            ops.push(FileOp::Delete { path });
        } else if let Some(path) = header_path(header, UPDATE_FILE) {
            let move_to = rest.first().and_then(|l| header_path(l.trim(), MOVE_TO));
            if move_to.is_some() {
                rest = &rest[1..];
            }
            let mut chunks = Vec::new();
            loop {
                let skip = rest.iter().take_while(|l| l.trim().is_empty()).count();
                rest = &rest[skip..];
                match rest.first() {
                    None => break,
                    Some(line) if line.starts_with('*') => break,
                    Some(_) => {}
                }
                let (chunk, used) = parse_chunk(rest, chunks.is_empty())?;
                chunks.push(chunk);
                rest = &rest[used..];
            }
            if chunks.is_empty() {
                return None;
            }
            ops.push(FileOp::Update {
                path,
                move_to,
                chunks,
            });
        } else {
            return None;
        }
    }
    Some(ops)
}

/// One chunk at the start of `lines` and how many lines it took; as Codex reads it, the first
/// chunk of a file may leave out its `@@` line.
fn parse_chunk<'a>(lines: &[&'a str], first: bool) -> Option<(Chunk<'a>, usize)> {
    let (context, start) = match lines.first()? {
        &"@@" => (None, 1),
        line => match line.strip_prefix("@@ ") {
            Some(context) => (Some(context), 1),
            None if first => (None, 0),
            None => return None,
        },
    };
    let mut chunk = Chunk {
        context,
        lines: Vec::new(),
        end_of_file: false,
    };
    let mut used = start;
    for &line in &lines[start..] {
        if line == END_OF_FILE {
            if chunk.lines.is_empty() {
                return None;
            }
            chunk.end_of_file = true;
            used += 1;
            break;
        }
        let side = match line.chars().next() {
            None => Side::Both,
            Some(' ') => Side::Both,
            Some('+') => Side::New,
            Some('-') => Side::Old,
            Some(_) if chunk.lines.is_empty() => return None,
            Some(_) => break,
        };
        chunk.lines.push((side, line.get(1..).unwrap_or("")));
        used += 1;
    }
    if chunk.lines.is_empty() {
        return None;
    }
    Some((chunk, used))
}

/// The path after a header marker, trimmed; `None` if the line is another header or names no path.
fn header_path<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.strip_prefix(marker)
        .map(str::trim)
        .filter(|path| !path.is_empty())
}

/// The added (`A`) and modified (`M`) paths of Codex's `Success. Updated the following files:`
/// summary, as written. Deleted (`D`) paths are left out; the list ends at the first line that
/// is not a summary entry, so later output cannot leak in.
pub fn summary_targets(summary: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut in_summary = false;
    for line in summary.lines() {
        let line = line.trim_end();
        if line.trim_start() == SUMMARY_HEADER {
            in_summary = true;
            continue;
        }
        if !in_summary || line.is_empty() {
            continue;
        }
        if let Some(path) = line.strip_prefix("A ").or_else(|| line.strip_prefix("M ")) {
            let path = path.trim();
            if !path.is_empty() {
                targets.push(path);
            }
        } else if !line.starts_with("D ") {
            in_summary = false;
        }
    }
    targets
}

/// One patch that a shell command feeds to `apply_patch`.
#[derive(Debug, PartialEq, Eq)]
pub struct ShellPatch<'a> {
    /// The directory of a leading `cd DIR &&`, unquoted, if there was one: the patch's relative
    /// paths are relative to it.
    pub dir: Option<&'a str>,
    /// The patch, from `*** Begin Patch` through `*** End Patch`.
    pub patch: &'a str,
}

/// The patches a shell script hands to `apply_patch` (or its alias `applypatch`): as a heredoc
/// (`apply_patch <<'EOF'`, `<<EOF`, `<<"EOF"`, `<<-EOF`), optionally after `cd DIR &&`, or as a
/// quoted argument. Text in which no `*** Begin Patch` follows the invocation is ignored, so a
/// command that merely mentions `apply_patch` (a `grep`, say) yields nothing.
pub fn shell_patches(script: &str) -> Vec<ShellPatch<'_>> {
    let mut patches = Vec::new();
    let mut line_start = 0;
    while line_start < script.len() {
        let line_end = script[line_start..]
            .find('\n')
            .map_or(script.len(), |i| line_start + i);
        let line = &script[line_start..line_end];
        let Some(at) = invocation(line) else {
            line_start = line_end + 1;
            continue;
        };
        let dir = cd_prefix(&line[..at]);
        line_start = match heredoc_delimiter(line) {
            Some(delimiter) => {
                let body_start = (line_end + 1).min(script.len());
                let body_end = heredoc_end(script, body_start, delimiter);
                if let Some(span) = patch_span(&script[body_start..body_end]) {
                    let patch = &script[body_start + span.start..body_start + span.end];
                    patches.push(ShellPatch { dir, patch });
                }
                // The heredoc body is data, not commands: go on after its delimiter line.
                next_line_start(script, body_end)
            }
            // Without a heredoc the patch can only be an argument that starts right after the
            // command word; a patch further down belongs to some other command.
            None => match patch_span(&script[line_start + at..]).filter(|span| {
                script[line_start + at..][..span.start]
                    .matches('\n')
                    .count()
                    <= 1
            }) {
                Some(span) => {
                    let (start, end) = (line_start + at + span.start, line_start + at + span.end);
                    patches.push(ShellPatch {
                        dir,
                        patch: &script[start..end],
                    });
                    next_line_start(script, end)
                }
                None => line_end + 1,
            },
        };
    }
    patches
}

/// The offset just past the first newline at or after `at`, or the end of `script`.
fn next_line_start(script: &str, at: usize) -> usize {
    script[at..].find('\n').map_or(script.len(), |i| at + i + 1)
}

/// The byte offset in `line` of an `apply_patch`/`applypatch` command word, if any.
fn invocation(line: &str) -> Option<usize> {
    for name in ["apply_patch", "applypatch"] {
        let mut from = 0;
        while let Some(i) = line[from..].find(name) {
            let at = from + i;
            let before_ok = line[..at]
                .chars()
                .next_back()
                .is_none_or(|c| c.is_whitespace() || ";&|(`'\"/".contains(c));
            let after_ok = line[at + name.len()..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || ";&|)<'\"".contains(c));
            if before_ok && after_ok {
                return Some(at);
            }
            from = at + name.len();
        }
    }
    None
}

/// The heredoc delimiter word on `line`, with its quotes removed. A here-string (`<<<`) is not
/// a heredoc.
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let at = line.find("<<")?;
    let rest = &line[at + 2..];
    if rest.starts_with('<') {
        return None;
    }
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word = match rest.chars().next()? {
        quote @ ('\'' | '"') => {
            let inner = &rest[1..];
            &inner[..inner.find(quote)?]
        }
        _ => {
            let end = rest
                .find(|c: char| c.is_whitespace() || ";&|)<>".contains(c))
                .unwrap_or(rest.len());
            &rest[..end]
        }
    };
    (!word.is_empty()).then_some(word)
}

/// Where the heredoc body that starts at `body_start` ends: the start of the line holding only
/// `delimiter` (leading tabs allowed, for `<<-`), or the end of the script.
fn heredoc_end(script: &str, body_start: usize, delimiter: &str) -> usize {
    let mut at = body_start;
    for line in script[body_start..].split_inclusive('\n') {
        if line.trim() == delimiter {
            return at;
        }
        at += line.len();
    }
    script.len()
}

/// Where in `text` the patch lies: from its first `*** Begin Patch` through the following
/// `*** End Patch`, or to the end of `text` if the patch is unterminated.
fn patch_span(text: &str) -> Option<Range<usize>> {
    let start = text.find(BEGIN_PATCH)?;
    let end = text[start..]
        .find(END_PATCH)
        .map_or(text.len(), |i| start + i + END_PATCH.len());
    Some(start..end)
}

/// The directory of a `cd DIR &&` (or `cd DIR;`) directly before the invocation, unquoted.
fn cd_prefix(before: &str) -> Option<&str> {
    let before = before.trim_end();
    let before = before
        .strip_suffix("&&")
        .or_else(|| before.strip_suffix(';'))?;
    // Only the command right before `apply_patch` matters: `set -e; cd x && apply_patch`.
    let last = before.rsplit([';', '&', '|', '\n']).next()?.trim();
    let dir = last.strip_prefix("cd")?;
    if !dir.starts_with([' ', '\t']) {
        return None;
    }
    let dir = dir.trim();
    let unquoted = ['\'', '"'].iter().find_map(|&q| {
        dir.strip_prefix(q)
            .and_then(|d| d.strip_suffix(q))
            .filter(|_| dir.len() >= 2)
    });
    Some(unquoted.unwrap_or(dir)).filter(|d| !d.is_empty())
}

/// What one file operation of a patch does, its paths resolved against the directory `base`
/// (see [`resolved_ops`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedOp<'a> {
    /// `path` added with `lines`.
    Add { path: String, lines: Vec<&'a str> },
    /// `path` deleted.
    Delete { path: String },
    /// `source` updated by `chunks` and left at `target` (`source` itself unless moved).
    Update {
        source: String,
        target: String,
        chunks: Vec<Chunk<'a>>,
    },
}

/// The paths, as resolved, that exist after the operations: added files, updated files and
/// the destinations of moved files, in order; deleted files and moved files' sources are gone.
pub fn targets<'o>(ops: &'o [ResolvedOp<'_>]) -> impl Iterator<Item = &'o str> {
    ops.iter().filter_map(|op| match op {
        ResolvedOp::Add { path, .. } => Some(path.as_str()),
        ResolvedOp::Update { target, .. } => Some(target.as_str()),
        ResolvedOp::Delete { .. } => None,
    })
}

/// The file operations of `patch` ([`parse_patch`]; none where Codex would reject it), their
/// paths resolved against `base`: an operation whose path, or whose `*** Move to`, does not
/// resolve is left out.
pub fn resolved_ops<'a>(patch: &'a str, base: Option<&str>) -> Vec<ResolvedOp<'a>> {
    let resolve = |path| crate::paths::resolve(base, path);
    let Some(ops) = parse_patch(patch) else {
        return Vec::new();
    };
    ops.into_iter()
        .filter_map(|op| match op {
            FileOp::Add { path, lines } => Some(ResolvedOp::Add {
                path: resolve(path)?,
                lines,
            }),
            FileOp::Delete { path } => Some(ResolvedOp::Delete {
                path: resolve(path)?,
            }),
            FileOp::Update {
                path,
                move_to,
                chunks,
            } => {
                let source = resolve(path)?;
                let target = match move_to {
                    Some(to) => resolve(to)?,
                    None => source.clone(),
                };
                Some(ResolvedOp::Update {
                    source,
                    target,
                    chunks,
                })
            }
        })
        .collect()
}

/// The patch of an `apply_patch PATCH` (or `applypatch PATCH`) argv, if it is one.
pub fn argv_patch(argv: &[String]) -> Option<&str> {
    match argv {
        [program, patch, ..] if matches!(program.as_str(), "apply_patch" | "applypatch") => {
            Some(patch.as_str())
        }
        _ => None,
    }
}

/// The patches a shell script runs ([`shell_patches`]), each with the directory its relative
/// paths are relative to: its `cd DIR`'s, resolved against `base`, or `base` itself.
pub fn shell_patches_in<'a>(script: &'a str, base: Option<&str>) -> Vec<(&'a str, Option<String>)> {
    shell_patches(script)
        .into_iter()
        .map(|shell_patch| {
            let dir = match shell_patch.dir {
                Some(dir) => crate::paths::resolve_dir(base, dir),
                None => base.map(str::to_owned),
            };
            (shell_patch.patch, dir)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files a patch leaves, as written (resolved against `/`, then the `/` taken off).
    fn patch_targets(patch: &str) -> Vec<String> {
        let ops = resolved_ops(patch, Some("/"));
        targets(&ops).map(|p| p[1..].to_owned()).collect()
    }

    #[test]
    fn patch_targets_keep_adds_updates_and_move_destinations() {
        let patch = "*** Begin Patch\n\
                     *** Add File: a.txt\n+hello\n\
                     *** Update File: old.rs\n*** Move to: new.rs\n@@\n-x\n+y\n\
                     *** Update File: kept.rs\n@@\n- *** Add File: not-a-header\n+z\n*** End of File\n\
                     *** Delete File: gone.rs\n\
                     *** End Patch\n";
        assert_eq!(patch_targets(patch), ["a.txt", "new.rs", "kept.rs"]);
    }

    #[test]
    fn patch_targets_ignore_text_outside_the_patch() {
        let text = "echo '*** Add File: outside'\n*** Update File: before.rs\n\
                    *** Begin Patch\n*** Update File: inside.rs\n@@\n-a\n+b\n*** End Patch\n\
                    *** Add File: after.rs\n";
        assert_eq!(patch_targets(text), ["inside.rs"]);
    }

    #[test]
    fn patch_targets_accept_crlf_and_unbounded_headers() {
        assert_eq!(
            patch_targets("*** Begin Patch\r\n*** Add File: w.txt\r\n+x\r\n*** End Patch\r\n"),
            ["w.txt"]
        );
        assert_eq!(
            patch_targets("*** Update File: u.rs\n@@\n-a\n+b\n"),
            ["u.rs"]
        );
        assert!(patch_targets("*** Begin Patch\n*** Delete File: d\n*** End Patch").is_empty());
    }

    #[test]
    fn summary_targets_keep_added_and_modified() {
        let out = "Exit code: 0\nWall time: 0 seconds\nOutput:\n\
                   Success. Updated the following files:\nA a.rs\nM b/c.rs\nD d.rs\n\nlater text\nA not-summary\n";
        assert_eq!(summary_targets(out), ["a.rs", "b/c.rs"]);
        assert!(summary_targets("A looks-like-summary\n").is_empty());
    }

    #[test]
    fn shell_heredoc_with_cd_and_quotes() {
        let script = "cd 'my dir' && apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: x\n+1\n*** End Patch\nPATCH\n";
        assert_eq!(
            shell_patches(script),
            [ShellPatch {
                dir: Some("my dir"),
                patch: "*** Begin Patch\n*** Add File: x\n+1\n*** End Patch"
            }]
        );
    }

    #[test]
    fn shell_heredoc_variants() {
        for opener in [
            "apply_patch <<EOF",
            "apply_patch <<\"EOF\"",
            "apply_patch <<-EOF",
            "applypatch<<'EOF'",
        ] {
            let script =
                format!("{opener}\n*** Begin Patch\n*** Update File: a.rs\n@@\n-a\n+b\n*** End Patch\nEOF\n");
            let found = shell_patches(&script);
            assert_eq!(found.len(), 1, "{opener}");
            assert_eq!(found[0].dir, None);
            assert_eq!(patch_targets(found[0].patch), ["a.rs"], "{opener}");
        }
    }

    #[test]
    fn shell_script_with_two_patches_and_other_commands() {
        let script = "set -e\ncd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: one\n+1\n*** End Patch\nEOF\n\
                      cargo fmt\napply_patch <<'EOF'\n*** Begin Patch\n*** Update File: two\n@@\n-a\n+b\n*** End Patch\nEOF";
        let found = shell_patches(script);
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].dir, patch_targets(found[0].patch)),
            (Some("sub"), vec!["one".to_string()])
        );
        assert_eq!(
            (found[1].dir, patch_targets(found[1].patch)),
            (None, vec!["two".to_string()])
        );
    }

    #[test]
    fn shell_patch_as_argument() {
        let script = "apply_patch '*** Begin Patch\n*** Add File: arg.txt\n+x\n*** End Patch\n'";
        let found = shell_patches(script);
        assert_eq!(found.len(), 1);
        assert_eq!(patch_targets(found[0].patch), ["arg.txt"]);
    }

    #[test]
    fn shell_commands_that_only_mention_apply_patch_yield_nothing() {
        assert!(shell_patches("grep -rn apply_patch src/").is_empty());
        assert!(shell_patches(
            "my_apply_patch_tool <<EOF\n*** Begin Patch\n*** Add File: x\n*** End Patch\nEOF"
        )
        .is_empty());
        assert!(shell_patches(
            "cat <<EOF > notes.md\n*** Begin Patch\n*** Add File: x\n*** End Patch\nEOF"
        )
        .is_empty());
        assert!(shell_patches("apply_patch <<<\"nope\"").is_empty());
        assert!(shell_patches(
            "apply_patch --help\necho\ncat <<EOF\n*** Begin Patch\n*** Add File: x\nEOF"
        )
        .is_empty());
    }

    #[test]
    fn cd_prefix_forms() {
        assert_eq!(cd_prefix("cd backend && "), Some("backend"));
        assert_eq!(cd_prefix("set -e; cd \"a b\"; "), Some("a b"));
        assert_eq!(cd_prefix("cd /abs &&"), Some("/abs"));
        assert_eq!(cd_prefix("echo hi && "), None);
        assert_eq!(cd_prefix(""), None);
        assert_eq!(cd_prefix("cdx && "), None);
    }
}
