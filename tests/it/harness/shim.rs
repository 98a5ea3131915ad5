//! The real `guidebook-hook` under test: where it is built (and statically, as the README's
//! Linux line builds it), running it bounded, and its stdout checked against each host's schema.

use super::*;

/// The `guidebook-hook` binary under test. It belongs to another workspace package, so Cargo
/// does not build it for this test binary nor tell us where it is: it sits next to
/// `guidebook`, and is (re)built once per test run so that a stale copy is never tested.
pub fn shim_exe() -> PathBuf {
    static BUILD: Once = Once::new();
    let exe_dir = guidebook_exe()
        .parent()
        .expect("the binary has a directory");
    // `<target>/<profile>/guidebook`: build the shim into the same target and profile.
    let target_dir = exe_dir.parent().expect("a target directory");
    BUILD.call_once(|| build_shim(target_dir, None));
    let exe = exe_dir.join("guidebook-hook");
    assert!(exe.is_file(), "{} was not built", exe.display());
    exe
}

/// The shim as README's Linux install line builds it: linked statically
/// (`RUSTFLAGS="-C target-feature=+crt-static"`), in a target directory of its own, since
/// those flags apply to every crate of a build. Built once per test run.
pub fn static_shim_exe() -> PathBuf {
    static BUILD: Once = Once::new();
    let exe_dir = guidebook_exe()
        .parent()
        .expect("the binary has a directory");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("static-shim");
    BUILD.call_once(|| build_shim(&target_dir, Some("-C target-feature=+crt-static")));
    let profile = exe_dir.file_name().expect("a profile directory");
    let exe = target_dir.join(profile).join("guidebook-hook");
    assert!(exe.is_file(), "{} was not built", exe.display());
    exe
}

/// Builds `guidebook-hook` into `target_dir` with the profile this test binary was built
/// with; `rustflags`, when given, replace the test process's own `RUSTFLAGS`.
fn build_shim(target_dir: &Path, rustflags: Option<&str>) {
    let profile = guidebook_exe()
        .parent()
        .and_then(Path::file_name)
        .and_then(OsStr::to_str)
        .unwrap_or("debug");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args([
            "build",
            "--quiet",
            "-p",
            "guidebook-hook",
            "--bin",
            "guidebook-hook",
        ])
        .arg("--manifest-path")
        .arg(manifest_dir().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    if let Some(flags) = rustflags {
        cargo
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env("RUSTFLAGS", flags);
    }
    if profile == "release" {
        cargo.arg("--release");
    }
    let out = cargo
        .output()
        .expect("running cargo to build guidebook-hook");
    assert!(
        out.status.success(),
        "building guidebook-hook (RUSTFLAGS {rustflags:?}) failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What one run of `guidebook-hook` did.
#[derive(Debug)]
pub struct ShimRun {
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
}

/// Runs the real `guidebook-hook` with `stdin` and `envs` (nothing else from the test's own
/// settings environment), checks that it exited 0 and that whatever it printed is one line of
/// hook output valid against Codex's published schema. Autostart is off unless `envs` sets
/// `ADAPTIVE_GUIDEBOOK_NO_AUTOSTART` otherwise: a shim that found no sidecar would start one
/// this test does not own.
pub fn run_shim(stdin: &str, envs: &[(&str, &OsStr)]) -> ShimRun {
    run_shim_with_args(&[], stdin, envs)
}

/// [`run_shim`] with command-line arguments.
pub fn run_shim_with_args(args: &[&OsStr], stdin: &str, envs: &[(&str, &OsStr)]) -> ShimRun {
    run_shim_exe(&shim_exe(), args, stdin, envs)
}

/// [`run_shim_with_args`] with a given build of the shim.
pub fn run_shim_exe(exe: &Path, args: &[&OsStr], stdin: &str, envs: &[(&str, &OsStr)]) -> ShimRun {
    let mut cmd = Command::new(exe);
    for var in INHERITED_SETTINGS {
        cmd.env_remove(var);
    }
    cmd.env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1");
    cmd.args(args).envs(envs.iter().copied());
    let out = run_bounded(cmd, stdin.as_bytes(), "guidebook-hook");
    let run = ShimRun {
        stdout: String::from_utf8(out.stdout).expect("hook output is UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status,
    };
    assert_eq!(
        run.status.code(),
        Some(0),
        "the shim must always exit 0: {run:?}"
    );
    let event: Option<Value> = serde_json::from_str(stdin).ok();
    match event.as_ref().and_then(|e| e["hook_event_name"].as_str()) {
        Some("PreToolUse") => assert_valid_pre_tool_use_output(&run.stdout),
        Some("BeforeTool" | "AfterTool" | "PreCompress") => assert_valid_gemini_output(&run.stdout),
        Some("PostToolUseFailure") => assert_valid_claude_failure_output(&run.stdout),
        _ => assert_valid_hook_output(&run.stdout),
    }
    run
}

/// Like [`assert_valid_hook_output`], against the shapes Gemini CLI reads (its hook output types,
/// written down as `gemini-hook-schemas/hook-output.schema.json`).
pub fn assert_valid_gemini_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "gemini-hook-schemas/hook-output.schema.json",
    );
}

/// Like [`assert_valid_hook_output`], against what Claude Code reads from a `PostToolUseFailure`
/// hook (an event Codex does not have).
pub fn assert_valid_claude_failure_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "claude-hook-schemas/post-tool-use-failure.output.schema.json",
    );
}

/// Like [`assert_valid_hook_output`], against Codex's `PreToolUse` output schema.
pub fn assert_valid_pre_tool_use_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "codex-hook-schemas/pre-tool-use.command.output.schema.json",
    );
}

/// Checks that the shim's stdout is empty or exactly one compact JSON object on one line that
/// Codex's PostToolUse output schema accepts (it rejects unknown keys).
pub fn assert_valid_hook_output(stdout: &str) {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    assert_valid_output(
        stdout,
        &VALIDATOR,
        "codex-hook-schemas/post-tool-use.command.output.schema.json",
    );
}

/// `stdout` is empty, or one newline-terminated compact JSON line valid against `schema`.
fn assert_valid_output(
    stdout: &str,
    validator: &'static OnceLock<jsonschema::Validator>,
    schema: &str,
) {
    if stdout.is_empty() {
        return;
    }
    let line = stdout
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("hook output must end with a newline: {stdout:?}"));
    assert!(
        !line.contains('\n'),
        "hook output must be one line: {stdout:?}"
    );
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("hook output is not JSON ({e}): {stdout:?}"));
    let validator = validator.get_or_init(|| {
        jsonschema::validator_for(&fixture(schema))
            .unwrap_or_else(|e| panic!("the schema {schema} compiles: {e}"))
    });
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "hook output {line} is invalid against {schema}: {errors:?}"
    );
}
