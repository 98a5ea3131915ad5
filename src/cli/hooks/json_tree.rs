//! A text-preserving JSON editor: a document read as a tree whose untouched leaves are their
//! original text, rebuilt only along the paths being edited. Pure: text in, text out.
//!
//! Nothing of the user's is re-encoded: each value is kept as `serde_json::value::RawValue`,
//! only the objects and arrays on the way to our entries are rebuilt, and every other value is
//! written back byte for byte, key order and formatting included.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Why a configuration file cannot be edited. Nothing is changed in any case: every file an
/// install touches is read and edited in memory before the first is written.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// A place in the text that cannot be read, or not safely (not JSON, a duplicate key, a
    /// comment where it cannot be kept): where and why.
    #[error("{line}:{column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON, but not the shape hooks live in (say, `hooks` is a list).
    #[error("{0}")]
    Shape(String),
    /// Codex's `config.toml` is not TOML, or `mcp_servers` in it is not a table.
    #[error("{0}")]
    Toml(String),
    /// The file cannot be read or written safely (a link in a project, not a regular file).
    #[error(transparent)]
    File(#[from] super::files::FileError),
}

/// An object's members in their written order, each value as its original text.
pub type RawMembers<'a> = Vec<(String, &'a RawValue)>;

/// A value of the edited document: the original text where nothing changed, a rebuilt object
/// or array on the path to an edit, or a value of ours (`L`) serialised in its own key order.
/// It is written once and never edited again, so no state of it is ever "already rebuilt".
#[derive(Debug)]
pub enum Node<'a, L> {
    Raw(&'a RawValue),
    Object(Vec<(String, Node<'a, L>)>),
    Array(Vec<Node<'a, L>>),
    Built(L),
}

impl<L: Serialize> Serialize for Node<'_, L> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Raw(raw) => raw.serialize(s),
            Node::Object(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Built(value) => value.serialize(s),
        }
    }
}

/// `members` with the member `key` replaced, in place, by what `edit` makes of its original
/// text (`None` when missing; then the new member is appended). Every other member stays as
/// written.
pub fn edit_member<'a, L>(
    members: RawMembers<'a>,
    key: &str,
    edit: impl FnOnce(Option<&'a RawValue>) -> Result<Node<'a, L>, EditError>,
) -> Result<Vec<(String, Node<'a, L>)>, EditError> {
    let found = members.iter().position(|(k, _)| k == key);
    let mut edit = Some(edit);
    let mut out: Vec<(String, Node<'a, L>)> = Vec::with_capacity(members.len() + 1);
    for (i, (k, raw)) in members.into_iter().enumerate() {
        if Some(i) == found {
            let edit = edit.take().expect("one member is edited");
            out.push((k, edit(Some(raw))?));
        } else {
            out.push((k, Node::Raw(raw)));
        }
    }
    if let Some(edit) = edit {
        out.push((key.to_string(), edit(None)?));
    }
    Ok(out)
}

/// The members of `raw`, the value of `key` in `what`, which must be an object.
pub fn object_members<'a>(
    raw: &'a RawValue,
    key: &str,
    what: &str,
) -> Result<RawMembers<'a>, EditError> {
    members(raw.get())
        .ok_or_else(|| EditError::Shape(format!("`{key}` in {what} is not an object")))
}

/// An object's members in their written order, each value as its original text.
struct Members<'a>(RawMembers<'a>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(MembersVisitor)
    }
}

/// The members of the object `text`, or `None` if it is not an object.
pub fn members(text: &str) -> Option<RawMembers<'_>> {
    serde_json::from_str::<Members>(text).ok().map(|m| m.0)
}

/// The top-level members of a document (an empty text is an empty object). A document with
/// a key twice in one object is refused: hosts and editors disagree on which one counts
/// (serde_json's `Value` keeps the last, a member walk finds the first), and a file that
/// means one thing to the installer and another to the agent is how a repository could get
/// its own handler trusted.
pub fn parse_document(text: &str) -> Result<RawMembers<'_>, EditError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    check_unique_keys(text)?;
    match serde_json::from_str::<Members>(text) {
        Ok(members) => Ok(members.0),
        Err(e) if e.is_data() => Err(EditError::Shape(
            "the document is not a JSON object".to_string(),
        )),
        Err(e) => Err(syntax_error(e)),
    }
}

