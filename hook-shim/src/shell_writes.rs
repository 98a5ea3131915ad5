//! The files a shell command may write, read from its text: what the sidecar keeps a pre-image
//! of before the command runs and compares after it. Reads: the command text. Writes: nothing.
//!
//! Two kinds, both absolute paths resolved against the command's directory (and any `cd DIR`
//! before them in the same command):
//!
//! - **targets**: files the command writes by name: redirections (`> f`, `>> f`, `>| f`,
//!   `&> f`, `2> f`, `<> f`), `tee [-a] f…`, the destination of `cp`/`mv`/`install`/`ln`,
//!   `dd of=f`, `touch f`, and the files of an in-place editor (`sed -i`, `perl -pi`,
//!   `ruby -i`). A target that did not exist before the command and does after is a new file.
//! - **mentioned**: every other word that could name a file (`python3 fix.py src/A.kt`,
//!   `gofmt -w main.go`, `ktlint -F A.kt`): the sidecar keeps their pre-images too, and a
//!   mentioned file whose content changed is a written file like a target.
//!
//! Over-naming is cheap and safe: the sidecar drops what does not exist and what did not
//! change. A file a command writes without naming it (a generator, a formatter run on a
//! directory, a glob) is the sidecar's watcher's to find. Read-only commands (`ls`, `cat f`,
//! `grep`, `git status`, … with no redirection into a file) need neither a pre-image nor a
//! comparison: [`ShellWrites::of`] says so and the hook asks nothing for them.

use crate::event::Command;
use crate::guard;
use edits::paths::{resolve, resolve_dir};
use edits::shell::{lex, Token};

/// The most paths of either kind sent for one command: a command naming more is unusual, and
/// the sidecar's watcher still sees every file it changes.
pub const MAX_PATHS: usize = 64;

/// What a shell command may write, as read from its text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellWrites {
    /// Files it writes by name, in order of appearance, without duplicates.
    pub targets: Vec<String>,
    /// Other words that may name files, in order, without duplicates or targets.
    pub mentioned: Vec<String>,
    /// Whether every simple command in it only reads (and nothing is redirected into a file).
    pub read_only: bool,
}

impl ShellWrites {
    /// The writes of `command`, run in the absolute directory `dir` (relative paths are left
    /// out when there is none).
    pub fn of(command: &Command, dir: Option<&str>) -> ShellWrites {
        let mut found = Found {
            writes: ShellWrites {
                read_only: true,
                ..ShellWrites::default()
            },
        };
        match command {
            Command::Script(script) => found.script(script, dir.map(str::to_owned), 0),
            Command::Argv(argv) => {
                let words: Vec<String> = argv.clone();
                found.simple(&words, &mut dir.map(str::to_owned), 0);
            }
        }
        found.writes
    }
}

struct Found {
    writes: ShellWrites,
}

/// Programs that change no file they are given (beyond what a redirection says), read-only
/// `git` subcommands aside.
const READ_ONLY: &[&str] = &[
    "cd", "pwd", "true", "false", "which", "type", "whoami", "id", "date", "env", "printenv",
    "uname", "hostname", "sleep", "exit", "export", "set", "unset", "source", ".", "rg", "fd",
    "tree", "ps", "top", "df", "free",
];

/// `git` subcommands that write no file of the work tree.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "grep",
    "ls-files",
    "rev-parse",
    "branch",
    "remote",
    "config",
    "describe",
    "shortlog",
    "cat-file",
    "ls-tree",
    "reflog",
    "fetch",
];

impl Found {
    fn script(&mut self, script: &str, mut dir: Option<String>, depth: usize) {
        if depth > 4 {
            return;
        }
        let (commands, _) = guard::split_heredocs(script);
        let mut words: Vec<String> = Vec::new();
        let mut redirect: Option<String> = None;
        for token in lex(&commands) {
            match token {
                Token::Word(word) => match redirect.take() {
                    // `2>&1`, `>&2`: a duplication, no file.
                    Some(op) if op.ends_with('&') => {}
                    Some(op) => self.redirection(&op, &word, dir.as_deref()),
                    None => words.push(word),
                },
                Token::Redirect(op) => redirect = Some(op),
                Token::Control => {
                    redirect = None;
                    self.simple(&words, &mut dir, depth);
                    words.clear();
                }
            }
        }
        self.simple(&words, &mut dir, depth);
    }

    fn redirection(&mut self, op: &str, target: &str, dir: Option<&str>) {
        let op = op.trim_start_matches(|c: char| c.is_ascii_digit());
        if op.starts_with('<') && op != "<>" {
            return;
        }
        if target.starts_with("/dev/") || target.starts_with('&') {
            return;
        }
        self.writes.read_only = false;
        self.target(target, dir);
    }

