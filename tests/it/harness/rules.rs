//! A repository holding a rule of each kind the agents keep (Cursor, Copilot, a nested
//! `AGENTS.md`, a `.guidebook/` guideline), trusted or not, beside a sidecar: the real agents'
//! scene for issue 39's proof.

use super::*;

/// The ids of the repository's rules an edit of `src/Jobs.kt` that writes `Thread.sleep(`
/// brings in, in the order the hook text lists them.
pub const REPOSITORY_RULES: [&str; 4] = [
    "repo:shop/.cursor/rules/kotlin.mdc",
    "repo:shop/.github/instructions/jobs.instructions.md",
    "repo:shop/no-thread-sleep",
    "repo:shop/src/AGENTS.md",
];

/// A sidecar with an empty guidebook root, a repository `shop` (`acme/shop`, one commit) with
/// its rule files and `src/Jobs.kt` ([`sleepy_jobs`]), trusted by `guidebook trust` when
/// `trusted` (and served before this returns), and an empty home for an agent's user.
pub struct RulesScene {
    pub dir: TempDir,
    pub sidecar: Sidecar,
    pub repo: PathBuf,
    pub jobs: PathBuf,
    pub home: PathBuf,
}

impl RulesScene {
    pub fn new(trusted: bool) -> RulesScene {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        std::fs::create_dir_all(&root).unwrap();
        let sidecar = Sidecar::start(&root);
        let repo = dir.path().join("shop");
        git_repo(&repo, Some("git@github.com:acme/shop.git"));
        write_file(
            &repo,
            ".cursor/rules/kotlin.mdc",
            "---\ndescription: Kotlin\nglobs: \"**/*.kt\"\nalwaysApply: false\n---\nPrefer val over var in Kotlin.\n",
        );
        write_file(
            &repo,
            ".github/instructions/jobs.instructions.md",
            "---\napplyTo: \"src/**\"\n---\nEvery job logs its start and end.\n",
        );
        write_file(&repo, "src/AGENTS.md", "Jobs here must be idempotent.\n");
        write_file(
            &repo,
            ".guidebook/no-sleep/guideline.yaml",
            "id: no-thread-sleep\nmatch:\n  in: changes\n  regex: {pattern: 'Thread\\.sleep\\('}\ncontent: Use delay(), not Thread.sleep, in shop.\n",
        );
        write_file(&repo, "README.md", "shop\n");
        git_commit_all(&repo, "init");
        let jobs = write_file(&repo, "src/Jobs.kt", &sleepy_jobs());
        if trusted {
            let out = sidecar.cli(&["trust", repo.to_str().unwrap()]);
            assert!(out.status.success(), "{out:?}");
            let started = Instant::now();
            while sidecar.explain(&[&jobs])["files"][0]["repositoryRules"]["served"] != 4 {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "the trusted rules are not served: {}",
                    sidecar.stderr()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let home = dir.path().join("user");
        std::fs::create_dir_all(&home).unwrap();
        RulesScene {
            dir,
            sidecar,
            repo,
            jobs,
            home,
        }
    }
}

/// How many times each of [`REPOSITORY_RULES`] appears in `text`, by id.
pub fn rule_counts(text: &str) -> Vec<usize> {
    REPOSITORY_RULES
        .iter()
        .map(|id| text.matches(&format!("[{id}]")).count())
        .collect()
}
