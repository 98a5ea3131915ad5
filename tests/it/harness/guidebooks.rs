//! Guidebooks the tests serve: one guideline file, and the guidebook most tests use.

use super::*;

/// Writes `<root>/<dir>/guideline.yaml` and returns its path.
pub fn write_guideline(root: &Path, dir: &str, yaml: &str) -> PathBuf {
    let dir = root.join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guideline.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The guidebook most tests serve:
///
/// | id | repositories | languages | matches |
/// | --- | --- | --- | --- |
/// | `backend-logging` | `acme/backend-*` | kotlin, java | `println(`, `System.out.` |
/// | `java-field-injection` | all | java | `@Autowired` |
/// | `kotlin-data-classes` | all | kotlin | a line starting `class Name(` |
/// | `python-typed-fields` | all | python | `: int = ` |
/// | `todo-needs-ticket` | all | all | `TODO:` |
pub fn test_guidebook(root: &Path) {
    write_guideline(
        root,
        "backend/logging",
        "id: backend-logging\n\
         scope:\n  repositories: ['acme/backend-*']\n  languages: [kotlin, java]\n\
         match:\n  any:\n    - regex:\n        pattern: 'println\\('\n    - regex:\n        pattern: 'System\\.out\\.'\n\
         content: |\n  Use the structured logger (\"log.info\"), not println.\n",
    );
    write_guideline(
        root,
        "java/field-injection",
        "id: java-field-injection\nscope:\n  languages: [java]\n\
         match:\n  any:\n    - regex:\n        pattern: '@Autowired'\n\
         content: Inject through the constructor, not a field.\n",
    );
    write_guideline(
        root,
        "kotlin/data-classes",
        // Trailing spaces and blank lines: the hook text must trim them.
        "id: kotlin-data-classes\nscope:\n  languages: [kotlin]\n\
         when: [file_changed]\n\
         match:\n  any:\n    - regex:\n        pattern: '^class \\w+\\('\n\
         content: \"Kotlin classes:\\n- prefer data classes for DTOs\\n- keep constructors small  \\n\\n\"\n",
    );
    write_guideline(
        root,
        "python/typed-fields",
        "id: python-typed-fields\nscope:\n  languages: [python]\n\
         match:\n  any:\n    - regex:\n        pattern: ': int = '\n\
         content: Type every field.\n",
    );
    write_guideline(
        root,
        "todo",
        "id: todo-needs-ticket\nmatch:\n  any:\n    - regex:\n        pattern: 'TODO:'\n\
         content: Link every TODO to a ticket.\n",
    );
}

/// A temp directory holding [`test_guidebook`] at `<dir>/guidebook`.
pub fn test_guidebook_dir() -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("gb-root-")
        .tempdir()
        .unwrap();
    let root = dir.path().join("guidebook");
    test_guidebook(&root);
    (dir, root)
}
