//! The scene of the check before an edit: a `severity: block` guideline, a Kotlin file that
//! already breaks it where no edit wrote, and the violating and corrected lines an edit adds.

use super::*;

/// The block guideline: a password literal in Kotlin, where an edit writes it.
pub const NO_PASSWORD: &str = "\
id: no-plaintext-password
scope:
  languages: [kotlin]
match:
  in: changes
  regex: {pattern: 'password\\s*=\\s*\"[^\"]+\"'}
severity: block
content: Never commit a password; read it from the secret store (secrets.get).
";

/// `src/Db.kt`: a password literal already on line 2 (not an edit's doing: in the last commit).
pub const DB_KT: &str =
    "package db\nval legacy = password = \"old\"\nval user = \"app\"\nval timeout = 5\n";

/// The line an edit adds after `val user = "app"` that breaks the guideline.
pub const BAD_LINE: &str = "val password = \"hunter2\"";
/// The corrected line.
pub const GOOD_LINE: &str = "val password = secrets.get(\"db\")";

/// [`DB_KT`] with `line` added after `val user = "app"` (as line 4).
pub fn db_with(line: &str) -> String {
    DB_KT.replace(
        "val user = \"app\"\n",
        &format!("val user = \"app\"\n{line}\n"),
    )
}

/// The reason the shim gives for adding [`BAD_LINE`] to `src/Db.kt`, the path as shown
/// relative to the agent's working directory.
pub fn blocked_reason(shown_path: &str) -> String {
    format!(
        "Adaptive Guidebook blocked this edit (nothing was written): `{shown_path}` line 4 \
         breaks [no-plaintext-password]: Never commit a password; read it from the secret \
         store (secrets.get).\n  > val password = \"hunter2\"\nChange the edit so the line no \
         longer matches, or add `guidebook:allow no-plaintext-password` with a reason on or \
         above the line."
    )
}

/// A sidecar serving [`NO_PASSWORD`], a repository (`acme/app`) with [`DB_KT`] committed as
/// `src/Db.kt`, and an empty home for an agent's user. Keep `dir` bound: dropping it deletes
/// them all.
pub struct BlockScene {
    pub dir: TempDir,
    pub sidecar: Sidecar,
    pub repo: PathBuf,
    pub db: PathBuf,
    pub home: PathBuf,
}

impl BlockScene {
    pub fn new() -> BlockScene {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        write_guideline(&root, "no-plaintext-password", NO_PASSWORD);
        let sidecar = Sidecar::start(&root);
        let repo = dir.path().join("app");
        git_repo(&repo, Some("git@github.com:acme/app.git"));
        let db = write_file(&repo, "src/Db.kt", DB_KT);
        git_commit_all(&repo, "init");
        let home = dir.path().join("user");
        std::fs::create_dir_all(&home).unwrap();
        BlockScene {
            dir,
            sidecar,
            repo,
            db,
            home,
        }
    }
}