    /// One simple command's words (redirections already taken out). `dir` follows `cd`.
    fn simple(&mut self, words: &[String], dir: &mut Option<String>, depth: usize) {
        // `for f in a b` (or `select`, `case x in`) names a loop's words, not a program.
        if words
            .first()
            .is_some_and(|w| matches!(w.as_str(), "for" | "select" | "case"))
        {
            return;
        }
        let start = words
            .iter()
            .position(|w| !guard::KEYWORDS.contains(&w.as_str()))
            .unwrap_or(words.len());
        let words = &words[start..];
        let Some((program, args)) = guard::strip_wrappers(words) else {
            return;
        };
        let name = guard::basename(program);
        if name == "cd" {
            if let Some(to) = args.iter().find(|a| !a.starts_with('-')) {
                *dir = resolve_dir(dir.as_deref(), to);
            }
            return;
        }
        if guard::SHELLS.contains(&name) {
            if let Some(script) = guard::dash_c(args) {
                self.script(script, dir.clone(), depth + 1);
                return;
            }
        }
        if name == "eval" {
            self.script(&args.join(" "), dir.clone(), depth + 1);
            return;
        }
        let dir = dir.as_deref();
        let read_only = READ_ONLY.contains(&name)
            || (name == "git"
                && args
                    .iter()
                    .find(|a| !a.starts_with('-'))
                    .is_some_and(|sub| GIT_READ_ONLY.contains(&sub.as_str())))
            || guard::is_reader(name, args);
        if !read_only {
            self.writes.read_only = false;
        }
        let files: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
        match name {
            "tee" => files.iter().for_each(|f| self.target(f, dir)),
            "cp" | "mv" | "install" | "ln" => {
                if let Some(last) = files.last() {
                    self.target(last, dir);
                    // Into a directory: the copies are named after their sources.
                    for source in &files[..files.len() - 1] {
                        let name = source.trim_end_matches('/').rsplit('/').next();
                        if let Some(name) = name.filter(|n| !n.is_empty()) {
                            self.target(&format!("{}/{name}", last.trim_end_matches('/')), dir);
                        }
                    }
                }
            }
            "touch" | "truncate" => files.iter().for_each(|f| self.target(f, dir)),
            "dd" => {
                for arg in args {
                    if let Some(file) = arg.strip_prefix("of=") {
                        self.target(file, dir);
                    }
                }
            }
            "sed" | "perl" | "ruby" if in_place(name, args) => {
                for file in script_files(name, args) {
                    self.target(file, dir);
                }
            }
            _ => {}
        }
        if read_only {
            return;
        }
        for arg in args {
            // `--out=gen/A.kt`, `of=f`: the value may be a file.
            let word = match arg.split_once('=') {
                Some((key, value)) if key.starts_with('-') || !key.contains('/') => value,
                _ => arg.as_str(),
            };
            if !word.starts_with('-') {
                self.mentioned(word, dir);
            }
        }
    }

    fn target(&mut self, word: &str, dir: Option<&str>) {
        if let Some(path) = path_of(word, dir) {
            self.writes.mentioned.retain(|p| *p != path);
            if !self.writes.targets.contains(&path) && self.writes.targets.len() < MAX_PATHS {
                self.writes.targets.push(path);
            }
        }
    }

    fn mentioned(&mut self, word: &str, dir: Option<&str>) {
        if let Some(path) = path_of(word, dir) {
            if !self.writes.targets.contains(&path)
                && !self.writes.mentioned.contains(&path)
                && self.writes.mentioned.len() < MAX_PATHS
            {
                self.writes.mentioned.push(path);
            }
        }
    }
}

/// The absolute path a word names, if it can name one without the shell expanding it.
fn path_of(word: &str, dir: Option<&str>) -> Option<String> {
    let plain = !word.is_empty()
        && word.len() < 4096
        && !word.contains(['$', '`', '*', '?', '[', '{', '\n', '\0', '~'])
        && !word.ends_with('/')
        && word != "."
        && word != "..";
    if !plain {
        return None;
    }
    resolve(dir, word).and_then(|p| resolve_dir(None, &p))
}

