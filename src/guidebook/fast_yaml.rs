//! A fast path for the YAML guideline files are written in: block mappings and sequences,
//! plain, single- and double-quoted scalars, literal blocks (`|`, `|-`), one-line flow
//! sequences of scalars, and comments. A file it is not sure of in any way (tabs, anchors,
//! tags, folded or multi-line scalars, `null`s, numbers, booleans, flow mappings, …) gives
//! `None`, and the caller parses it with serde_yaml as before; a file whose fast parse does not
//! deserialise (a missing key, an invalid regex) is parsed by serde_yaml too, so every error
//! message, line and column is serde_yaml's.
//!
//! serde_yaml's scanner, event list and their allocations were 13 % of a 10,000-guideline
//! start's CPU; with this parser first, one thread parses those 10,000 files (patterns validated
//! either way) in 228–351 ms against 320–482 ms. The differential test below holds both to the
//! same result, and `tests/fuzz/` feeds the whole parse arbitrary input.

use std::borrow::Cow;

use serde::de::value::{Error, MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};

/// A parsed document: strings, sequences and mappings (in file order), nothing else.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Node<'a> {
    Str(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    Map(Vec<(&'a str, Node<'a>)>),
}

/// `text` as a [`Node`], or `None` when it uses anything outside the subset this parser is
/// sure to read as serde_yaml does.
pub(crate) fn parse(text: &str) -> Option<Node<'_>> {
    if !text.chars().all(plain_char) {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut p = Parser {
        lines,
        at: 0,
        foreign: false,
    };
    let root = p.block(0)?;
    // Anything left (a line less indented than the root cannot be) is not ours to read.
    (p.next_significant().is_none() && !p.foreign).then_some(root)
}

/// The characters a file may hold for the fast path: YAML's printable ones and the newline,
/// without tab, carriage return, the byte-order mark and YAML 1.1's extra line breaks (NEL,
/// LS, PS), which serde_yaml's scanner treats specially.
fn plain_char(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FEFE}' | '\u{FF00}'..='\u{FFFD}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}')
}

struct Parser<'a> {
    /// The text split at `\n`; the last one is what follows the last newline.
    lines: Vec<&'a str>,
    /// The next line to read.
    at: usize,
    /// A directive or document marker was met: the document is not ours to read.
    foreign: bool,
}

impl<'a> Parser<'a> {
    fn indent(&self, line: usize) -> usize {
        let l = self.lines[line];
        l.len() - l.trim_start_matches(' ').len()
    }

