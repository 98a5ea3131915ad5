//! `guidebook new ID [--language L]`: writes a valid guideline skeleton, examples included.
//!
//! The file is `<root>/<ID>/guideline.yaml`; an existing file, or an id the guidebook already
//! uses, is never overwritten. Writes: that one file (and its directory); first the sample
//! guidebook, when the root is the default one and does not exist yet (as the first `serve`
//! would).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::{CliError, UsageError};
use crate::config::Settings;
use crate::guidebook::{parse_guideline, Guidebook, GUIDELINE_FILE_NAME};
use crate::language::LANGUAGES;
use crate::sample::install_sample;

pub fn run(settings: &Settings, id: &str, language: Option<&str>) -> Result<ExitCode, CliError> {
    let valid_id = !id.is_empty()
        && id.len() <= 128
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_id {
        return Err(UsageError::GuidelineId(id.to_string()).into());
    }
    if let Some(language) = language {
        if !LANGUAGES.contains(&language) {
            return Err(UsageError::Language {
                given: language.to_string(),
                known: LANGUAGES.join(", "),
            }
            .into());
        }
    }
    let root = &settings.guidebook_root;
    // The first `serve` installs the sample only into a default root that does not exist yet;
    // were `new` to create the root first, the user would lose the sample without a word. So
    // `new` installs it first, as `serve` would have.
    if settings.root_is_default() && std::fs::symlink_metadata(root).is_err() {
        let installed = install_sample(root).map_err(|source| CliError::Io {
            doing: format!("installing the sample guidebook into {}", root.display()),
            source,
        })?;
        if installed {
            println!("installed the sample guidebook into {}", root.display());
        }
    }
    // A root that does not exist holds no id yet (and is no error to warn about): the new
    // guideline creates it.
    if root.exists() {
        let snapshot = Guidebook::load(root.clone()).snapshot();
        if let Some(i) = snapshot.index_of(id) {
            return Err(UsageError::IdTaken {
                id: id.to_string(),
                path: snapshot.guidelines[i].guideline.source.clone(),
            }
            .into());
        }
    }
    let path = root.join(id).join(GUIDELINE_FILE_NAME);
    let text = skeleton(id, language);
    // The skeleton must load and its examples pass, or it is no skeleton to start from.
    debug_assert!(parse_guideline(&path, &text).is_ok());
    write_new(&path, &text).map_err(|source| CliError::Io {
        doing: format!("writing {}", path.display()),
        source,
    })?;
    println!("wrote {}", path.display());
    println!(
        "edit its pattern, content and examples, then run `guidebook test {}`",
        root.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Creates `path` (and its directory) with `text`; an existing file is an error, never replaced.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// A guideline whose pattern matches its one `match` example and not its `no_match` one.
pub fn skeleton(id: &str, language: Option<&str>) -> String {
    let scope = match language {
        Some(language) => format!(
            "scope:\n  languages: [{language}]\n  # repositories: [acme/*]    # leave out for every repository\n"
        ),
        None => "# scope:\n#   languages: [kotlin]    # leave out for every file\n".to_string(),
    };
    format!(
        "\
id: {id}
{scope}match:
  any:
    - regex:
        # A Rust regex over the whole file; one match is enough. Replace this placeholder.
        pattern: 'TODO\\({id}\\)'
content: |
  What the agent must do, why, and what to do instead. Shown once per session, as written.
examples:
  # `guidebook test` checks that each `match` example matches and each `no_match` one does
  # not; give an item as `{{code: ..., path: src/Foo.kt}}` to try it under another file name.
  match:
    - |
      val x = 1 // TODO({id})
  no_match:
    - |
      val x = 1 // TODO(someone-else)
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guidebook::{run_examples, GuidelineSnapshot};
    use std::sync::Arc;

    #[test]
    fn every_skeleton_loads_and_passes_its_examples() {
        for language in [None, Some("kotlin"), Some("python"), Some("yaml")] {
            let path = Path::new("/g/my-rule/guideline.yaml");
            let g = parse_guideline(path, &skeleton("my-rule", language))
                .unwrap_or_else(|e| panic!("{language:?}: {e}"));
            assert_eq!(g.examples.len(), 2);
            assert_eq!(g.languages.as_deref(), language.map(|l| vec![l]).as_deref());
            let snapshot = GuidelineSnapshot::build("/g".into(), vec![Arc::new(g)], Vec::new());
            let report = run_examples(&snapshot);
            assert!(report.failures.is_empty(), "{:?}", report.failures);
        }
    }
}