/// Whether `sed`, `perl` or `ruby` edits its files in place: `-i`, `-i.bak`, `-ni`, `-pi`,
/// `--in-place[=SUFFIX]`.
fn in_place(program: &str, args: &[String]) -> bool {
    args.iter().any(|a| {
        if a.starts_with("--") {
            return a.starts_with("--in-place");
        }
        let Some(cluster) = a.strip_prefix('-') else {
            return false;
        };
        // In a cluster, `-e` (and perl's `-e`, `-E`) ends the options: `-pie` is `-p -i e`.
        for c in cluster.chars() {
            match c {
                'i' => return true,
                'e' | 'f' | 'l' if program == "sed" => return false,
                'e' | 'E' if program != "sed" => return false,
                _ => {}
            }
        }
        false
    })
}

/// The files an in-place `sed`, `perl` or `ruby` edits: its operands after the script (the
/// first operand is the script unless `-e`/`-f`/`--expression`/`--file` gave it).
fn script_files<'a>(program: &str, args: &'a [String]) -> Vec<&'a str> {
    let mut operands = Vec::new();
    let mut script_given = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            operands.extend(rest.by_ref().map(String::as_str));
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if long.starts_with("expression") || long.starts_with("file") {
                script_given = true;
                if !long.contains('=') {
                    rest.next();
                }
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            operands.push(arg.as_str());
            continue;
        };
        // Options that take a value: sed `-e SCRIPT`, `-f FILE`, `-l N`; perl and ruby `-e`,
        // `-E`, `-I DIR`, `-M MOD`; the value is the cluster's rest or the next word.
        let valued: &[char] = if program == "sed" {
            &['e', 'f', 'l']
        } else {
            &['e', 'E', 'I', 'M', 'm', 'r']
        };
        for (at, c) in cluster.char_indices() {
            // `-i.bak`: the rest of the cluster is the backup suffix.
            if c == 'i' {
                break;
            }
            if valued.contains(&c) {
                if matches!(c, 'e' | 'f' | 'E') {
                    script_given = true;
                }
                if at + c.len_utf8() == cluster.len() {
                    rest.next();
                }
                break;
            }
        }
    }
    if script_given {
        operands
    } else {
        operands.into_iter().skip(1).collect()
    }
}