    fn content(&self, line: usize) -> &'a str {
        self.lines[line].trim_start_matches(' ')
    }

    /// Skips blank and comment lines; the next line with content, if any. A directive or a
    /// document marker ends the document as far as the fast path reads it (and `foreign` says
    /// so).
    fn next_significant(&mut self) -> Option<usize> {
        while self.at < self.lines.len() {
            let c = self.content(self.at);
            if c.is_empty() || c.starts_with('#') {
                self.at += 1;
                continue;
            }
            if self.indent(self.at) == 0
                && (c.starts_with("---") || c.starts_with("...") || c.starts_with('%'))
            {
                self.foreign = true;
                return None;
            }
            return Some(self.at);
        }
        None
    }

    /// A block mapping or sequence whose first line is the next significant one, at `indent`.
    fn block(&mut self, indent: usize) -> Option<Node<'a>> {
        let line = self.next_significant()?;
        if self.indent(line) != indent {
            return None;
        }
        if is_item(self.content(line)) {
            self.sequence(indent)
        } else {
            self.mapping(indent, None)
        }
    }

    /// A block mapping with its keys at `indent`. `first`: the rest of the current line when
    /// the mapping starts after a sequence's `- ` (the line is then not re-read).
    fn mapping(&mut self, indent: usize, mut first: Option<&'a str>) -> Option<Node<'a>> {
        let mut entries: Vec<(&'a str, Node<'a>)> = Vec::new();
        loop {
            let content = match first.take() {
                Some(c) => c,
                None => {
                    let Some(line) = self.next_significant() else {
                        break;
                    };
                    let here = self.indent(line);
                    if here < indent {
                        break;
                    }
                    if here > indent {
                        return None;
                    }
                    let c = self.content(line);
                    if is_item(c) {
                        // A sequence at a mapping's indent belongs to a key, and was read there.
                        return None;
                    }
                    c
                }
            };
            let (key, rest) = split_key(content)?;
            if entries.iter().any(|(k, _)| *k == key) {
                return None;
            }
            self.at += 1;
            let value = self.value(rest, indent, true)?;
            entries.push((key, value));
        }
        Some(Node::Map(entries))
    }

    /// A block sequence with its `- ` at `indent`.
    fn sequence(&mut self, indent: usize) -> Option<Node<'a>> {
        let mut items = Vec::new();
        while let Some(line) = self.next_significant() {
            let here = self.indent(line);
            let content = self.content(line);
            if here < indent || (here == indent && !is_item(content)) {
                break;
            }
            if here > indent {
                return None;
            }
            let after = &content[1..];
            let rest = after.trim_start_matches(' ');
            let column = indent + 1 + (after.len() - rest.len());
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with('-') {
                // An item on the lines below, or a nested sequence on this one: not ours.
                return None;
            }
            if split_key(rest).is_some() {
                items.push(self.mapping(column, Some(rest))?);
            } else {
                self.at += 1;
                items.push(self.value(rest, indent, false)?);
            }
        }
        Some(Node::Seq(items))
    }

    /// The value that follows a key (`rest`: the line after `key:`) or a `- `; `indent` is the
    /// key's or the dash's column. The current line has been consumed.
    fn value(&mut self, rest: &'a str, indent: usize, after_key: bool) -> Option<Node<'a>> {
        let node = match rest.as_bytes().first() {
            None | Some(b'#') => {
                if !after_key {
                    return None;
                }
                // The value is on the lines below: more indented, or a sequence at the key's
                // own indent. Nothing there is a null, which the fast path leaves alone.
                let line = self.next_significant()?;
                let here = self.indent(line);
                if here > indent {
                    return self.block(here);
                }
                if here == indent && is_item(self.content(line)) {
                    return self.sequence(indent);
                }
                return None;
            }
            Some(b'|') => return self.literal(rest, indent),
            Some(b'\'') => {
                let (s, tail) = single_quoted(rest)?;
                end_of_value(tail)?;
                Node::Str(s)
            }
            Some(b'"') => {
                let (s, tail) = double_quoted(rest)?;
                end_of_value(tail)?;
                Node::Str(s)
            }
            Some(b'[') => flow_sequence(rest)?,
            Some(_) => Node::Str(Cow::Borrowed(plain(rest)?)),
        };
        // A more indented line right after a one-line value would continue it (or be an
        // error): not ours.
        if let Some(line) = self.next_non_blank() {
            if self.indent(line) > indent && !self.content(line).starts_with('#') {
                return None;
            }
        }
        Some(node)
    }

    /// The next line that is not blank (comments count), without consuming anything.
    fn next_non_blank(&self) -> Option<usize> {
        (self.at..self.lines.len()).find(|&l| !self.content(l).is_empty())
    }

    /// A literal block scalar whose header (`|` or `|-`) is `header`, under a key or dash at
    /// `indent`.
    fn literal(&mut self, header: &'a str, indent: usize) -> Option<Node<'a>> {
        let strip = match header.trim_end_matches(' ') {
            "|" => false,
            "|-" => true,
            _ => return None,
        };
        let start = self.at;
        // The block: every following line that is blank or more indented than `indent`.
        let mut end = start;
        while end < self.lines.len() {
            let l = self.lines[end];
            let blank = l.trim_start_matches(' ').is_empty();
            if !blank && self.indent(end) <= indent {
                break;
            }
            end += 1;
        }
        let first = (start..end).find(|&l| !self.content(l).is_empty())?;
        let width = self.indent(first);
        let mut text = String::new();
        let mut last_content = None;
        for l in start..end {
            let line = self.lines[l];
            if self.content(l).is_empty() {
                // Blank; one with more spaces than the block's indent would be content.
                if line.len() > width {
                    return None;
                }
                continue;
            }
            if self.indent(l) < width {
                return None;
            }
            last_content = Some(l);
        }
        let last = last_content?;
        // A block that ends the file without a newline: serde_yaml's clipping there is not
        // worth getting subtly wrong.
        if last + 1 == self.lines.len() {
            return None;
        }
        for l in start..=last {
            let line = self.lines[l];
            if l > start {
                text.push('\n');
            }
            if line.len() > width {
                text.push_str(&line[width..]);
            }
        }
        if !strip {
            text.push('\n');
        }
        self.at = end;
        Some(Node::Str(Cow::Owned(text)))
    }
}

/// Whether a line's content is a block sequence item.
fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// `key: rest` with a plain key of letters, digits, `_` and `-` (starting with a letter or
/// `_`), or `None`.
fn split_key(content: &str) -> Option<(&str, &str)> {
    let bytes = content.as_bytes();
    if !bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
    {
        return None;
    }
    let len = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-'))?;
    if bytes[len] != b':' {
        return None;
    }
    let after = &content[len + 1..];
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    Some((&content[..len], after.trim_start_matches(' ')))
}

/// What may follow a scalar on its line: spaces, then nothing or a comment.
fn end_of_value(tail: &str) -> Option<()> {
    let t = tail.trim_start_matches(' ');
    (t.is_empty() || (t.starts_with('#') && t.len() < tail.len())).then_some(())
}

/// A plain scalar up to a comment, or `None` when it could be anything but a string to
/// serde_yaml (null, a boolean, a number), starts with an indicator, or holds `: `.
fn plain(rest: &str) -> Option<&str> {
    let value = match rest.find(" #") {
        Some(at) => &rest[..at],
        None => rest,
    }
    .trim_end_matches(' ');
    let first = value.chars().next()?;
    if "-?:,[]{}#&*!|>'\"%@`~+.0123456789".contains(first)
        || value.contains(": ")
        || value.ends_with(':')
    {
        return None;
    }
    const NOT_STRINGS: [&str; 9] = ["null", "true", "false", "yes", "no", "on", "off", "y", "n"];
    if NOT_STRINGS.iter().any(|w| value.eq_ignore_ascii_case(w)) {
        return None;
    }
    Some(value)
}

/// A single-quoted scalar on one line (`''` is a quote) and what follows it.
fn single_quoted(rest: &str) -> Option<(Cow<'_, str>, &str)> {
    let body = &rest[1..];
    let mut out: Option<String> = None;
    let mut i = 0;
    let bytes = body.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b'\'' {
            if bytes.get(i + 1) == Some(&b'\'') {
                out.get_or_insert_with(|| body[..i].to_string()).push('\'');
                i += 2;
                continue;
            }
            let s = match out {
                Some(s) => Cow::Owned(s),
                None => Cow::Borrowed(&body[..i]),
            };
            return Some((s, &body[i + 1..]));
        }
        let c = body[i..].chars().next()?;
        if let Some(s) = out.as_mut() {
            s.push(c);
        }
        i += c.len_utf8();
    }
    None
}

