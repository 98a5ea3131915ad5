//! Which repositories and paths a guideline is scoped to: repository globs and path globs,
//! each compiled on its own to validate it and together in sets to match a repository
//! identity or a file's path at once. Reads and writes nothing.

use std::path::Path;

use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Compiles a repository glob: `*` stays within a segment, `**` crosses, case-insensitive.
pub(crate) fn compile_repository_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
}

/// The longest path glob accepted.
pub(crate) const MAX_PATH_GLOB_LEN: usize = 1024;

/// A `scope.paths` entry compiled: the glob, and whether it excludes (`!`).
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    pub(crate) glob: Glob,
    pub(crate) excludes: bool,
}

/// Compiles a `scope.paths` entry, gitignore-style, relative to the repository root: `*` and
/// `?` stay within a path segment, `**` crosses them, `{a,b}` alternates, `\` escapes; a glob
/// with no `/` but a trailing one matches at any depth (`*.kt` is `**/*.kt`), a leading `/`
/// anchors it at the root, a trailing `/` matches only directories (so everything below
/// them). Case-sensitive, as git is on Linux. `!` in front makes it exclude.
pub(crate) fn compile_path_glob(entry: &str) -> Result<PathGlob, String> {
    if entry.len() > MAX_PATH_GLOB_LEN {
        return Err(format!(
            "path glob is {} bytes long; the limit is {MAX_PATH_GLOB_LEN}",
            entry.len()
        ));
    }
    let (excludes, pattern) = match entry.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, entry),
    };
    let bad = |why: &str| format!("invalid path glob `{entry}`: {why}");
    if pattern.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    if pattern.split('/').any(|part| part == "..") {
        return Err(bad("`..` cannot lead out of the repository"));
    }
    let directory = pattern.ends_with('/');
    let body = pattern.trim_end_matches('/');
    let anchored = body.starts_with('/') || body.contains('/');
    let body = body.trim_start_matches('/');
    if body.is_empty() {
        return Err(bad(
            "it names the repository root itself; leave `paths` out instead",
        ));
    }
    let mut full = String::with_capacity(body.len() + 6);
    if !anchored {
        full.push_str("**/");
    }
    full.push_str(body);
    if directory {
        full.push_str("/**");
    }
    let glob = GlobBuilder::new(&full)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| bad(&e.kind().to_string()))?;
    Ok(PathGlob { glob, excludes })
}

/// Every path-scoped guideline's globs, in sets, to decide per file which of them apply.
#[derive(Debug, Default)]
pub(crate) struct PathScopes {
    include: Vec<(GlobSet, Vec<Vec<u32>>)>,
    exclude: Vec<(GlobSet, Vec<Vec<u32>>)>,
    /// Each path-scoped guideline, and whether it has an including glob.
    scoped: Vec<(u32, bool)>,
}

impl PathScopes {
    /// The scopes of `guidelines` (each with its number and its `scope.paths`).
    pub(crate) fn build<'a>(guidelines: impl Iterator<Item = (u32, &'a [String])>) -> PathScopes {
        let mut include: Vec<(Glob, Vec<u32>)> = Vec::new();
        let mut exclude: Vec<(Glob, Vec<u32>)> = Vec::new();
        let mut seen: std::collections::HashMap<&'a str, (bool, usize)> = Default::default();
        let mut scoped = Vec::new();
        for (g, entries) in guidelines {
            let mut includes = false;
            for entry in entries {
                let Ok(compiled) = compile_path_glob(entry) else {
                    continue;
                };
                includes |= !compiled.excludes;
                let list = if compiled.excludes {
                    &mut exclude
                } else {
                    &mut include
                };
                match seen.get(entry.as_str()) {
                    Some(&(_, k)) => list[k].1.push(g),
                    None => {
                        seen.insert(entry, (compiled.excludes, list.len()));
                        list.push((compiled.glob, vec![g]));
                    }
                }
            }
            scoped.push((g, includes));
        }
        PathScopes {
            include: build_glob_sets(include),
            exclude: build_glob_sets(exclude),
            scoped,
        }
    }

    /// Whether no guideline is path-scoped.
    pub(crate) fn is_empty(&self) -> bool {
        self.scoped.is_empty()
    }

    /// Clears `applicable[g]` for every path-scoped guideline that leaves out the file at
    /// `relative` (its path from the repository root; `None`, a file outside any repository,
    /// is left out by all of them). A glob holds for a file when it matches the file's path
    /// or the path of a directory above it, so `src/legacy` scopes everything below it.
    pub(crate) fn restrict(&self, applicable: &mut [bool], relative: Option<&Path>) {
        if !self.scoped.iter().any(|(g, _)| applicable[*g as usize]) {
            return;
        }
        let Some(relative) = relative else {
            for (g, _) in &self.scoped {
                applicable[*g as usize] = false;
            }
            return;
        };
        let candidates: Vec<Candidate> = relative
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Candidate::new)
            .collect();
        let hits = |sets: &[(GlobSet, Vec<Vec<u32>>)]| {
            let mut hit = std::collections::HashSet::new();
            for (set, owners) in sets {
                for c in &candidates {
                    for i in set.matches_candidate(c) {
                        hit.extend(owners[i].iter().copied());
                    }
                }
            }
            hit
        };
        let (included, excluded) = (hits(&self.include), hits(&self.exclude));
        for &(g, includes) in &self.scoped {
            let keep = (!includes || included.contains(&g)) && !excluded.contains(&g);
            applicable[g as usize] &= keep;
        }
    }
}

