//! The YAML shapes of a `guideline.yaml`, as the JSON Schema describes them, and the checks on
//! each value that run while it is deserialised (ids, repository globs, languages, patterns,
//! example paths), so that the YAML parser reports the line and column of a bad value. Reads
//! and writes nothing.

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::matching::{
    compile_repository_glob, index_of_hir, one_line_regex_error, parse_and_validate, Index,
    MAX_PATTERN_LEN,
};
use crate::language;

// The raw shapes below mirror guidebook/schema/guideline.schema.json. Validation that the
// schema expresses (unknown keys, enums, patterns) happens during deserialisation, so that
// serde_yaml attaches the line and column of the offending value to the error.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuideline {
    pub(super) id: GuidelineId,
    #[serde(default)]
    pub(super) scope: Option<RawScope>,
    #[serde(default)]
    pub(super) when: Option<Vec<Event>>,
    #[serde(rename = "match")]
    pub(super) matcher: RawMatch,
    pub(super) content: String,
    #[serde(default)]
    pub(super) examples: Option<RawExamples>,
}

/// Code that the guideline must match (`match`) and must not (`no_match`); `guidebook test`
/// and `guidebook check` run them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExamples {
    #[serde(default, rename = "match")]
    pub(super) matches: Vec<RawExample>,
    #[serde(default)]
    pub(super) no_match: Vec<RawExample>,
}

/// One example: its code, or its code and the path it stands for (its language scopes it).
#[derive(Deserialize)]
#[serde(untagged, expecting = "a code snippet, or {code, path}")]
pub(super) enum RawExample {
    Code(String),
    WithPath(RawExampleWithPath),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExampleWithPath {
    pub(super) code: String,
    #[serde(default)]
    pub(super) path: Option<ExamplePath>,
}

/// A relative path with no `..`: it only stands for a file name and its language.
pub(super) struct ExamplePath(pub(super) String);

impl<'de> Deserialize<'de> for ExamplePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() || s.starts_with('/') || s.split('/').any(|part| part == "..") {
            return Err(de::Error::custom(format!(
                "example path `{s}` must be a relative path inside a repository, like src/Foo.kt"
            )));
        }
        Ok(ExamplePath(s))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScope {
    #[serde(default)]
    pub(super) repositories: Option<Vec<RepositoryGlob>>,
    #[serde(default)]
    pub(super) languages: Option<Vec<LanguageName>>,
}

/// The events a guideline can be shown on. Only file changes exist today; the list form leaves
/// room for more without changing the file format.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum Event {
    FileChanged,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatch {
    pub(super) any: Vec<RawCondition>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCondition {
    pub(super) regex: RawRegex,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRegex {
    pub(super) pattern: Pattern,
}

pub(super) struct GuidelineId(pub(super) String);

impl<'de> Deserialize<'de> for GuidelineId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let ok = !s.is_empty()
            && s.len() <= 128
            && s.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(GuidelineId(s))
        } else {
            Err(de::Error::custom(format!(
                "invalid id `{s}`: use lowercase letters, digits and `-`, starting with a letter or digit (at most 128 characters)"
            )))
        }
    }
}

pub(super) struct RepositoryGlob(pub(super) String);

impl<'de> Deserialize<'de> for RepositoryGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        compile_repository_glob(&s)
            .map_err(|e| de::Error::custom(format!("invalid repository glob `{s}`: {e}")))?;
        Ok(RepositoryGlob(s))
    }
}

pub(super) struct LanguageName(pub(super) &'static str);

impl<'de> Deserialize<'de> for LanguageName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match language::known(&s) {
            Some(l) => Ok(LanguageName(l)),
            None => Err(de::Error::custom(format!(
                "unknown language `{s}`; known languages: {}",
                language::LANGUAGES.join(", ")
            ))),
        }
    }
}

pub(super) struct Pattern(pub(super) String, pub(super) Index);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("empty regex pattern"));
        }
        if s.len() > MAX_PATTERN_LEN {
            return Err(de::Error::custom(format!(
                "regex pattern is {} bytes long; the limit is {MAX_PATTERN_LEN}",
                s.len()
            )));
        }
        let hir = parse_and_validate(&s).map_err(|e| {
            de::Error::custom(format!("invalid regex `{s}`: {}", one_line_regex_error(&e)))
        })?;
        let index = index_of_hir(&hir);
        Ok(Pattern(s, index))
    }
}
