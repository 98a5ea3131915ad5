//! Parses and validates one prompt pack (`<guidebook root>/prompts/<role>.yaml`), checks role
//! names, and lists the pack files of a root. Reads: pack files. Errors carry path, line and a
//! message, like guideline errors.

use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::critical::{CRITICAL_HEADER, CRITICAL_MAX_BYTES};
use super::{Example, PromptPack};
use crate::watched::{find_key_line, yaml_error, LoadError};

/// The directory under the guidebook root that holds the packs.
pub const PROMPTS_DIR: &str = "prompts";
/// A pack file larger than this is refused: it is surely not a hand-written prompt.
pub(crate) const MAX_PACK_BYTES: u64 = 256 * 1024;
const MAX_ROLE_LEN: usize = 64;

/// Whether `role` is a valid role name: `[a-z0-9][a-z0-9_-]*`, at most 64 characters. Only such
/// names are ever joined to a path, so a `role` param can never leave the prompts directory.
pub fn valid_role(role: &str) -> bool {
    role.len() <= MAX_ROLE_LEN
        && role
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && role
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

// The raw shape mirrors guidebook/schema/prompt-pack.schema.json.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPack {
    #[serde(default)]
    description: Option<String>,
    /// Checked after deserialising (not as a `Text`): serde_yaml places a top-level value's
    /// error on line 1, and an empty block must be named on its own line.
    #[serde(default)]
    critical: Option<String>,
    role_definition: Text,
    core_constraints: Vec<Text>,
    rules: Vec<Text>,
    #[serde(default)]
    workflow: Vec<Text>,
    #[serde(default)]
    report_rules: Vec<Text>,
    examples: Vec<RawExample>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExample {
    title: Text,
    body: Text,
}

/// A string that must hold more than whitespace; checked while deserialising so that the error
/// carries the value's line.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim().is_empty() {
            Err(de::Error::custom("empty text"))
        } else {
            Ok(Text(s))
        }
    }
}

/// Parses and validates one pack's text; `role` comes from the file name.
pub fn parse_pack(path: &Path, role: &str, text: &str) -> Result<PromptPack, LoadError> {
    if text.trim().is_empty() {
        return Err(LoadError::new(path, None, "the file is empty"));
    }
    let raw: RawPack = serde_yaml::from_str(text).map_err(|e| yaml_error(path, text, &e))?;
    let at = |key: &str| find_key_line(text, key);
    if raw.core_constraints.len() != 3 {
        return Err(LoadError::new(
            path,
            at("coreConstraints"),
            format!(
                "`coreConstraints` must list exactly 3 items (the summary phase shows them); found {}",
                raw.core_constraints.len()
            ),
        ));
    }
    if raw.rules.is_empty() {
        return Err(LoadError::new(
            path,
            at("rules"),
            "`rules` must list at least one rule",
        ));
    }
    if raw.examples.is_empty() {
        return Err(LoadError::new(
            path,
            at("examples"),
            "`examples` must list at least one example (the standard phase shows the first)",
        ));
    }
    let critical = match raw.critical {
        None => None,
        Some(body) => {
            let body = body.trim();
            if body.is_empty() {
                return Err(LoadError::new(
                    path,
                    at("critical"),
                    "`critical` is empty: the CRITICAL block is never dropped (leave the key out \
                     for the built-in one)",
                ));
            }
            // The header is the block's mark; a pack may write it or leave it to us.
            let block = if body.lines().next().map(str::trim) == Some(CRITICAL_HEADER) {
                body.to_string()
            } else {
                format!("{CRITICAL_HEADER}\n{body}")
            };
            if block.len() > CRITICAL_MAX_BYTES {
                return Err(LoadError::new(
                    path,
                    at("critical"),
                    format!(
                        "`critical` takes {} bytes with its `{CRITICAL_HEADER}` line; at most \
                         {CRITICAL_MAX_BYTES} (it leads every phase and is never cut)",
                        block.len()
                    ),
                ));
            }
            Some(block)
        }
    };
    let texts = |v: Vec<Text>| v.into_iter().map(|t| t.0.trim().to_string()).collect();
    Ok(PromptPack {
        role: role.to_string(),
        description: raw.description.map(|d| d.trim().to_string()),
        critical,
        role_definition: raw.role_definition.0.trim().to_string(),
        core_constraints: texts(raw.core_constraints),
        rules: texts(raw.rules),
        workflow: texts(raw.workflow),
        report_rules: texts(raw.report_rules),
        examples: raw
            .examples
            .into_iter()
            .map(|e| Example {
                title: e.title.0.trim().to_string(),
                body: e.body.0.trim_end().to_string(),
            })
            .collect(),
        source: path.to_path_buf(),
    })
}

