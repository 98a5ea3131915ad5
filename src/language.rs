//! Maps a file path to its language name (`kotlin`, `java`, …) by extension or file name.
//! Reads nothing but the path string.

use std::path::Path;

/// Every language name a guideline's `scope.languages` may use. The order is the order shown in
/// validation errors.
pub const LANGUAGES: &[&str] = &[
    "kotlin",
    "java",
    "python",
    "typescript",
    "javascript",
    "rust",
    "go",
    "markdown",
    "yaml",
    "json",
    "toml",
    "shell",
    "sql",
    "groovy",
    "scala",
    "c",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "swift",
    "dockerfile",
    "properties",
    "xml",
    "html",
    "css",
];

/// Whether `name` is a language that [`language_of`] can produce.
#[cfg(test)]
fn is_known(name: &str) -> bool {
    known(name).is_some()
}

/// `name` as the language [`language_of`] produces, if it is one.
pub fn known(name: &str) -> Option<&'static str> {
    LANGUAGES.iter().find(|l| **l == name).copied()
}

/// The language of `path`, or `None` when neither its name nor its extension is known.
pub fn language_of(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    // Whole-name rules first: these files have no telling extension.
    if name == "Dockerfile" || name.starts_with("Dockerfile.") || name.ends_with(".dockerfile") {
        return Some("dockerfile");
    }
    if name == "Makefile" {
        return None;
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    EXTENSIONS
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|&(_, language)| language)
}

/// Every file name extension [`language_of`] knows (lower case) and its language, each
/// language's extensions in a row, its usual one first.
pub const EXTENSIONS: &[(&str, &str)] = &[
    ("kt", "kotlin"),
    ("kts", "kotlin"),
    ("java", "java"),
    ("py", "python"),
    ("pyi", "python"),
    ("ts", "typescript"),
    ("tsx", "typescript"),
    ("mts", "typescript"),
    ("cts", "typescript"),
    ("js", "javascript"),
    ("jsx", "javascript"),
    ("mjs", "javascript"),
    ("cjs", "javascript"),
    ("rs", "rust"),
    ("go", "go"),
    ("md", "markdown"),
    ("markdown", "markdown"),
    ("yaml", "yaml"),
    ("yml", "yaml"),
    ("json", "json"),
    ("toml", "toml"),
    ("sh", "shell"),
    ("bash", "shell"),
    ("zsh", "shell"),
    ("sql", "sql"),
    ("groovy", "groovy"),
    ("gradle", "groovy"),
    ("scala", "scala"),
    ("sc", "scala"),
    ("c", "c"),
    ("h", "c"),
    ("cc", "cpp"),
    ("cpp", "cpp"),
    ("cxx", "cpp"),
    ("hpp", "cpp"),
    ("hh", "cpp"),
    ("hxx", "cpp"),
    ("cs", "csharp"),
    ("rb", "ruby"),
    ("php", "php"),
    ("swift", "swift"),
    ("properties", "properties"),
    ("xml", "xml"),
    ("html", "html"),
    ("htm", "html"),
    ("css", "css"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_the_languages_the_issue_names() {
        let cases = [
            ("/r/Main.kt", Some("kotlin")),
            ("/r/build.gradle.kts", Some("kotlin")),
            ("/r/A.java", Some("java")),
            ("/r/a.py", Some("python")),
            ("/r/a.ts", Some("typescript")),
            ("/r/a.tsx", Some("typescript")),
            ("/r/a.js", Some("javascript")),
            ("/r/lib.rs", Some("rust")),
            ("/r/main.go", Some("go")),
            ("/r/README.md", Some("markdown")),
            ("/r/application.yml", Some("yaml")),
            ("/r/compose.yaml", Some("yaml")),
            ("/r/Dockerfile", Some("dockerfile")),
            ("/r/UPPER.KT", Some("kotlin")),
            ("/r/Makefile", None),
            ("/r/noext", None),
            ("/r/a.unknown", None),
        ];
        for (path, want) in cases {
            assert_eq!(language_of(Path::new(path)), want, "{path}");
        }
    }

    #[test]
    fn every_produced_language_is_known() {
        for ext in [
            "kt",
            "java",
            "py",
            "ts",
            "js",
            "rs",
            "go",
            "md",
            "yml",
            "json",
            "toml",
            "sh",
            "sql",
            "gradle",
            "scala",
            "c",
            "cpp",
            "cs",
            "rb",
            "php",
            "swift",
            "properties",
            "xml",
            "html",
            "css",
        ] {
            let lang = language_of(Path::new(&format!("/x/f.{ext}"))).unwrap();
            assert!(is_known(lang), "{lang}");
        }
    }
}