/// The most distinct globs in one `GlobSet`: globset compiles a set into one regex set, which
/// has a size limit.
pub(crate) const GLOBS_PER_SET: usize = 256;

/// The globs in sets of at most [`GLOBS_PER_SET`]. A set that still fails to build (it cannot
/// with globs that each compiled) is split down to single globs rather than dropped, so a
/// guideline's repository scope is never silently lost.
pub(crate) fn build_glob_sets(globs: Vec<(Glob, Vec<u32>)>) -> Vec<(GlobSet, Vec<Vec<u32>>)> {
    let mut out = Vec::new();
    let mut pending: Vec<Vec<(Glob, Vec<u32>)>> = Vec::new();
    let mut globs = globs.into_iter().peekable();
    while globs.peek().is_some() {
        pending.push(globs.by_ref().take(GLOBS_PER_SET).collect());
    }
    while let Some(chunk) = pending.pop() {
        let mut builder = GlobSetBuilder::new();
        for (glob, _) in &chunk {
            builder.add(glob.clone());
        }
        match builder.build() {
            Ok(set) => out.push((set, chunk.into_iter().map(|(_, o)| o).collect())),
            Err(e) if chunk.len() > 1 => {
                tracing::warn!("repository globs split further: {e}");
                let mut chunk = chunk;
                let half = chunk.split_off(chunk.len() / 2);
                pending.push(chunk);
                pending.push(half);
            }
            Err(e) => tracing::warn!("repository glob {} left out: {e}", chunk[0].0.glob()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(entry: &str, path: &str) -> bool {
        compile_path_glob(entry)
            .unwrap()
            .glob
            .compile_matcher()
            .is_match(path)
    }

    #[test]
    fn path_globs_read_as_gitignore_does() {
        assert!(matches("*.kt", "A.kt") && matches("*.kt", "src/main/A.kt"));
        assert!(!matches("*.kt", "A.kts"));
        assert!(matches("src/*.kt", "src/A.kt") && !matches("src/*.kt", "src/x/A.kt"));
        assert!(
            !matches("src/*.kt", "lib/src/A.kt"),
            "a glob with a / is anchored"
        );
        assert!(matches("src/**/*.kt", "src/x/y/A.kt") && matches("src/**/*.kt", "src/A.kt"));
        assert!(matches("/build.gradle.kts", "build.gradle.kts"));
        assert!(!matches("/build.gradle.kts", "app/build.gradle.kts"));
        assert!(matches("generated/", "app/generated/X.kt"));
        assert!(matches("**/test/**", "app/src/test/A.kt"));
        assert!(matches("*.{kt,kts}", "a/b.kts") && matches("?.kt", "x/A.kt"));
        assert!(!matches("*.kt", "A.KT"), "case-sensitive");
        assert!(compile_path_glob("!**/test/**").unwrap().excludes);
        assert!(!compile_path_glob("src/**").unwrap().excludes);
    }

    #[test]
    fn path_scopes_include_exclude_and_leave_out_files_outside_repositories() {
        let scopes: Vec<Vec<String>> = vec![
            vec!["src/**/*.kt".into(), "!**/test/**".into()],
            vec!["!*.md".into()],
            vec!["src/legacy".into()],
        ];
        let p = PathScopes::build(
            scopes
                .iter()
                .enumerate()
                .map(|(g, s)| (g as u32 + 1, &s[..])),
        );
        let applies = |path: Option<&str>| {
            let mut a = vec![true; 4];
            p.restrict(&mut a, path.map(Path::new));
            a
        };
        assert_eq!(applies(Some("src/main/A.kt")), [true, true, true, false]);
        assert_eq!(applies(Some("src/test/A.kt")), [true, false, true, false]);
        assert_eq!(applies(Some("README.md")), [true, false, false, false]);
        assert_eq!(
            applies(Some("src/legacy/x/Old.kt")),
            [true, true, true, true]
        );
        assert_eq!(
            applies(None),
            [true, false, false, false],
            "outside any repository"
        );
        let mut none = vec![false; 4];
        p.restrict(&mut none, Some(Path::new("src/A.kt")));
        assert_eq!(none, [false; 4], "never makes a guideline apply");
    }

    #[test]
    fn bad_path_globs_say_why() {
        for (entry, why) in [
            ("src/{a,b", "unclosed alternate"),
            ("", "empty"),
            ("!", "empty"),
            ("/", "repository root"),
            ("../x/*.kt", "`..`"),
            ("[z-a].kt", "invalid range"),
        ] {
            let e = compile_path_glob(entry).unwrap_err();
            assert!(
                e.contains(why) && e.contains(&format!("`{entry}`")),
                "{entry}: {e}"
            );
        }
        assert!(compile_path_glob(&"a".repeat(MAX_PATH_GLOB_LEN + 1))
            .unwrap_err()
            .contains("limit"));
    }
}