/// One `*.yaml` file in the prompts directory: its role (when the name is valid) and metadata.
pub struct PackFile {
    pub path: PathBuf,
    pub role: Result<String, LoadError>,
    pub meta: std::fs::Metadata,
}

/// Every `*.yaml` in `<root>/prompts`, sorted by path. A missing directory holds no packs (the
/// embedded `default` is served then); other files and subdirectories are ignored.
pub fn find_pack_files(root: &Path) -> std::io::Result<Vec<PackFile>> {
    let dir = root.join(PROMPTS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".yaml"))
        else {
            continue;
        };
        if stem.starts_with('.') {
            continue;
        }
        // Follow a symlinked file to what it names. A directory named `x.yaml` is listed too:
        // its read fails, so a pack replaced by a directory keeps its last good version and is
        // reported, instead of silently disappearing.
        let Ok(meta) = std::fs::metadata(&path).or_else(|_| entry.metadata()) else {
            continue;
        };
        let role = if valid_role(stem) {
            Ok(stem.to_string())
        } else {
            Err(LoadError::new(
                &path,
                None,
                format!("`{stem}` is not a valid role name: use lowercase letters, digits, `_` and `-`, starting with a letter or digit (at most {MAX_ROLE_LEN} characters)"),
            ))
        };
        out.push(PackFile { path, role, meta });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
description: test pack
roleDefinition: |
  You are a careful engineer.
coreConstraints:
  - one
  - two
  - three
rules:
  - Keep changes small.
workflow:
  - Read first.
reportRules:
  - Write the .done file.
examples:
  - title: First
    body: |
      Do the thing.
