//! Finds ruff and pyright runs in a shell command, and their diagnostics in its output.
//!
//! Formats: ruff's full, concise and JSON output, pyright's text and `--outputjson`. Reads: the
//! texts handed in. Writes: nothing.
//!
//! Each parser answers `None` when it does not recognise the output as its tool's (the command
//! failed to start, printed something else, was cut short), `Some(vec![])` for a clean run, and
//! otherwise the run's errors. Only errors count: pyright's warnings and informations are left
//! out; ruff has no severities, so every ruff diagnostic is an error.

use serde_json::Value;

/// The `tool` of ruff's diagnostics.
pub const RUFF: &str = "ruff";
/// The `tool` of pyright's (and basedpyright's) diagnostics.
pub const PYRIGHT: &str = "pyright";
/// The code of a ruff syntax error: ruff's own name for it. Older ruff printed `SyntaxError:`
/// in text and a `null` code in JSON.
pub const RUFF_SYNTAX_ERROR: &str = "invalid-syntax";
/// The code of a pyright error that names no rule (syntax errors, mostly).
pub const PYRIGHT_NO_RULE: &str = "no-rule";

/// One error as the checker printed it; `file` may be relative to the directory it ran in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub tool: &'static str,
    pub code: String,
    pub file: String,
}

/// A checker the command runs, and the directory of the latest `cd DIR` before it on its line,
/// as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub tool: &'static str,
    pub dir: Option<String>,
}

/// The checkers `command` runs, each once, in order of appearance: `ruff check` (also through
/// `uv run`, `uvx`, `python -m`, a virtualenv's `bin/ruff`) and `pyright` or `basedpyright`
/// (also through `npx`, `uv run`, ...). Wrappers that do not name the tool (`make lint`,
/// `pre-commit run`) are not recognised: the output alone could come from `cat` or `git log`.
pub fn invocations(command: &str) -> Vec<Invocation> {
    let mut found: Vec<Invocation> = Vec::new();
    for line in command.lines() {
        let words = words(line);
        for (i, word) in words.iter().enumerate() {
            let Some(word) = word.as_deref() else {
                continue;
            };
            let name = word.rsplit('/').next().unwrap_or(word);
            let tool = if is_named(name, "ruff") {
                // `ruff format`, `ruff server` and friends print no diagnostics.
                let checks = words[i + 1..]
                    .iter()
                    .map_while(Option::as_deref)
                    .any(|w| w == "check");
                checks.then_some(RUFF)
            } else if is_named(name, "pyright") || is_named(name, "basedpyright") {
                Some(PYRIGHT)
            } else {
                None
            };
            if let Some(tool) = tool {
                if !found.iter().any(|inv| inv.tool == tool) {
                    found.push(Invocation {
                        tool,
                        dir: cd_before(&words[..i]),
                    });
                }
            }
        }
    }
    found
}

/// The directory of the latest `cd DIR` among `words` (a command of its own: first, or after a
/// separator). The shell stays there for the commands after it: `cd api && ruff format . &&
/// ruff check .` checks `api`.
fn cd_before(words: &[Option<String>]) -> Option<String> {
    let mut dir = None;
    for (i, word) in words.iter().enumerate() {
        let command_position = i == 0 || words[i - 1].is_none();
        if word.as_deref() == Some("cd") && command_position {
            dir = words.get(i + 1).cloned().flatten();
        }
    }
    dir
}

/// `name` is `tool`, or `tool` pinned to a version (`ruff@0.6`, `ruff==0.6.1`).
fn is_named(name: &str, tool: &str) -> bool {
    name.strip_prefix(tool)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('@') || rest.starts_with("=="))
}

/// The words of one shell line ([`edits::shell::lex`]), `None` for each end of a command
/// (`&&`, `||`, `;`, `|`, …); redirections left out.
fn words(line: &str) -> Vec<Option<String>> {
    use edits::shell::Token;
    edits::shell::lex(line)
        .into_iter()
        .filter_map(|token| match token {
            Token::Word(word) => Some(Some(word)),
            Token::Control => Some(None),
            Token::Redirect(_) => None,
        })
        .collect()
}

