//! Turns the paths a hook event names into absolute ones, lexically (no file system access).

/// Resolves `path` against the directory `base`.
///
/// An absolute `path` is returned as given. A relative one is joined to `base` and its `.` and
/// `..` components are folded away without looking at the filesystem: the file may already be
/// gone, and the sidecar skips paths that do not exist anyway. Returns `None` for an empty path,
/// or for a relative path when `base` is missing or itself relative, because then there is no
/// honest way to know which file was meant.
pub fn resolve(base: Option<&str>, path: &str) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    if path.starts_with('/') {
        return Some(path.to_owned());
    }
    let base = base.filter(|b| b.starts_with('/'))?;
    Some(normalize_join(base, path))
}

/// Resolves a directory that a shell command changes into (`cd DIR && …`, Codex's `workdir`).
///
/// Unlike [`resolve`] the result is always normalised, since it only ever serves as a base.
/// Directories that need shell expansion (`~`, `$VAR`, backticks) cannot be resolved without
/// running a shell, so they give `None` and relative paths below them are dropped.
pub fn resolve_dir(base: Option<&str>, dir: &str) -> Option<String> {
    if dir.is_empty() || dir.starts_with('~') || dir.contains(['$', '`']) {
        return None;
    }
    if dir.starts_with('/') {
        return Some(normalize_join(dir, ""));
    }
    let base = base.filter(|b| b.starts_with('/'))?;
    Some(normalize_join(base, dir))
}

/// Joins an absolute `base` and a relative `rel`, folding `.`, `..` and repeated slashes.
/// `..` at the root stays at the root, as it does in the kernel.
fn normalize_join(base: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for component in base.split('/').chain(rel.split('/')) {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    if parts.is_empty() {
        return "/".to_owned();
    }
    let mut out = String::with_capacity(base.len() + rel.len() + 1);
    for part in parts {
        out.push('/');
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_stay_as_given() {
        assert_eq!(
            resolve(Some("/home/dev"), "/etc/./x").as_deref(),
            Some("/etc/./x")
        );
        assert_eq!(resolve(None, "/etc/x").as_deref(), Some("/etc/x"));
    }

    #[test]
    fn relative_paths_join_and_fold_lexically() {
        assert_eq!(
            resolve(Some("/home/dev/proj"), "src/./a/../b.rs").as_deref(),
            Some("/home/dev/proj/src/b.rs")
        );
        assert_eq!(
            resolve(Some("/home/dev/proj/"), "../lib//util.py").as_deref(),
            Some("/home/dev/lib/util.py")
        );
        assert_eq!(resolve(Some("/"), "../../x").as_deref(), Some("/x"));
        assert_eq!(resolve(Some("/a"), "..").as_deref(), Some("/"));
    }

    #[test]
    fn relative_paths_without_an_absolute_base_are_dropped() {
        assert_eq!(resolve(None, "src/a.rs"), None);
        assert_eq!(resolve(Some("proj"), "src/a.rs"), None);
        assert_eq!(resolve(Some("/proj"), ""), None);
    }

    #[test]
    fn directories_needing_a_shell_are_not_guessed() {
        assert_eq!(resolve_dir(Some("/p"), "~/x"), None);
        assert_eq!(resolve_dir(Some("/p"), "$HOME/x"), None);
        assert_eq!(
            resolve_dir(Some("/p"), "sub/../other").as_deref(),
            Some("/p/other")
        );
        assert_eq!(
            resolve_dir(None, "/abs/./dir/").as_deref(),
            Some("/abs/dir")
        );
        assert_eq!(resolve_dir(None, "rel"), None);
    }
}