/// A double-quoted scalar on one line, with the common escapes only, and what follows it.
fn double_quoted(rest: &str) -> Option<(Cow<'_, str>, &str)> {
    let body = &rest[1..];
    let mut out: Option<String> = None;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let s = match out {
                    Some(s) => Cow::Owned(s),
                    None => Cow::Borrowed(&body[..i]),
                };
                return Some((s, &body[i + 1..]));
            }
            '\\' => {
                let (_, e) = chars.next()?;
                let decoded = match e {
                    '\\' => '\\',
                    '"' => '"',
                    '/' => '/',
                    'n' => '\n',
                    't' => '\t',
                    _ => return None,
                };
                out.get_or_insert_with(|| body[..i].to_string())
                    .push(decoded);
            }
            c => {
                if let Some(s) = out.as_mut() {
                    s.push(c);
                }
            }
        }
    }
    None
}

/// A flow sequence of scalars on one line: `[a, 'b', "c"]`.
fn flow_sequence(rest: &str) -> Option<Node<'_>> {
    let mut items = Vec::new();
    let mut s = rest[1..].trim_start_matches(' ');
    if let Some(tail) = s.strip_prefix(']') {
        end_of_value(tail)?;
        return Some(Node::Seq(items));
    }
    loop {
        let (item, tail) = match s.as_bytes().first()? {
            b'\'' => single_quoted(s)?,
            b'"' => double_quoted(s)?,
            _ => {
                let len = s.find([',', ']'])?;
                let item = s[..len].trim_end_matches(' ');
                if item.is_empty() || item.contains(['[', '{', '}', '#', ':']) {
                    return None;
                }
                (Cow::Borrowed(plain(item)?), &s[len..])
            }
        };
        items.push(Node::Str(item));
        let tail = tail.trim_start_matches(' ');
        match tail.as_bytes().first()? {
            b',' => s = tail[1..].trim_start_matches(' '),
            b']' => {
                end_of_value(&tail[1..])?;
                return Some(Node::Seq(items));
            }
            _ => return None,
        }
        if s.starts_with(']') {
            // A trailing comma: not ours.
            return None;
        }
    }
}