";

    fn parse(text: &str) -> Result<PromptPack, LoadError> {
        parse_pack(Path::new("/g/prompts/x.yaml"), "x", text)
    }

    #[test]
    fn parses_a_pack() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.role, "x");
        assert_eq!(p.role_definition, "You are a careful engineer.");
        assert_eq!(p.core_constraints, ["one", "two", "three"]);
        assert_eq!(p.examples[0].body, "Do the thing.");
        let minimal = GOOD
            .replace("workflow:\n  - Read first.\n", "")
            .replace("reportRules:\n  - Write the .done file.\n", "");
        assert!(parse(&minimal).unwrap().workflow.is_empty());
    }

    /// `critical:` gives the block's text (say in another language), under the same
    /// `[CRITICAL]` line; absent, the seed's block; empty or too long, an error with its line.
    #[test]
    fn a_pack_may_word_the_critical_block_but_never_drop_it() {
        assert_eq!(parse(GOOD).unwrap().critical, None);
        let own = "- Verboten: externe APIs ohne Freigabe.\n- QC: erst pyright und ruff.";
        let p = parse(&format!(
            "{GOOD}critical: |\n  {}\n",
            own.replace('\n', "\n  ")
        ))
        .unwrap();
        assert_eq!(p.critical.as_deref(), Some(&*format!("[CRITICAL]\n{own}")));
        // Written with its header, the header is not doubled.
        let p = parse(&format!("{GOOD}critical: |\n  [CRITICAL]\n  - x\n")).unwrap();
        assert_eq!(p.critical.as_deref(), Some("[CRITICAL]\n- x"));

        for empty in ["''", "'  '", "|\n  \n"] {
            let e = parse(&format!("{GOOD}critical: {empty}\n")).unwrap_err();
            assert!(e.message.contains("`critical` is empty"), "{empty}: {e}");
            assert_eq!(e.line, Some(18), "{empty}: {e}");
        }
        let e = parse(&format!(
            "{GOOD}critical: {}\n",
            "x".repeat(CRITICAL_MAX_BYTES)
        ))
        .unwrap_err();
        assert!(e.message.contains("at most 480"), "{e}");
        assert_eq!(e.line, Some(18), "{e}");
    }

    #[test]
    fn rejects_with_line_numbers() {
        let e = parse(&format!("{GOOD}colour: red\n")).unwrap_err();
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        assert_eq!(e.line, Some(18), "{e}");

        let e = parse(&GOOD.replace("  - three\n", "")).unwrap_err();
        assert!(e.message.contains("exactly 3"), "{e}");
        assert_eq!(e.line, Some(4), "{e}");

        let e = parse(&GOOD.replace("  - Keep changes small.", "  - '  '")).unwrap_err();
        assert!(e.message.contains("empty text"), "{e}");
        assert_eq!(e.line, Some(9), "{e}");

        let e = parse(&GOOD.replace("    body: |\n      Do the thing.\n", "")).unwrap_err();
        assert!(e.message.contains("missing field `body`"), "{e}");

        let e = parse("roleDefinition: [unclosed\n").unwrap_err();
        assert!(e.line.is_some(), "{e}");
        // A syntax error names its column too: `path:line:column: message`.
        let column = e.column.expect("a syntax error has a column");
        assert!(
            e.to_string()
                .starts_with(&format!("/g/prompts/x.yaml:1:{column}: ")),
            "{e}"
        );

        assert!(parse("  \n").unwrap_err().message.contains("empty"));
    }

    #[test]
    fn role_names_cannot_name_paths() {
        for ok in ["default", "reviewer-2", "qa_bot", "0"] {
            assert!(valid_role(ok), "{ok}");
        }
        for bad in [
            "", "../etc", "a/b", "Default", "-x", "_x", ".hidden", "a b", "a.yaml", "é",
        ] {
            assert!(!valid_role(bad), "{bad}");
        }
        assert!(!valid_role(&"a".repeat(65)));
    }

    #[test]
    fn finds_yaml_files_only() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            find_pack_files(dir.path()).unwrap().is_empty(),
            "no prompts dir"
        );
        let prompts = dir.path().join(PROMPTS_DIR);
        std::fs::create_dir_all(prompts.join("sub.yaml")).unwrap();
        for name in ["default.yaml", "Bad Name.yaml", "notes.md", ".hidden.yaml"] {
            std::fs::write(prompts.join(name), GOOD).unwrap();
        }
        let found = find_pack_files(dir.path()).unwrap();
        let roles: Vec<_> = found
            .iter()
            .map(|f| f.role.as_ref().ok().cloned())
            .collect();
        // A directory named like a pack is listed, so that reading it fails and is reported
        // (a pack replaced by a directory keeps its last good version).
        assert_eq!(
            roles,
            [None, Some("default".to_string()), Some("sub".to_string())]
        );
        assert!(found[2].meta.is_dir());
        assert!(found[0]
            .role
            .as_ref()
            .unwrap_err()
            .message
            .contains("not a valid role name"));
    }

    /// The JSON Schema for editors and this validator agree on the shipped pack and on broken ones.
    #[test]
    fn the_json_schema_and_the_validator_agree() {
        let schema: serde_json::Value = serde_json::from_str(include_str!(
            "../../guidebook/schema/prompt-pack.schema.json"
        ))
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let shipped = crate::sample::SAMPLE_FILES
            .iter()
            .find(|(p, _)| *p == "prompts/default.yaml")
            .unwrap()
            .1;
        let cases = [
            (shipped.to_string(), true),
            (GOOD.to_string(), true),
            (format!("{GOOD}colour: red\n"), false),
            (GOOD.replace("  - three\n", ""), false),
            (
                GOOD.replace("rules:\n  - Keep changes small.\n", "rules: []\n"),
                false,
            ),
            (
                GOOD.replace("roleDefinition: |\n  You are a careful engineer.\n", ""),
                false,
            ),
            (format!("{GOOD}critical: |\n  - Forbidden: x.\n"), true),
            (format!("{GOOD}critical: '  '\n"), false),
            (format!("{GOOD}critical: [x]\n"), false),
        ];
        for (text, valid) in cases {
            let value: serde_json::Value = serde_yaml::from_str(&text).unwrap();
            assert_eq!(validator.is_valid(&value), valid, "schema on {text}");
            assert_eq!(parse(&text).is_ok(), valid, "validator on {text}");
        }
    }
}