/// ruff's diagnostics in `output`: its JSON (`--output-format json`), the concise format
/// (`path:line:col: CODE message`, also ruff's full format before 0.9), or the full format of
/// today (`CODE message` then ` --> path:line:col`). A clean run prints `All checks passed!`,
/// or with `--fix` `Found N errors (N fixed, 0 remaining).`
pub fn parse_ruff(output: &str) -> Option<Vec<Diagnostic>> {
    let output = strip_ansi(output);
    if let Some(found) = json_documents(&output, b'[').find_map(|v| ruff_json(&v)) {
        return Some(found);
    }
    let mut found = Vec::new();
    let mut clean = false;
    // The code of the latest full-format header, waiting for its ` --> ` location line.
    let mut header: Option<String> = None;
    for line in output.lines() {
        let line = line.trim_end();
        if line == "All checks passed!"
            || (line.starts_with("Found ") && line.ends_with(" 0 remaining)."))
        {
            clean = true;
            continue;
        }
        if let Some(location) = line.trim_start().strip_prefix("--> ") {
            if let (Some(code), Some(file)) = (header.take(), file_of_location(location)) {
                found.push(diagnostic(RUFF, code, file));
            }
            continue;
        }
        if let Some((file, rest)) = concise_location(line) {
            if let Some(code) = ruff_code(rest) {
                found.push(diagnostic(RUFF, code, file));
                header = None;
                continue;
            }
        }
        if !line.starts_with(char::is_whitespace) && !line.is_empty() {
            header = ruff_code(line);
        }
    }
    if !found.is_empty() {
        Some(found)
    } else {
        clean.then(Vec::new)
    }
}

/// ruff's `--output-format json`: an array of objects with `code` (a string; `null` for syntax
/// errors before ruff 0.12) and `filename`.
fn ruff_json(value: &Value) -> Option<Vec<Diagnostic>> {
    let items = value.as_array()?;
    let mut found = Vec::with_capacity(items.len());
    for item in items {
        let file = item.get("filename")?.as_str()?;
        let code = match item.get("code")? {
            Value::String(code) => code.as_str(),
            Value::Null => RUFF_SYNTAX_ERROR,
            _ => return None,
        };
        found.push(diagnostic(RUFF, code.to_owned(), file));
    }
    Some(found)
}

/// The rule code at the start of a ruff message: `F401 [*] ...`, `E501 Line too long`,
/// `invalid-syntax: ...` or the older `SyntaxError: ...`.
fn ruff_code(message: &str) -> Option<String> {
    if message.starts_with("invalid-syntax:") || message.starts_with("SyntaxError:") {
        return Some(RUFF_SYNTAX_ERROR.to_owned());
    }
    let code = message.split([' ', ':']).next()?;
    let letters = code.trim_end_matches(|c: char| c.is_ascii_digit());
    let shaped = !letters.is_empty()
        && letters.len() < code.len()
        && letters.chars().all(|c| c.is_ascii_uppercase());
    shaped.then(|| code.to_owned())
}

/// pyright's errors in `output`: its `--outputjson` document, or its text, where each
/// diagnostic is `  /abs/path.py:12:5 - error: Message (reportRule)` and the message may go on
/// over more-indented lines, the rule at the end of the last one. A clean run's summary is
/// `0 errors, ...`.
pub fn parse_pyright(output: &str) -> Option<Vec<Diagnostic>> {
    let output = strip_ansi(output);
    if let Some(found) = json_documents(&output, b'{').find_map(|v| pyright_json(&v)) {
        return Some(found);
    }
    let mut found = Vec::new();
    let mut recognised = false;
    let mut summary_errors = None;
    // The diagnostic being read: its file, whether it is an error, and its latest line.
    let mut current: Option<(&str, bool, &str)> = None;
    let finish = |current: Option<(&str, bool, &str)>, found: &mut Vec<Diagnostic>| {
        if let Some((file, true, last)) = current {
            let code = trailing_rule(last).unwrap_or(PYRIGHT_NO_RULE);
            found.push(diagnostic(PYRIGHT, code.to_owned(), file));
        }
    };
    for line in output.lines() {
        let line = line.trim_end();
        if let Some((file, is_error, text)) = pyright_line(line) {
            finish(current.take(), &mut found);
            current = Some((file, is_error, text));
            recognised = true;
            continue;
        }
        if let Some(cur) = current.as_mut() {
            // Continuation lines are indented deeper, partly with no-break spaces (U+00A0),
            // which `char::is_whitespace` covers.
            if line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
                cur.2 = line;
                continue;
            }
        }
        finish(current.take(), &mut found);
        if let Some(errors) = pyright_summary(line) {
            summary_errors = Some(errors);
        }
    }
    finish(current.take(), &mut found);
    if !found.is_empty() {
        Some(found)
    } else if summary_errors == Some(0) || (recognised && summary_errors.is_none()) {
        // A summary of 0 errors, or only warnings and informations.
        Some(found)
    } else {
        None
    }
}