impl<'de> de::Deserializer<'de> for &Node<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Node::Str(Cow::Borrowed(s)) => visitor.visit_borrowed_str(s),
            Node::Str(Cow::Owned(s)) => visitor.visit_str(s),
            Node::Seq(items) => visitor.visit_seq(SeqDeserializer::new(items.iter())),
            Node::Map(entries) => {
                visitor.visit_map(MapDeserializer::new(entries.iter().map(|(k, v)| (*k, v))))
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // The fast path never reads a null: every value present is one.
        visitor.visit_some(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Node::Str(s) => visitor.visit_enum(s.as_ref().into_deserializer()),
            _ => Err(de::Error::custom("expected a unit variant's name")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl<'de, 'a> IntoDeserializer<'de, Error> for &'a Node<'de> {
    type Deserializer = &'a Node<'de>;

    fn into_deserializer(self) -> Self::Deserializer {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Node<'_> {
        Node::Str(Cow::Borrowed(text))
    }

    #[test]
    fn reads_a_typical_guideline() {
        let text = "# a comment\nid: g1\nscope:\n  languages: [kotlin, 'java']\nmatch:\n  any:\n    - regex:\n        pattern: '\\bFoo\\(' # why\n    - regex:\n        pattern: \"a\\\\b\"\ncontent: |\n  Line one.\n\n    indented\n  last\n\nexamples:\n  match:\n  - 'Foo(1)'\n  - code: x\n    path: src/A.kt\n";
        let node = parse(text).unwrap();
        let Node::Map(entries) = node else { panic!() };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["id", "scope", "match", "content", "examples"]);
        assert_eq!(entries[0].1, s("g1"));
        assert_eq!(
            entries[1].1,
            Node::Map(vec![("languages", Node::Seq(vec![s("kotlin"), s("java")]))])
        );
        assert_eq!(
            entries[3].1,
            Node::Str("Line one.\n\n  indented\nlast\n".into())
        );
        let Node::Map(m) = &entries[2].1 else {
            panic!()
        };
        let Node::Seq(any) = &m[0].1 else { panic!() };
        assert_eq!(
            any[1],
            Node::Map(vec![("regex", Node::Map(vec![("pattern", s("a\\b"))]))])
        );
    }

    #[test]
    fn gives_up_on_what_it_does_not_read_like_serde_yaml() {
        for text in [
            "id: g1\ncontent: >\n  folded\n",
            "id: 12\n",
            "id: null\n",
            "id: ~\n",
            "id: true\n",
            "id:\n",
            "id: &a g1\n",
            "id: !tag g1\n",
            "id: g1\n\tcontent: x\n",
            "id: g1\r\n",
            "---\nid: g1\n",
            "id: 'g1\n  continued'\n",
            "id: g1\n  continued\n",
            "id: {a: b}\n",
            "id: [a, b,]\n",
            "id: \"\\x41\"\n",
            "content: |\n  no final newline",
            "content: |+\n  keep\n",
            "id: g1\nid: g2\n",
            "'id': g1\n",
            "a: b: c\n",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
    }

    /// Every guideline of the sample guidebook (hand-written, in the style the docs teach)
    /// takes the fast path, and reads as serde_yaml reads it.
    #[test]
    fn the_sample_guidebook_takes_the_fast_path() {
        use crate::guidebook::load::{parse_guideline_with, Yaml};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("guidebook");
        let files = crate::guidebook::find_guideline_files(&root).unwrap();
        assert!(files.len() >= 10);
        for (path, _) in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let node = parse(&text).unwrap_or_else(|| panic!("{}", path.display()));
            assert!(
                <super::super::yaml::RawGuideline as serde::Deserialize>::deserialize(&node)
                    .is_ok(),
                "{}",
                path.display()
            );
            assert_eq!(
                format!(
                    "{:?}",
                    parse_guideline_with(&path, &text, Yaml::FastPathFirst)
                ),
                format!("{:?}", parse_guideline_with(&path, &text, Yaml::SerdeYaml))
            );
        }
    }

    /// The differential test: guideline files in every style the generator knows, valid and
    /// broken, then mutated a character or a line at a time. Whatever the fast path reads must
    /// be exactly what serde_yaml reads (the guideline, or the error), and the fast path must
    /// take most of the unmutated files (or it would save nothing).
    #[test]
    fn reads_every_file_it_takes_exactly_as_serde_yaml_does() {
        use crate::guidebook::load::{parse_guideline_with, Yaml};
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        use std::path::Path;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let cases = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000);
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let (valid, fast) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let doc = (
            proptest::collection::vec(any::<u16>(), 40..80),
            proptest::option::weighted(0.5, (any::<u16>(), 0u8..6, any::<u8>())),
        );
        runner
            .run(&doc, |(choices, mutation)| {
                let mut text = render(&choices);
                if let Some((at, op, c)) = mutation {
                    mutate(&mut text, at as usize, op, c);
                }
                let path = Path::new("/g/guideline.yaml");
                let reference = parse_guideline_with(path, &text, Yaml::SerdeYaml);
                let fast_first = parse_guideline_with(path, &text, Yaml::FastPathFirst);
                if mutation.is_none() && reference.is_ok() {
                    valid.fetch_add(1, Ordering::Relaxed);
                    if parse(&text).is_some_and(|n| {
                        <super::super::yaml::RawGuideline as serde::Deserialize>::deserialize(&n)
                            .is_ok()
                    }) {
                        fast.fetch_add(1, Ordering::Relaxed);
                    }
                }
                prop_assert_eq!(
                    format!("{fast_first:?}"),
                    format!("{reference:?}"),
                    "text:\n{}",
                    text
                );
                Ok(())
            })
            .unwrap();
        let (valid, fast) = (valid.into_inner(), fast.into_inner());
        eprintln!("the fast path took {fast} of {valid} valid unmutated files");
        assert!(
            // The generator leans on what the fast path leaves to serde_yaml (`|+`, nulls,
            // numbers, `yes`); the sample guidebook's files all take it (the test below).
            valid >= cases as usize / 20 && fast * 4 >= valid,
            "the fast path took {fast} of {valid} valid unmutated files"
        );
    }

    const SCALARS: &[&str] = &[
        "g1",
        "order-rules",
        "Foo",
        "foo bar",
        "a: b",
        "a #b",
        "a#b",
        "it's",
        "say \"hi\"",
        "back\\slash",
        "\\bFoo\\(",
        "ünïcode ✓",
        "",
        " lead",
        "trail ",
        "-dash",
        "- item",
        "[x]",
        "{x}",
        "12",
        "0x1F",
        "null",
        "~",
        "true",
        "yes",
        "No",
        "on",
        ".5",
        "1e3",
        "nan",
        "inf",
        "*ref",
        "&anc",
        "!tag",
        "%p",
        "@at",
        "`bt`",
        "?q",
        ":c",
        ",c",
        "|",
        ">",
        "'",
        "\"",
        "#",
        "kotlin",
        "java",
        "acme/*",
        "acme/**",
        "file_changed",
        "changed",
        "src/A.kt",
        "/abs/A.kt",
        "../up.kt",
        "(?i)select\\b",
        "a\tb",
        "x(",
        "a,b",
        "a]b",
    ];

    const LINES: &[&str] = &[
        "Keep it simple.",
        "  indented more",
        "",
        "# not a comment",
        "a: b",
        "- not an item",
        "trailing  ",
        "ünï ✓",
        "'quoted'",
        "\"dq\"",
        "    deeper",
        "|",
        ">",
        "---",
        "...",
    ];

    /// A guideline file from a list of choices (each `u16` picks one thing, in order).
    fn render(choices: &[u16]) -> String {
        let mut it = choices.iter().copied().cycle();
        let mut pick = |n: usize| it.next().unwrap() as usize % n;
        let unit = " ".repeat(1 + pick(4));
        let scalar = |i: usize, style: usize| -> String {
            let v = SCALARS[i % SCALARS.len()];
            match style % 4 {
                0 | 3 => v.to_string(),
                1 => format!("'{}'", v.replace('\'', "''")),
                _ => format!(
                    "\"{}\"",
                    v.replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\t', "\\t")
                ),
            }
        };
        let comment = |on: bool| if on { " # why" } else { "" };
        let mut sections: Vec<String> = Vec::new();
        // id
        let id = if pick(3) == 0 {
            scalar(pick(SCALARS.len()), pick(4))
        } else {
            format!("g{}", pick(1000))
        };
        sections.push(format!("id: {id}{}\n", comment(pick(4) == 0)));
        // scope
        if pick(2) == 0 {
            let mut s = String::from("scope:\n");
            for key in ["languages", "repositories"] {
                if pick(2) == 0 {
                    continue;
                }
                let items: Vec<String> = (0..pick(3))
                    .map(|_| {
                        let v = if pick(2) == 0 {
                            ["kotlin", "java", "python", "acme/*", "acme/**"][pick(5)].to_string()
                        } else {
                            SCALARS[pick(SCALARS.len())].to_string()
                        };
                        scalar(SCALARS.iter().position(|s| *s == v).unwrap_or(0), pick(3))
                            .replace(SCALARS[0], &v)
                    })
                    .collect();
                if pick(2) == 0 {
                    s += &format!("{unit}{key}: [{}]\n", items.join(", "));
                } else {
                    s += &format!("{unit}{key}:\n");
                    for item in items {
                        s += &format!("{unit}{unit}- {item}\n");
                    }
                }
            }
            sections.push(s);
        }
        // when
        match pick(4) {
            0 => sections.push("when: [file_changed]\n".into()),
            1 => sections.push(format!(
                "when:\n{unit}- {}\n",
                scalar(pick(SCALARS.len()), 1)
            )),
            _ => {}
        }
        // match
        let mut m = String::from("match:\n");
        let compact = pick(2) == 0;
        let dash = if compact {
            unit.clone()
        } else {
            format!("{unit}{unit}")
        };
        m += &format!("{unit}any:{}\n", comment(pick(5) == 0));
        for _ in 0..pick(4) {
            let p = if pick(2) == 0 {
                ["\\bFoo\\(", "Thread\\.sleep", "(?i)select\\b", "a|b", "x("][pick(5)].to_string()
            } else {
                SCALARS[pick(SCALARS.len())].to_string()
            };
            let quoted = match pick(3) {
                0 => format!("'{}'", p.replace('\'', "''")),
                1 => format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\"")),
                _ => p,
            };
            m += &format!(
                "{dash}- regex:\n{dash}{unit}{unit}pattern: {quoted}{}\n",
                comment(pick(5) == 0)
            );
        }
        sections.push(m);
        // content
        let lines: Vec<&str> = (0..1 + pick(4)).map(|_| LINES[pick(LINES.len())]).collect();
        let content = match pick(5) {
            0 | 1 => {
                let mut c = format!("content: |{}\n", ["", "-", "+", " # c"][pick(4)]);
                for l in &lines {
                    if l.is_empty() && pick(3) == 0 {
                        c += &format!("{unit}{unit}\n");
                    } else if l.is_empty() {
                        c += "\n";
                    } else {
                        c += &format!("{unit}{l}\n");
                    }
                }
                c
            }
            2 => format!("content: {}\n", lines[0]),
            3 => format!("content: {}\n", scalar(pick(SCALARS.len()), 1)),
            _ => format!("content: {}\n", scalar(pick(SCALARS.len()), 2)),
        };
        sections.push(content);
        // examples
        if pick(2) == 0 {
            let mut e = String::from("examples:\n");
            for key in ["match", "no_match"] {
                if pick(3) == 0 {
                    continue;
                }
                e += &format!("{unit}{key}:\n");
                for _ in 0..pick(3) {
                    match pick(3) {
                        0 => {
                            e +=
                                &format!("{unit}{unit}- {}\n", scalar(pick(SCALARS.len()), pick(3)))
                        }
                        1 => {
                            e += &format!("{unit}{unit}- |\n");
                            e += &format!(
                                "{unit}{unit}{unit}Foo(1)\n{unit}{unit}{unit}{}\n",
                                LINES[pick(LINES.len())]
                            );
                        }
                        _ => {
                            e += &format!(
                                "{unit}{unit}- path: {}\n{unit}{unit}  code: {}\n",
                                scalar(pick(SCALARS.len()), pick(3)),
                                scalar(pick(SCALARS.len()), pick(3))
                            );
                        }
                    }
                }
            }
            sections.push(e);
        }
        // Order, blank lines, comment lines.
        let n = sections.len();
        for i in 0..n {
            let j = pick(n);
            sections.swap(i, j);
        }
        let mut text = String::new();
        for s in sections {
            match pick(6) {
                0 => text.push('\n'),
                1 => text += &format!("{}# a comment\n", " ".repeat(pick(3))),
                _ => {}
            }
            text += &s;
        }
        if pick(8) == 0 {
            text.pop();
        }
        text
    }

    /// One small damage to `text`: a character inserted or removed, a line doubled, moved in
    /// or out by a space.
    fn mutate(text: &mut String, at: usize, op: u8, c: u8) {
        let chars: Vec<char> = text.chars().collect();
        let i = at % (chars.len() + 1);
        let hostile = b":#'\"|>-[]{}&*!% \t\r\n,?@`~\\";
        let mut out: Vec<char> = chars.clone();
        match op {
            0 => out.insert(i, hostile[c as usize % hostile.len()] as char),
            1 if i < out.len() => {
                out.remove(i);
            }
            2 => out.insert(i, char::from_u32(0x80 + c as u32 * 37).unwrap_or('é')),
            _ => {
                let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
                let l = at % lines.len();
                match op {
                    3 => lines.insert(l, lines[l].clone()),
                    4 => lines[l].insert(0, ' '),
                    _ => {
                        if lines[l].starts_with(' ') {
                            lines[l].remove(0);
                        }
                    }
                }
                *text = lines.join("\n");
                return;
            }
        }
        *text = out.into_iter().collect();
    }
}