/// A short, stable name for a command text (FNV-1a, 64 bits, in hex): what ties a shell
/// command's `PreToolUse` to its `PostToolUse` in the sidecar, as both carry the same text.
pub fn call_id(command: &Command) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in command.text().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("cmd-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(script: &str) -> ShellWrites {
        ShellWrites::of(&Command::Script(script.into()), Some("/w"))
    }

    fn targets(script: &str) -> Vec<String> {
        of(script).targets
    }

    #[test]
    fn redirections_name_their_files() {
        assert_eq!(targets("echo hi > out.txt"), ["/w/out.txt"]);
        assert_eq!(targets("echo hi >>log/a.log"), ["/w/log/a.log"]);
        assert_eq!(targets("make 2> err.txt 1>&2"), ["/w/err.txt"]);
        let dup = of("./build.sh 2>&1 >&2");
        assert!(
            dup.targets.is_empty() && dup.mentioned.is_empty(),
            "{dup:?}"
        );
        assert_eq!(targets("cmd &> all.txt"), ["/w/all.txt"]);
        assert_eq!(targets("cmd >| forced.txt"), ["/w/forced.txt"]);
        assert_eq!(targets("echo x>'a b.txt'"), ["/w/a b.txt"]);
        assert_eq!(targets("cmd > /dev/null 2>&1"), Vec::<String>::new());
        assert_eq!(targets("sort < in.txt"), Vec::<String>::new());
        assert_eq!(
            targets("cat > src/A.kt <<'EOF'\nval x = 1 > 0\necho > nope\nEOF\n"),
            ["/w/src/A.kt"],
            "a heredoc's body is data"
        );
        assert_eq!(targets("cat <<EOF > gen.kt\nx\nEOF"), ["/w/gen.kt"]);
        assert_eq!(targets("grep x <<< 'a > b'"), Vec::<String>::new());
    }

    #[test]
    fn in_place_editors_name_their_files() {
        assert_eq!(targets("sed -i 's/a/b/' src/A.kt"), ["/w/src/A.kt"]);
        assert_eq!(
            targets("sed -i.bak -e 's/a/b/' A.kt B.kt"),
            ["/w/A.kt", "/w/B.kt"]
        );
        assert_eq!(targets("sed --in-place=.orig 's/a/b/' A.kt"), ["/w/A.kt"]);
        assert_eq!(targets("sed -ni '/x/p' A.kt"), ["/w/A.kt"]);
        assert_eq!(targets("sed -E -i -e s/a/b/ -e s/c/d/ A.kt"), ["/w/A.kt"]);
        assert_eq!(targets("perl -pi -e 's/a/b/g' lib/X.pm"), ["/w/lib/X.pm"]);
        assert_eq!(targets("perl -i.bak -pe 's/a/b/' X.pm"), ["/w/X.pm"]);
        assert_eq!(
            targets("perl -p -i -e 's/a/b/' X.pm Y.pm"),
            ["/w/X.pm", "/w/Y.pm"]
        );
        // Without -i, sed writes nothing (its operands are only mentioned, and it reads).
        let plain = of("sed -n 1,5p A.kt");
        assert!(plain.targets.is_empty() && plain.read_only, "{plain:?}");
        let to_stdout = of("sed 's/a/b/' A.kt > B.kt");
        assert_eq!(to_stdout.targets, ["/w/B.kt"]);
    }

    #[test]
    fn tee_cp_mv_dd_touch_name_their_destinations() {
        assert_eq!(
            targets("echo x | tee -a a.txt b.txt"),
            ["/w/a.txt", "/w/b.txt"]
        );
        // The destination may be a directory: both readings are named, the sidecar keeps what
        // exists.
        assert_eq!(
            targets("cp tmpl/A.kt src/A.kt"),
            ["/w/src/A.kt", "/w/src/A.kt/A.kt"]
        );
        assert_eq!(
            targets("mv a.kt b.kt src"),
            ["/w/src", "/w/src/a.kt", "/w/src/b.kt"]
        );
        assert_eq!(targets("dd if=/dev/zero of=blob bs=1 count=1"), ["/w/blob"]);
        assert_eq!(targets("touch new.kt"), ["/w/new.kt"]);
    }

    #[test]
    fn cd_sh_c_and_argv_are_followed() {
        assert_eq!(
            targets("cd src && sed -i s/a/b/ A.kt; cd /tmp; echo > t"),
            ["/w/src/A.kt", "/tmp/t"]
        );
        assert_eq!(targets("bash -lc 'echo x > gen/out.kt'"), ["/w/gen/out.kt"]);
        let argv = ShellWrites::of(
            &Command::Argv(vec![
                "bash".into(),
                "-lc".into(),
                "sed -i s/a/b/ A.kt".into(),
            ]),
            Some("/w"),
        );
        assert_eq!(argv.targets, ["/w/A.kt"]);
        let direct = ShellWrites::of(
            &Command::Argv(vec![
                "sed".into(),
                "-i".into(),
                "s/a/b/".into(),
                "A.kt".into(),
            ]),
            Some("/w"),
        );
        assert_eq!(direct.targets, ["/w/A.kt"]);
        // Without a directory, only absolute paths can be named.
        let nowhere = ShellWrites::of(&Command::Script("echo > a; echo > /abs/b".into()), None);
        assert_eq!(nowhere.targets, ["/abs/b"]);
    }

    #[test]
    fn other_words_are_mentioned_and_readers_are_read_only() {
        let gen = of("python3 tools/gen.py --out=gen/A.kt src/B.kt -v");
        assert!(gen.targets.is_empty());
        assert_eq!(
            gen.mentioned,
            ["/w/tools/gen.py", "/w/gen/A.kt", "/w/src/B.kt"]
        );
        assert!(!gen.read_only);
        assert!(
            !of("./gradlew spotlessApply").read_only,
            "may write anything"
        );
        for reader in [
            "ls -la src",
            "cat src/A.kt | grep -n foo",
            "git status && git diff HEAD",
            "rg GlobalScope src",
            "find . -name '*.kt'",
            "head -5 a; wc -l b",
            "if grep -q x a; then cat a; fi",
            "for f in a b; do wc -l $f; done",
            "while true; do ls; done",
        ] {
            let writes = of(reader);
            assert!(writes.read_only, "{reader}: {writes:?}");
            assert!(
                writes.targets.is_empty() && writes.mentioned.is_empty(),
                "{reader}"
            );
        }
        assert!(!of("cat a > b").read_only);
        assert!(!of("find . -name x -delete").read_only);
        assert_eq!(
            of("if true; then sed -i s/a/b/ A.kt; fi").targets,
            ["/w/A.kt"]
        );
        // Globs, variables and substitutions name nothing the shim can resolve.
        assert!(of("sed -i s/a/b/ src/*.kt $F \"$(ls)\"").targets.is_empty());
    }

    #[test]
    fn call_ids_tie_the_same_text() {
        let a = call_id(&Command::Script("sed -i s/a/b/ A.kt".into()));
        assert_eq!(a, call_id(&Command::Script("sed -i s/a/b/ A.kt".into())));
        assert_ne!(a, call_id(&Command::Script("sed -i s/a/c/ A.kt".into())));
        assert!(a.starts_with("cmd-") && a.len() == 20, "{a}");
    }
}