/// pyright's `--outputjson`: `generalDiagnostics[]` with `file`, `severity` and `rule` (absent
/// for errors without one).
fn pyright_json(value: &Value) -> Option<Vec<Diagnostic>> {
    let diagnostics = value.get("generalDiagnostics")?.as_array()?;
    let mut found = Vec::new();
    for d in diagnostics {
        if d.get("severity").and_then(Value::as_str) != Some("error") {
            continue;
        }
        let file = d.get("file")?.as_str()?;
        let code = d
            .get("rule")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            .unwrap_or(PYRIGHT_NO_RULE);
        found.push(diagnostic(PYRIGHT, code.to_owned(), file));
    }
    Some(found)
}

/// A pyright diagnostic line: its file, whether it is an error, and the line itself.
fn pyright_line(line: &str) -> Option<(&str, bool, &str)> {
    let trimmed = line.trim_start();
    for (marker, is_error) in [
        (" - error: ", true),
        (" - warning: ", false),
        (" - information: ", false),
    ] {
        if let Some(at) = trimmed.find(marker) {
            let file = file_of_location(&trimmed[..at])?;
            return Some((file, is_error, line));
        }
    }
    None
}

/// The error count of pyright's summary line, `3 errors, 1 warning, 0 informations`.
fn pyright_summary(line: &str) -> Option<u64> {
    let mut parts = line.trim().split(", ");
    let errors = parts.next()?;
    let warnings = parts.next()?;
    let (count, word) = errors.split_once(' ')?;
    if !matches!(word, "error" | "errors") || !warnings.contains(" warning") {
        return None;
    }
    count.parse().ok()
}

/// The rule in parentheses at the end of a pyright message: `... (reportAttributeAccessIssue)`.
fn trailing_rule(text: &str) -> Option<&str> {
    let inner = text.trim_end().strip_suffix(')')?;
    let rule = &inner[inner.rfind('(')? + 1..];
    let shaped = rule.starts_with(|c: char| c.is_ascii_alphabetic())
        && rule.chars().all(|c| c.is_ascii_alphanumeric());
    shaped.then_some(rule)
}

/// The path of a `path:line:col` location; `None` unless line and column are numbers.
fn file_of_location(location: &str) -> Option<&str> {
    let location = location.trim();
    let (rest, col) = location.rsplit_once(':')?;
    let (file, line) = rest.rsplit_once(':')?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (numeric(line) && numeric(col) && !file.is_empty()).then_some(file)
}

/// Splits a concise ruff line `path:line:col: message` into the path and the message.
fn concise_location(line: &str) -> Option<(&str, &str)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let mut from = 0;
    while let Some(i) = line[from..].find(':') {
        let at = from + i;
        let rest = &line[at + 1..];
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let row = digits(rest);
        if row > 0 && rest[row..].starts_with(':') {
            let after_row = &rest[row + 1..];
            let col = digits(after_row);
            if col > 0 {
                if let Some(message) = after_row[col..].strip_prefix(": ") {
                    return (at > 0).then_some((&line[..at], message));
                }
            }
        }
        from = at + 1;
    }
    None
}

/// The JSON documents in `output` that start a line with `open` (`[` or `{`): both tools print
/// their JSON from the first column, possibly after other lines (`uv` resolving packages, say).
fn json_documents(output: &str, open: u8) -> impl Iterator<Item = Value> + '_ {
    let mut offsets = Vec::new();
    let mut at = 0;
    for line in output.split_inclusive('\n') {
        if line.as_bytes().first() == Some(&open) {
            offsets.push(at);
        }
        at += line.len();
    }
    offsets.into_iter().filter_map(move |at| {
        serde_json::Deserializer::from_str(&output[at..])
            .into_iter::<Value>()
            .next()?
            .ok()
    })
}

fn diagnostic(tool: &'static str, code: String, file: &str) -> Diagnostic {
    Diagnostic {
        tool,
        code,
        file: file.to_owned(),
    }
}

