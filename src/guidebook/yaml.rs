//! The YAML shapes of a `guideline.yaml`, as the JSON Schema describes them, and the checks on
//! each value that run while it is deserialised (ids, repository globs, languages, patterns,
//! example paths), so that the YAML parser reports the line and column of a bad value. Reads
//! and writes nothing.

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::matching::{
    compile_path_glob, compile_repository_glob, index_of_hir, one_line_regex_error,
    parse_and_validate, Index, Within, MAX_PATTERN_LEN,
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
    /// Absent: the guideline holds for every change of a file in its scope.
    #[serde(default, rename = "match")]
    pub(super) matcher: Option<RawMatch>,
    #[serde(default)]
    pub(super) severity: Option<super::guideline::Severity>,
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
/// Read by hand rather than `untagged`, so that a mistake inside `{code, path, written}` is
/// reported as itself, at its line.
pub(super) enum RawExample {
    Code(String),
    WithPath(RawExampleWithPath),
}

impl<'de> Deserialize<'de> for RawExample {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Example;
        impl<'de> de::Visitor<'de> for Example {
            type Value = RawExample;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a code snippet, or {code, path, written}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawExample, E> {
                Ok(RawExample::Code(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RawExample, E> {
                Ok(RawExample::Code(v))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<RawExample, A::Error> {
                RawExampleWithPath::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawExample::WithPath)
            }
        }
        d.deserialize_any(Example)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExampleWithPath {
    pub(super) code: String,
    #[serde(default)]
    pub(super) path: Option<ExamplePath>,
    /// The lines of `code` the edit wrote (`[first, last]`, 1-based), for `in: changes`.
    #[serde(default)]
    pub(super) written: Option<Vec<LineRange>>,
}

/// `[first, last]`: 1-based lines, `first <= last`.
pub(super) struct LineRange(pub(super) usize, pub(super) usize);

impl<'de> Deserialize<'de> for LineRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pair = <Vec<usize>>::deserialize(d)?;
        match pair[..] {
            [first, last] if first >= 1 && first <= last => Ok(LineRange(first, last)),
            _ => Err(de::Error::custom(format!(
                "a written line range is [first, last], 1-based with first <= last, not {pair:?}"
            ))),
        }
    }
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
    #[serde(default)]
    pub(super) paths: Option<PathGlobs>,
}

/// The events a guideline can be shown on. Only file changes exist today; the list form leaves
/// room for more without changing the file format.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum Event {
    FileChanged,
}

/// `match`: one condition (`any`, `all`, `not` or `regex`), and where its regex leaves look
/// (`in`, default `file`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatch {
    #[serde(default, rename = "in")]
    pub(super) within: Option<Within>,
    #[serde(default)]
    pub(super) any: Option<Vec<RawCondition>>,
    #[serde(default)]
    pub(super) all: Option<Vec<RawCondition>>,
    #[serde(default)]
    pub(super) not: Option<Box<RawCondition>>,
    #[serde(default)]
    pub(super) regex: Option<RawRegex>,
    #[serde(default)]
    pub(super) ast: Option<RawAst>,
}

impl RawMatch {
    /// The one condition it holds, or why not.
    pub(super) fn condition(self) -> Result<RawCondition, String> {
        RawCondition::from_keys(self.any, self.all, self.not, self.regex, self.ast, "match")
    }
}

/// A condition: exactly one of `any: [conditions]`, `all: [conditions]`, `not: condition`,
/// `regex: {pattern, in}`, `ast: {pattern, inside, has, in}`.
#[derive(Deserialize)]
#[serde(try_from = "RawConditionKeys")]
pub(super) enum RawCondition {
    Any(Vec<RawCondition>),
    All(Vec<RawCondition>),
    Not(Box<RawCondition>),
    Regex(RawRegex),
    Ast(RawAst),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConditionKeys {
    #[serde(default)]
    any: Option<Vec<RawCondition>>,
    #[serde(default)]
    all: Option<Vec<RawCondition>>,
    #[serde(default)]
    not: Option<Box<RawCondition>>,
    #[serde(default)]
    regex: Option<RawRegex>,
    #[serde(default)]
    ast: Option<RawAst>,
}

impl TryFrom<RawConditionKeys> for RawCondition {
    type Error = String;

    fn try_from(k: RawConditionKeys) -> Result<Self, String> {
        RawCondition::from_keys(k.any, k.all, k.not, k.regex, k.ast, "a condition")
    }
}

impl RawCondition {
    fn from_keys(
        any: Option<Vec<RawCondition>>,
        all: Option<Vec<RawCondition>>,
        not: Option<Box<RawCondition>>,
        regex: Option<RawRegex>,
        ast: Option<RawAst>,
        what: &str,
    ) -> Result<RawCondition, String> {
        let given = [
            any.is_some(),
            all.is_some(),
            not.is_some(),
            regex.is_some(),
            ast.is_some(),
        ];
        match given.iter().filter(|g| **g).count() {
            1 => {}
            0 => {
                return Err(format!(
                    "{what} needs one of `any`, `all`, `not`, `regex` or `ast`"
                ))
            }
            _ => {
                return Err(format!(
                    "{what} takes exactly one of `any`, `all`, `not`, `regex` or `ast`; combine several with `all: [...]` or `any: [...]`"
                ))
            }
        }
        let empty = |list: &Vec<RawCondition>, key: &str| {
            if list.is_empty() {
                Err(format!("`{key}` must list at least one condition"))
            } else {
                Ok(())
            }
        };
        Ok(if let Some(any) = any {
            empty(&any, "any")?;
            RawCondition::Any(any)
        } else if let Some(all) = all {
            empty(&all, "all")?;
            RawCondition::All(all)
        } else if let Some(not) = not {
            RawCondition::Not(not)
        } else if let Some(ast) = ast {
            RawCondition::Ast(ast)
        } else {
            RawCondition::Regex(regex.expect("one key was given"))
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRegex {
    pub(super) pattern: Pattern,
    /// Overrides `match.in` for this leaf.
    #[serde(default, rename = "in")]
    pub(super) within: Option<Within>,
}

/// `ast: {pattern, inside, has, in}`: an ast-grep pattern matched on the file's syntax tree, in
/// the file's language (checked against `scope.languages` by the loader).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAst {
    pub(super) pattern: String,
    #[serde(default)]
    pub(super) inside: Option<String>,
    #[serde(default)]
    pub(super) has: Option<String>,
    /// Overrides `match.in` for this leaf.
    #[serde(default, rename = "in")]
    pub(super) within: Option<Within>,
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

/// `scope.paths`: a non-empty list of path globs.
pub(super) struct PathGlobs(pub(super) Vec<PathGlob>);

impl<'de> Deserialize<'de> for PathGlobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let globs = Vec::<PathGlob>::deserialize(d)?;
        if globs.is_empty() {
            return Err(de::Error::custom(
                "`scope.paths` is an empty list; leave it out to mean every path",
            ));
        }
        Ok(PathGlobs(globs))
    }
}

/// A `scope.paths` entry: a glob relative to the repository root, `!` in front to exclude.
pub(super) struct PathGlob(pub(super) String);

impl<'de> Deserialize<'de> for PathGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        compile_path_glob(&s).map_err(de::Error::custom)?;
        Ok(PathGlob(s))
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