pub fn syntax_error(e: serde_json::Error) -> EditError {
    let message = e.to_string();
    // serde_json ends its messages with the position, which the error carries separately.
    let message = match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message,
    };
    let message = match message.strip_prefix(DUPLICATE) {
        Some(key) => format!(
            "duplicate key {key} in one object: agents and editors disagree on which one \
             counts; remove one"
        ),
        None => format!("not valid JSON: {message}"),
    };
    EditError::Syntax {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// How [`Unique`] starts the message of a duplicate key, for [`syntax_error`] to word it.
const DUPLICATE: &str = "\u{0}duplicate key ";

/// Refuses a JSON text that has the same key twice in any object, at any depth, with the line
/// and column just after the second one; a text that is not JSON gets its syntax error.
pub fn check_unique_keys(text: &str) -> Result<(), EditError> {
    serde_json::from_str::<Unique>(text)
        .map(|_| ())
        .map_err(syntax_error)
}

/// Any JSON value, read only to check that no object in it repeats a key.
struct Unique;

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Unique;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_unit<E>(self) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
        while seq.next_element::<Unique>()?.is_some() {}
        Ok(Unique)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                // Raised before the value is read: the position is just after the key.
                return Err(serde::de::Error::custom(format!(
                    "{DUPLICATE}{}",
                    serde_json::to_string(&key).unwrap_or(key)
                )));
            }
            map.next_value::<Unique>()?;
        }
        Ok(Unique)
    }
}

/// `text` with its `//` and `/* */` comments turned into spaces (line breaks kept), as Gemini
/// CLI reads its settings (`JSON.parse(stripJsonComments(text))`, whose default also keeps
/// every other character in place), and where each comment was. Every byte keeps its offset,
/// so a position in the result is one in `text`. A trailing comma is not removed: Gemini CLI
/// refuses it too.
pub fn strip_comments(text: &str) -> (String, Vec<std::ops::Range<usize>>) {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut comments = Vec::new();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        let end = match (b, bytes.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                i += 1;
                continue;
            }
            (b'/', Some(b'/')) => bytes[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(bytes.len(), |n| i + n),
            (b'/', Some(b'*')) => bytes[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(bytes.len(), |n| i + 2 + n + 2),
            _ => {
                i += 1;
                continue;
            }
        };
        for c in &mut out[i..end] {
            if !matches!(*c, b'\n' | b'\r') {
                *c = b' ';
            }
        }
        comments.push(i..end);
        i = end;
    }
    // Only ASCII bytes were replaced, by ASCII spaces, and only whole comments, which begin
    // and end on character boundaries: the result is UTF-8.
    (
        String::from_utf8(out).expect("comments replaced whole"),
        comments,
    )
}

/// Pretty-prints `top` with the indentation `original` uses (two spaces if it shows none), so
/// that values kept as original text sit among rebuilt ones without a seam. Ends with a newline.
pub fn render<L: Serialize>(top: &Node<'_, L>, original: &str) -> String {
    let indent = detect_indent(original);
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    top.serialize(&mut serializer)
        .expect("serialising to memory cannot fail");
    let mut text = String::from_utf8(out).expect("serde_json writes UTF-8");
    text.push('\n');
    text
}

/// The indentation one level of `text` uses (two spaces if it shows none).
pub fn indent_unit(text: &str) -> String {
    detect_indent(text)
}

fn detect_indent(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|line| &line[..line.len() - line.trim_start().len()])
        .find(|ws| !ws.is_empty())
        .filter(|ws| ws.chars().all(|c| c == ' ') || ws.chars().all(|c| c == '\t'))
        .unwrap_or("  ")
        .to_string()
}
