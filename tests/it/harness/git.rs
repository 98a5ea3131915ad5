//! Real git repositories with real `origin` remotes, isolated from the machine's git config,
//! and the files written into them.

use super::*;

/// Runs `git ARGS` in `dir` isolated from the machine's git configuration; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let home = std::env::temp_dir();
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Guidebook Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", home)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .output()
        .expect("running git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `dir` a real git repository, with `origin` set to `origin` if given.
pub fn git_repo(dir: &Path, origin: Option<&str>) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    if let Some(url) = origin {
        git(dir, &["remote", "add", "origin", url]);
    }
}

/// Commits everything in `dir` (worktrees and submodules need a commit).
pub fn git_commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
}

/// Writes `content` to `dir/rel`, creating directories; returns the absolute path.
pub fn write_file(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    path
}
