//! Enforcement: the `block` guidelines an edit about to be made would break, found on the files
//! as they would be after it, so the hook can refuse the edit before it is written. Reads: the
//! snapshot, the files (or the content the caller gives). Writes nothing.
//!
//! The evaluation is the one `search` runs (scope, conditions, `in: changes` on the lines the
//! edit would write, `guidebook:allow`), kept to the guidelines whose `severity` is `block`;
//! nothing is recorded as presented: a refused edit changed nothing.

use std::time::Instant;

use crate::engine::{Edits, Engine};
use crate::guidebook::Severity;

/// One `block` guideline an edit would break, where.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Blocked {
    /// The file, as the caller named it.
    pub path: String,
    pub id: String,
    pub content: String,
    /// The 1-based line of the first offending match that counts.
    pub line: Option<usize>,
    /// That line's text, trimmed, at most [`MAX_LINE_CHARS`] characters.
    pub text: Option<String>,
}

/// The most characters of an offending line quoted back.
pub const MAX_LINE_CHARS: usize = 200;

/// What a check can fail with.
#[derive(Debug, thiserror::Error)]
pub enum EnforceError {
    #[error("deadline exceeded")]
    DeadlineExceeded,
}

/// The `block` guidelines that `filepaths` (absolute, checked), as `edits` says they would be,
/// break; sorted by path as given, then line, then id.
pub fn blocked(
    engine: &Engine,
    filepaths: &[String],
    edits: &Edits,
    deadline: Option<Instant>,
) -> Result<Vec<Blocked>, EnforceError> {
    if filepaths.is_empty() {
        return Ok(Vec::new());
    }
    let snapshot = engine
        .guidebook
        .loaded_snapshot(deadline)
        .ok_or(EnforceError::DeadlineExceeded)?;
    // Nothing to enforce: no file is read.
    if !snapshot
        .guidelines
        .iter()
        .any(|g| g.guideline.severity == Severity::Block)
    {
        return Ok(Vec::new());
    }
    let paths: Vec<&str> = filepaths.iter().map(String::as_str).collect();
    let evaluated = engine
        .evaluate_until(&snapshot, &paths, edits, true, deadline)
        .ok_or(EnforceError::DeadlineExceeded)?;
    let mut out = Vec::new();
    for (path, file) in filepaths.iter().zip(evaluated) {
        for m in file.matches {
            let g = &snapshot.guidelines[m.guideline].guideline;
            if g.severity != Severity::Block {
                continue;
            }
            let line = m.first.as_ref().map(|(line, _)| *line);
            let text = line.and_then(|l| line_text(edits, path, l));
            out.push(Blocked {
                path: path.clone(),
                id: g.id.clone(),
                content: g.content.clone(),
                line,
                text,
            });
        }
    }
    Ok(out)
}

/// Line `line` of the file as the edit would leave it: the content given, else the file.
fn line_text(edits: &Edits, path: &str, line: usize) -> Option<String> {
    let given = edits.get(path).and_then(|e| e.content.clone());
    let bytes = match given {
        Some(bytes) => bytes.to_vec(),
        None => std::fs::read(path).ok()?,
    };
    let text = bytes.split(|b| *b == b'\n').nth(line - 1)?;
    let text = String::from_utf8_lossy(text);
    Some(guidebook_hook::ellipsize(text.trim(), MAX_LINE_CHARS))
}
