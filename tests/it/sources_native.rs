//! The agents' rule formats as guidelines, and `guidebook export` / `import`, through the binary.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use tempfile::TempDir;

use crate::harness::*;

/// `guidebook` with a temp home and `root` as the guidebook root.
fn guidebook_in(root: &Path, args: &[&str]) -> Output {
    let home = root.parent().unwrap().join("home");
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", &home)
        .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .args(args);
    run_bounded(cmd, b"", "guidebook")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn all_text(out: &Output) -> String {
    format!("{}{}", stdout(out), String::from_utf8_lossy(&out.stderr))
}

fn read(path: impl AsRef<Path>) -> String {
    let path = path.as_ref();
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A guidebook of three: a Kotlin rule with a path scope, an exclusion and a regex; a
/// directory's rule with no `match`; a `block` rule with a repository scope and `in: changes`.
fn small_guidebook() -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("gb-native-")
        .tempdir()
        .unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(
        &root,
        "kt-no-println",
        "id: kt-no-println\nscope:\n  languages: [kotlin]\n  paths: ['/src/', '!**/generated/**']\n\
         match:\n  any:\n    - regex:\n        pattern: 'println\\('\n    - regex:\n        pattern: 'System\\.out'\n\
         content: Use the logger, not println.\n",
    );
    write_guideline(
        &root,
        "billing-cents",
        "id: billing-cents\nscope:\n  paths: ['/services/billing/']\ncontent: |\n  Amounts are in cents.\n  Never use floats.\n",
    );
    write_guideline(
        &root,
        "no-aws-keys",
        "id: no-aws-keys\nseverity: block\nscope:\n  repositories: ['acme/*']\n\
         match:\n  in: changes\n  regex:\n    pattern: 'AKIA[0-9A-Z]{16}'\ncontent: No AWS keys in code.\n",
    );
    let check = guidebook_in(&root, &["check"]);
    assert!(check.status.success(), "{}", all_text(&check));
    (dir, root)
}

fn export(root: &Path, format: &str, out: &Path) -> Output {
    guidebook_in(
        root,
        &["export", "--format", format, "--out", out.to_str().unwrap()],
    )
}

#[test]
fn export_writes_each_format_and_reports_what_it_cannot_express() {
    let (dir, root) = small_guidebook();
    let out = dir.path().join("out");

    let cursor = export(&root, "cursor", &out.join("cursor"));
    assert!(cursor.status.success(), "{}", all_text(&cursor));
    let kt = read(out.join("cursor/.cursor/rules/kt-no-println.mdc"));
    assert!(
        kt.starts_with("---\ndescription: \"Use the logger, not println.\"\n"),
        "{kt}"
    );
    assert!(kt.contains("globs: src/**/*.{kt,kts}\nalwaysApply: false\n---\n<!-- guidebook export: kt-no-println -->\n\nUse the logger, not println.\n"), "{kt}");
    let billing = read(out.join("cursor/.cursor/rules/billing-cents.mdc"));
    assert!(
        billing.contains("globs: services/billing/**\n"),
        "{billing}"
    );
    let keys = read(out.join("cursor/.cursor/rules/no-aws-keys.mdc"));
    assert!(keys.contains("alwaysApply: true\n"), "{keys}");
    let text = stdout(&cursor);
    for line in [
        "kt-no-println: not expressed in cursor: exclusions `!**/generated/**` dropped",
        "kt-no-println: not expressed in cursor: match condition dropped (`println\\(`, `System\\.out`)",
        "no-aws-keys: not expressed in cursor: scope.repositories `acme/*` dropped",
        "no-aws-keys: not expressed in cursor: severity: block written as advice",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(!text.contains("billing-cents: not expressed"), "{text}");

    let claude = export(&root, "claude", &out.join("claude"));
    assert!(claude.status.success(), "{}", all_text(&claude));
    let kt = read(out.join("claude/.claude/rules/kt-no-println.md"));
    assert!(
        kt.starts_with("---\npaths:\n  - \"src/**/*.{kt,kts}\"\n---\n"),
        "{kt}"
    );
    let keys = read(out.join("claude/.claude/rules/no-aws-keys.md"));
    assert!(
        keys.starts_with("<!-- guidebook export: no-aws-keys -->\n\nNo AWS keys"),
        "{keys}"
    );
    assert!(
        stdout(&claude).contains("kt-no-println: not expressed in claude: match condition dropped")
    );

    let copilot = export(&root, "copilot", &out.join("copilot"));
    assert!(copilot.status.success(), "{}", all_text(&copilot));
    let kt = read(out.join("copilot/.github/instructions/kt-no-println.instructions.md"));
    assert!(
        kt.starts_with("---\napplyTo: \"src/**/*.{kt,kts}\"\n---\n"),
        "{kt}"
    );
    let keys = read(out.join("copilot/.github/instructions/no-aws-keys.instructions.md"));
    assert!(keys.starts_with("---\napplyTo: \"**\"\n---\n"), "{keys}");
    assert!(stdout(&copilot)
        .contains("not expressed in copilot: exclusions `!**/generated/**` dropped"));

    let cont = export(&root, "continue", &out.join("continue"));
    assert!(cont.status.success(), "{}", all_text(&cont));
    let kt = read(out.join("continue/.continue/rules/kt-no-println.md"));
    assert!(
        kt.starts_with("---\nname: \"kt-no-println\"\nglobs:\n  - \"src/**/*.{kt,kts}\"\n  - \"!**/generated/**\"\nregex:\n  - \"println\\\\(\"\n  - \"System\\\\.out\"\n---\n"),
        "{kt}"
    );
    let text = stdout(&cont);
    assert!(
        !text.contains("kt-no-println: not expressed"),
        "Continue keeps both: {text}"
    );
    assert!(text.contains("no-aws-keys: not expressed in continue: match condition dropped (`AKIA[0-9A-Z]{16}`): Continue's regex is any-of over the file and cannot say `in: changes`"), "{text}");

    let agents = export(&root, "agents-md", &out.join("agents"));
    assert!(agents.status.success(), "{}", all_text(&agents));
    let md = read(out.join("agents/AGENTS.md"));
    assert!(
        md.starts_with("<!-- guidebook export: agents-md -->\n# Guidelines\n"),
        "{md}"
    );
    assert!(md.contains("## kt-no-println\n\nApplies to files matching `/src/` except those matching `**/generated/**` written in kotlin.\nWhen the file matches `println\\(`, `System\\.out` (any of them).\n"), "{md}");
    assert!(md.contains("## billing-cents\n\nApplies to files matching `/services/billing/`.\n\n<!-- guidebook export: billing-cents -->\n\nAmounts are in cents.\nNever use floats.\n"), "{md}");
    assert!(stdout(&agents)
        .contains("kt-no-println: not expressed in agents-md: scope written as text"));
    assert_eq!(
        std::fs::read_dir(out.join("agents")).unwrap().count(),
        1,
        "one AGENTS.md, nothing else"
    );
}

#[test]
fn export_json_names_the_files_and_the_reports() {
    let (dir, root) = small_guidebook();
    let out = dir.path().join("out");
    let run = guidebook_in(
        &root,
        &[
            "export",
            "--format",
            "copilot",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(run.status.success(), "{}", all_text(&run));
    let json: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(json["format"], "copilot");
    let written: Vec<&str> = json["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(written.len(), 3, "{json}");
    assert!(written.contains(&".github/instructions/billing-cents.instructions.md"));
    let reports = json["reports"].as_array().unwrap();
    assert!(reports
        .iter()
        .any(|r| r["id"] == "no-aws-keys" && r["what"].as_str().unwrap().contains("block")));
}

#[test]
fn export_never_overwrites_a_file_it_did_not_write_and_rewrites_its_own() {
    let (dir, root) = small_guidebook();
    let out = dir.path().join("repo");
    let theirs = out.join(".cursor/rules/kt-no-println.mdc");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(
        &theirs,
        "---\nalwaysApply: true\n---\nThe team's own rule.\n",
    )
    .unwrap();
    let refused = export(&root, "cursor", &out);
    assert_eq!(refused.status.code(), Some(1), "{}", all_text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains(&theirs.display().to_string())
            && err.contains("not written by guidebook export"),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(
        read(&theirs),
        "---\nalwaysApply: true\n---\nThe team's own rule.\n"
    );
    assert!(
        !out.join(".cursor/rules/billing-cents.mdc").exists(),
        "checked all first"
    );

    // A symlink where a file would go is refused too, and what it points at is left alone.
    std::fs::remove_file(&theirs).unwrap();
    let elsewhere = dir.path().join("elsewhere.txt");
    std::fs::write(&elsewhere, "keep").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &theirs).unwrap();
    let refused = export(&root, "cursor", &out);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("symbolic link"));
    assert_eq!(read(&elsewhere), "keep");
    std::fs::remove_file(&theirs).unwrap();

    // Our own files are ours to rewrite.
    let first = export(&root, "cursor", &out);
    assert!(first.status.success(), "{}", all_text(&first));
    write_guideline(
        &root,
        "billing-cents",
        "id: billing-cents\nscope:\n  paths: ['/services/billing/']\ncontent: Amounts are in cents, always.\n",
    );
    let again = export(&root, "cursor", &out);
    assert!(again.status.success(), "{}", all_text(&again));
    assert!(
        read(out.join(".cursor/rules/billing-cents.mdc")).contains("Amounts are in cents, always.")
    );
}

#[test]
fn export_refuses_a_guidebook_that_does_not_load() {
    let (dir, root) = small_guidebook();
    write_guideline(&root, "broken", "id: broken\ncontent: [\n");
    let out = dir.path().join("out");
    let run = export(&root, "claude", &out);
    assert_eq!(run.status.code(), Some(1), "{}", all_text(&run));
    assert!(String::from_utf8_lossy(&run.stderr).contains("nothing was written"));
    assert!(!out.exists());
}

/// The guideline written for `id` under `out`, parsed.
fn imported(out: &Path, id: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&read(out.join(id).join("guideline.yaml"))).unwrap()
}

#[test]
fn continue_and_cursor_round_trip_through_import() {
    let (dir, root) = small_guidebook();
    let repo = dir.path().join("repo");
    for format in ["continue", "cursor"] {
        let run = export(&root, format, &repo);
        assert!(run.status.success(), "{}", all_text(&run));
    }
    let out = dir.path().join("imported");
    let run = guidebook_in(
        &root,
        &[
            "import",
            repo.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(run.status.success(), "{}", all_text(&run));
    assert!(
        stdout(&run)
            .contains("imported .continue/rules/kt-no-println.md as continue-rules-kt-no-println"),
        "{}",
        stdout(&run)
    );

    let kt = imported(&out, "continue-rules-kt-no-println");
    assert_eq!(
        kt["scope"]["paths"],
        serde_yaml::to_value(["src/**/*.{kt,kts}", "!**/generated/**"]).unwrap()
    );
    assert_eq!(kt["match"]["any"][0]["regex"]["pattern"], "println\\(");
    assert_eq!(kt["match"]["any"][1]["regex"]["pattern"], "System\\.out");
    assert_eq!(
        kt["content"], "Use the logger, not println.",
        "the export marker is not content"
    );
    let billing = imported(&out, "continue-rules-billing-cents");
    assert_eq!(
        billing["content"],
        "Amounts are in cents.\nNever use floats."
    );
    assert!(
        billing.get("match").is_none(),
        "no regex, no match: {billing:?}"
    );

    // Cursor keeps the scope, not the regexes (the export said so).
    let kt = imported(&out, "cursor-rules-kt-no-println");
    assert_eq!(
        kt["scope"]["paths"],
        serde_yaml::to_value(["src/**/*.{kt,kts}"]).unwrap()
    );
    assert!(kt.get("match").is_none());
    let keys = imported(&out, "cursor-rules-no-aws-keys");
    assert!(
        keys.get("scope").is_none(),
        "alwaysApply: the whole repository"
    );

    let check = guidebook_in(&out, &["check", out.to_str().unwrap()]);
    assert!(check.status.success(), "{}", all_text(&check));
    assert!(
        stdout(&check).contains("ok: 6 guidelines"),
        "{}",
        stdout(&check)
    );
}

#[test]
fn import_reads_every_format_reports_what_it_cannot_map_and_never_follows_a_symlink() {
    let dir = tempfile::Builder::new()
        .prefix("gb-import-")
        .tempdir()
        .unwrap();
    let repo = dir.path().join("repo");
    let secret = dir.path().join("id_rsa");
    std::fs::write(&secret, "-----BEGIN PRIVATE KEY----- secret").unwrap();
    write_file(&repo, "AGENTS.md", "Be brief.\n");
    write_file(
        &repo,
        "services/billing/AGENTS.md",
        "# Billing\n\nAmounts in cents.\n",
    );
    write_file(&repo, "web/CLAUDE.md", "Use hooks.\n");
    write_file(
        &repo,
        ".cursor/rules/ts.mdc",
        "---\ndescription: TS\nglobs: *.ts, src/**/*.tsx\nalwaysApply: false\n---\nStrict TS.\n",
    );
    write_file(
        &repo,
        ".cursor/rules/migrations.mdc",
        "---\ndescription: When writing migrations\n---\nReversible.\n",
    );
    write_file(
        &repo,
        ".claude/rules/api.md",
        "---\npaths:\n  - \"src/api/**/*.ts\"\n---\nValidate input.\n",
    );
    write_file(
        &repo,
        ".github/instructions/py.instructions.md",
        "\u{feff}---\r\napplyTo: \"**/*.py\"\r\n---\r\nType hints.\r\n",
    );
    write_file(
        &repo,
        ".github/instructions/review.instructions.md",
        "---\napplyTo: \"**\"\nexcludeAgent: \"coding-agent\"\n---\nReview only.\n",
    );
    write_file(&repo, ".continue/rules/react.md", "---\nname: React\nglobs: \"**/*.tsx\"\nregex: \"useEffect\\\\(\"\n---\nClean up effects.\n");
    std::fs::create_dir_all(repo.join("lib")).unwrap();
    std::os::unix::fs::symlink(&secret, repo.join("lib/AGENTS.md")).unwrap();
    let root = dir.path().join("guidebook");
    let run = guidebook_in(&root, &["import", repo.to_str().unwrap()]);
    assert!(run.status.success(), "{}", all_text(&run));
    let text = stdout(&run);
    assert!(
        text.contains(
            "not mapped: .cursor/rules/migrations.mdc: the model requests it by its description"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "not mapped: .github/instructions/review.instructions.md: excludeAgent: coding-agent"
        ),
        "{text}"
    );
    assert!(
        text.contains("not read: lib/AGENTS.md: a symlink"),
        "{text}"
    );
    assert!(text.contains("7 rule file(s)"), "{text}");

    let paths = |id: &str| imported(&root, id)["scope"]["paths"].clone();
    let list = |v: &[&str]| serde_yaml::to_value(v).unwrap();
    assert!(
        imported(&root, "agents")["scope"].is_null(),
        "the root AGENTS.md: everywhere"
    );
    assert_eq!(
        paths("services-billing-agents"),
        list(&["/services/billing/"])
    );
    assert_eq!(
        imported(&root, "services-billing-agents")["content"],
        "# Billing\n\nAmounts in cents."
    );
    assert_eq!(paths("web-claude"), list(&["/web/"]));
    assert_eq!(paths("cursor-rules-ts"), list(&["*.ts", "src/**/*.tsx"]));
    assert_eq!(paths("claude-rules-api"), list(&["src/api/**/*.ts"]));
    assert_eq!(paths("github-instructions-py"), list(&["**/*.py"]));
    assert_eq!(
        imported(&root, "github-instructions-py")["content"],
        "Type hints."
    );
    let react = imported(&root, "continue-rules-react");
    assert_eq!(react["match"]["any"][0]["regex"]["pattern"], "useEffect\\(");
    assert!(!root.join("cursor-rules-migrations").exists());
    for entry in walk(&root) {
        assert!(
            !read(&entry).contains("PRIVATE KEY"),
            "{} holds the symlink's target",
            entry.display()
        );
    }
    let check = guidebook_in(&root, &["check"]);
    assert!(check.status.success(), "{}", all_text(&check));

    // Again into the same guidebook: every directory is in the way, nothing is written.
    let again = guidebook_in(&root, &["import", repo.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "{}", all_text(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("in the way, nothing was written"));
}

#[test]
fn import_of_a_broken_rule_file_names_its_line_and_writes_nothing() {
    let dir = tempfile::Builder::new()
        .prefix("gb-import-")
        .tempdir()
        .unwrap();
    let repo = dir.path().join("repo");
    write_file(
        &repo,
        ".cursor/rules/ok.mdc",
        "---\nalwaysApply: true\n---\nFine.\n",
    );
    write_file(
        &repo,
        ".continue/rules/bad.md",
        "---\nname: bad\nregex:\n  - \"(unclosed\"\n---\nx\n",
    );
    write_file(
        &repo,
        ".claude/rules/out.md",
        "---\npaths: ../secrets/*\n---\nx\n",
    );
    let out = dir.path().join("out");
    let run = guidebook_in(
        &out,
        &[
            "import",
            repo.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", all_text(&run));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains(".continue/rules/bad.md:4: invalid regex `(unclosed`"),
        "{err}"
    );
    assert!(
        err.contains(".claude/rules/out.md:2: glob `../secrets/*` has a `..` component"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
