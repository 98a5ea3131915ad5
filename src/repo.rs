//! Finds the repository a file belongs to and its identity (`owner/repo`) from
//! `git remote get-url origin`, cached per repository root and refreshed when the repository's
//! config file changes. Reads: `.git` entries, git config stamps; runs `git` once per root.

use crate::sync::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How long one `git remote get-url` may take before it is abandoned and the file treated as
/// having no origin. A wedged git must never wedge a search.
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// A repository found on disk: its work-tree root and the config file that holds its remotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryRoot {
    pub root: PathBuf,
    /// `.git/config`, or for a linked worktree the common directory's config, or for a submodule
    /// the config inside `.git/modules/NAME`.
    pub config: PathBuf,
}

/// Resolves `owner/repo` identities, remembering them per repository root.
#[derive(Debug, Default)]
pub struct RepositoryResolver {
    cache: Mutex<HashMap<PathBuf, CachedIdentity>>,
}

#[derive(Debug, Clone)]
struct CachedIdentity {
    stamp: Option<(SystemTime, u64)>,
    identity: Option<String>,
}

impl RepositoryResolver {
    pub fn new() -> Self {
        Self::default()
    }

    /// The identity of the repository holding `file`, or `None` when the file is outside any
    /// repository or its repository has no `origin`.
    pub fn identity_of(&self, file: &Path) -> Option<String> {
        let repo = find_repository(file)?;
        self.identity_of_root(&repo)
    }

    /// The identity of a repository already located. Spawns `git` only when the root is new or
    /// its config file changed since the last look (one `stat` otherwise).
    pub fn identity_of_root(&self, repo: &RepositoryRoot) -> Option<String> {
        let stamp = stamp(&repo.config);
        if let Some(hit) = self.cache.locked().get(&repo.root) {
            if hit.stamp == stamp {
                return hit.identity.clone();
            }
        }
        // The lock is not held while git runs: two concurrent misses for one root may both run
        // it, which is cheaper than making every other repository wait.
        let identity = origin_url(&repo.root).and_then(|url| normalize_remote(&url));
        tracing::debug!(root = %repo.root.display(), identity = ?identity, "repository identity");
        self.cache.locked().insert(
            repo.root.clone(),
            CachedIdentity {
                stamp,
                identity: identity.clone(),
            },
        );
        identity
    }
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Walks up from `file` to the nearest directory holding a `.git` entry that is a git
/// directory, as git itself tells one (it holds `HEAD`): an empty `.git` directory is passed
/// by, as git passes it (Codex 0.171 in `workspace-write` puts empty `.git`, `.codex`,
/// `.agents` and `.aws` directories into `/tmp` while it runs). A `.git` *file*
/// (linked worktree or submodule) is followed to the git directory it names.
pub fn find_repository(file: &Path) -> Option<RepositoryRoot> {
    for dir in file.ancestors().skip(1) {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let git_dir = if meta.is_dir() {
            dot_git
        } else if meta.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
            let target = Path::new(target);
            if target.is_absolute() {
                target.to_path_buf()
            } else {
                dir.join(target)
            }
        } else {
            continue;
        };
        if !git_dir.join("HEAD").is_file() {
            continue;
        }
        // Linked worktrees keep their remotes in the common directory named by `commondir`.
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(c) => {
                let c = Path::new(c.trim());
                if c.is_absolute() {
                    c.to_path_buf()
                } else {
                    git_dir.join(c)
                }
            }
            Err(_) => git_dir,
        };
        return Some(RepositoryRoot {
            root: dir.to_path_buf(),
            config: common.join("config"),
        });
    }
    None
}

/// Runs `git remote get-url origin` in `root`, bounded by [`GIT_TIMEOUT`]. The URL may hold
/// credentials, so it is returned to be normalised and never logged.
fn origin_url(root: &Path) -> Option<String> {
    let args = ["remote", "get-url", "origin"].map(std::ffi::OsStr::new);
    let run = match crate::git::run_git(root, &args, GIT_TIMEOUT, 64 << 10) {
        Ok(run) => run,
        Err(e) => {
            tracing::warn!(root = %root.display(), "git remote get-url: {e}");
            return None;
        }
    };
    if !run.success {
        return None;
    }
    let url = String::from_utf8(run.stdout).ok()?;
    let url = url.trim();
    (!url.is_empty()).then(|| url.to_string())
}

/// Reduces a remote URL to the path after its host, without `.git` and without credentials:
/// `git@github.com:acme/backend-order.git`, `https://user:token@host/acme/backend-order` and
/// `ssh://git@host:2222/acme/backend-order` all give `acme/backend-order`. A local path remote
/// has no host, so its last two components stand for `owner/repo`.
pub fn normalize_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let path = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            return last_two(rest);
        }
        // Everything up to the first `/` is `[user[:password]@]host[:port]`.
        rest.split_once('/').map(|(_, p)| p)?
    } else if url.starts_with('/') || url.starts_with('.') || url.starts_with('~') {
        return last_two(url);
    } else if let Some((host, path)) = url.split_once(':') {
        // scp-style `[user@]host:path`; a `/` before the colon would make it a local path.
        if host.contains('/') {
            return last_two(url);
        }
        path
    } else {
        return last_two(url);
    };
    clean(path)
}

fn clean(path: &str) -> Option<String> {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    (!path.is_empty()).then(|| path.to_string())
}

fn last_two(path: &str) -> Option<String> {
    let cleaned = clean(path)?;
    let parts: Vec<&str> = cleaned.split('/').filter(|s| !s.is_empty()).collect();
    let n = parts.len();
    Some(parts[n.saturating_sub(2)..].join("/")).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty `.git` directory (as a sandbox leaves behind) is no repository; the walk goes
    /// on to the real one above it, and a `.git` file is followed to the directory it names.
    #[test]
    fn only_a_git_directory_with_a_head_is_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path();
        std::fs::create_dir_all(outer.join(".git")).unwrap();
        std::fs::write(outer.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let inner = outer.join("tmp");
        std::fs::create_dir_all(inner.join(".git")).unwrap();
        let found = find_repository(&inner.join("a.kt")).unwrap();
        assert_eq!(found.root, outer, "the empty .git is passed by");
        std::fs::write(inner.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(find_repository(&inner.join("a.kt")).unwrap().root, inner);
        let linked = outer.join("linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: ../tmp/.git\n").unwrap();
        let found = find_repository(&linked.join("a.kt")).unwrap();
        assert_eq!(found.root, linked);
        assert_eq!(found.config, linked.join("../tmp/.git/config"));
    }

    #[test]
    fn normalizes_the_contract_examples() {
        for url in [
            "git@github.com:acme/backend-order.git",
            "https://github.com/acme/backend-order.git",
            "ssh://git@host:2222/acme/backend-order",
            "https://user:token@host/acme/backend-order",
            "https://github.com/acme/backend-order/",
            "git://host/acme/backend-order.git",
            "file:///srv/git/acme/backend-order.git",
            "/srv/git/acme/backend-order.git",
        ] {
            assert_eq!(
                normalize_remote(url).as_deref(),
                Some("acme/backend-order"),
                "{url}"
            );
        }
        assert_eq!(
            normalize_remote("https://gitlab.com/group/sub/proj.git").as_deref(),
            Some("group/sub/proj")
        );
        assert_eq!(normalize_remote("https://host/"), None);
    }

    #[test]
    fn never_keeps_credentials() {
        let id = normalize_remote("https://alice:s3cret@host:8443/acme/x.git").unwrap();
        assert!(!id.contains("s3cret") && !id.contains("alice"), "{id}");
    }
}