/// `text` without ANSI colour sequences (`ESC [ ... letter`), for `--color always` runs.
fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.clone().next() == Some('[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checker output committed under `tests/fixtures/checks/` (made by its `regenerate.sh`
    /// from the real tools over `project/`, copied to `/tmp/guidebook-checks/project`).
    macro_rules! output {
        ($name:literal) => {
            include_str!(concat!("../tests/fixtures/checks/", $name))
        };
    }

    const PROJECT: &str = "/tmp/guidebook-checks/project";

    fn triples(found: Option<Vec<Diagnostic>>) -> Vec<(String, String, String)> {
        found
            .expect("recognised")
            .into_iter()
            .map(|d| (d.tool.to_owned(), d.code, d.file))
            .collect()
    }

    fn expect(tool: &str, list: &[(&str, &str)]) -> Vec<(String, String, String)> {
        list.iter()
            .map(|(code, file)| (tool.to_owned(), code.to_string(), file.to_string()))
            .collect()
    }

    /// What ruff reports over `src/` of the fixture project, paths as ruff's text prints them.
    fn ruff_src(prefix: &str) -> Vec<(String, String, String)> {
        let d = format!("{prefix}src/app/dispatch.py");
        let m = format!("{prefix}src/app/models.py");
        expect(
            RUFF,
            &[
                ("F401", &d),
                ("F401", &d),
                ("F401", &d),
                ("F401", &d),
                ("B018", &d),
                ("B015", &d),
                ("E501", &d),
                ("F401", &m),
            ],
        )
    }

    #[test]
    fn ruff_full_concise_and_json_give_the_same_triples() {
        assert_eq!(triples(parse_ruff(output!("ruff-full.txt"))), ruff_src(""));
        assert_eq!(
            triples(parse_ruff(output!("ruff-concise.txt"))),
            ruff_src("")
        );
        assert_eq!(
            triples(parse_ruff(output!("ruff-json.json"))),
            ruff_src(&format!("{PROJECT}/"))
        );
    }

    #[test]
    fn ruff_clean_runs_are_empty_runs() {
        assert_eq!(parse_ruff(output!("ruff-clean.txt")), Some(vec![]));
        assert_eq!(parse_ruff(output!("ruff-clean.json")), Some(vec![]));
        assert_eq!(
            parse_ruff("Found 3 errors (3 fixed, 0 remaining).\n"),
            Some(vec![])
        );
    }

    #[test]
    fn ruff_syntax_errors() {
        let file = "broken/syntax.py";
        let both = expect(
            RUFF,
            &[(RUFF_SYNTAX_ERROR, file), (RUFF_SYNTAX_ERROR, file)],
        );
        assert_eq!(triples(parse_ruff(output!("ruff-syntax-full.txt"))), both);
        let abs = format!("{PROJECT}/{file}");
        assert_eq!(
            triples(parse_ruff(output!("ruff-syntax-json.json"))),
            expect(
                RUFF,
                &[(RUFF_SYNTAX_ERROR, &abs), (RUFF_SYNTAX_ERROR, &abs)]
            )
        );
        // Older ruff: `SyntaxError:` in text, a null code in JSON.
        assert_eq!(
            triples(parse_ruff(
                "a.py:1:5: SyntaxError: Expected ')'\nFound 1 error.\n"
            )),
            expect(RUFF, &[(RUFF_SYNTAX_ERROR, "a.py")])
        );
        assert_eq!(
            triples(parse_ruff(
                r#"[{"code": null, "filename": "/p/a.py", "message": "x"}]"#
            )),
            expect(RUFF, &[(RUFF_SYNTAX_ERROR, "/p/a.py")])
        );
    }

    #[test]
    fn pyright_text_and_json_give_the_same_errors() {
        let d = format!("{PROJECT}/src/app/dispatch.py");
        let m = format!("{PROJECT}/src/app/models.py");
        let errors = expect(
            PYRIGHT,
            &[
                ("reportMissingImports", &d),
                ("reportAttributeAccessIssue", &d),
                ("reportAttributeAccessIssue", &m),
            ],
        );
        assert_eq!(triples(parse_pyright(output!("pyright.txt"))), errors);
        assert_eq!(triples(parse_pyright(output!("pyright.json"))), errors);
    }

    #[test]
    fn pyright_clean_runs_and_errors_without_a_rule() {
        assert_eq!(parse_pyright(output!("pyright-clean.txt")), Some(vec![]));
        assert_eq!(parse_pyright(output!("pyright-clean.json")), Some(vec![]));
        let file = format!("{PROJECT}/broken/syntax.py");
        let seven = expect(PYRIGHT, &[(PYRIGHT_NO_RULE, file.as_str()); 7]);
        assert_eq!(triples(parse_pyright(output!("pyright-syntax.txt"))), seven);
        assert_eq!(
            triples(parse_pyright(output!("pyright-syntax.json"))),
            seven
        );
        let warnings_only = "/p/a.py\n  /p/a.py:1:1 - warning: Expression value is unused (reportUnusedExpression)\n0 errors, 1 warning, 0 informations \n";
        assert_eq!(parse_pyright(warnings_only), Some(vec![]));
    }

    #[test]
    fn each_parser_ignores_the_other_tools_output_and_noise() {
        for other in [
            output!("pyright.txt"),
            output!("pyright.json"),
            output!("pyright-clean.txt"),
        ] {
            assert_eq!(parse_ruff(other), None);
        }
        for other in [
            output!("ruff-full.txt"),
            output!("ruff-concise.txt"),
            output!("ruff-json.json"),
            output!("ruff-clean.txt"),
        ] {
            assert_eq!(parse_pyright(other), None);
        }
        for noise in [
            "",
            "bash: line 1: ruff: command not found\n",
            "Exit code: 127\nWall time: 0 seconds\nOutput:\nnpx: not found\n",
            "[1, 2]\n",
            "{\"generalDiagnostics\": 3}\n",
            "Found 3 errors.\n",
            "3 errors, 0 warnings, 0 informations\n",
        ] {
            assert_eq!(parse_ruff(noise), None, "{noise:?}");
            assert_eq!(parse_pyright(noise), None, "{noise:?}");
        }
    }

    #[test]
    fn combined_output_of_both_tools_and_codex_headers() {
        let text = format!(
            "Exit code: 1\nWall time: 2.1 seconds\nOutput:\n{}{}",
            output!("ruff-concise.txt"),
            output!("pyright.json")
        );
        assert_eq!(triples(parse_ruff(&text)), ruff_src(""));
        assert_eq!(triples(parse_pyright(&text)).len(), 3);
        let coloured = "\u{1b}[1msrc/a.py\u{1b}[0m:1:8: \u{1b}[1;31mF401\u{1b}[0m [*] `os` imported but unused\n";
        assert_eq!(
            triples(parse_ruff(coloured)),
            expect(RUFF, &[("F401", "src/a.py")])
        );
    }

    #[test]
    fn invocations_in_commands() {
        let tools = |command: &str| -> Vec<(&'static str, Option<String>)> {
            invocations(command)
                .into_iter()
                .map(|i| (i.tool, i.dir))
                .collect()
        };
        assert_eq!(tools("ruff check ."), [(RUFF, None)]);
        assert_eq!(
            tools("uv run ruff check --output-format json src"),
            [(RUFF, None)]
        );
        assert_eq!(tools("python -m ruff check"), [(RUFF, None)]);
        assert_eq!(tools(".venv/bin/ruff check src"), [(RUFF, None)]);
        assert_eq!(tools("uvx ruff@0.6.9 check"), [(RUFF, None)]);
        assert_eq!(tools("npx pyright --outputjson"), [(PYRIGHT, None)]);
        assert_eq!(tools("basedpyright src"), [(PYRIGHT, None)]);
        assert_eq!(
            tools("cd backend && ruff check . && pyright"),
            [
                (RUFF, Some("backend".into())),
                (PYRIGHT, Some("backend".into()))
            ]
        );
        assert_eq!(
            tools("cd /w/api && npx pyright"),
            [(PYRIGHT, Some("/w/api".into()))]
        );
        assert_eq!(tools("ruff format . && ruff check ."), [(RUFF, None)]);
        assert_eq!(
            tools("cd api && ruff format . && ruff check ."),
            [(RUFF, Some("api".into()))]
        );
        assert_eq!(
            tools("echo cd x; cd 'my dir'; pyright"),
            [(PYRIGHT, Some("my dir".into()))]
        );
        assert!(tools("ruff format --check .").is_empty());
        assert!(tools("cat ruff.toml pyrightconfig.json").is_empty());
        assert!(tools("cargo test").is_empty());
        assert!(tools("pyright-langserver --stdio").is_empty());
    }
}
