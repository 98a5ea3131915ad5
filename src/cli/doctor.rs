//! `guidebook doctor`: checks the whole chain from agent to sidecar, one line per check.
//!
//! Each line is `ok`, `warn` or `FAIL`, with the fix; exit 1 on any failure. Reads: the
//! settings, `guidebook-hook --version`, the socket, the agents' hook settings, the guidebook,
//! the database (a rolled-back write lock), the flags file.

use crate::cli::hooks::HostHooks;
use crate::rpc::status::TeamStatus;
use std::fmt;
use std::io;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use super::client::{ask, Reply};
use super::hooks;
use super::hooks::{self as hook_config, Host};
use crate::config::{ConfigError, Settings};
use crate::guidebook::Guidebook;
use crate::store::Database;
use guidebook_hook::protocol::{method, no_params};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Warn,
    Fail,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        })
    }
}

/// One line of the report.
struct Check {
    level: Level,
    name: &'static str,
    detail: String,
    /// What to run or do; shown unless the check is ok.
    fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            level: Level::Ok,
            name,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            level: Level::Warn,
            name,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            level: Level::Fail,
            name,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<4}  {}: {}", self.level, self.name, self.detail)?;
        match &self.fix {
            Some(fix) if self.level != Level::Ok => write!(f, "; fix: {fix}"),
            _ => Ok(()),
        }
    }
}

/// Runs every check and prints its line. A config that does not resolve is itself the report.
pub fn run(settings: Result<Settings, ConfigError>) -> ExitCode {
    let mut checks = vec![versions()];
    match settings {
        Ok(settings) => {
            checks.push(sidecar(&settings));
            checks.push(agent_hooks(Host::Codex, "codex hooks"));
            checks.push(agent_hooks(Host::ClaudeCode, "claude hooks"));
            checks.push(agent_hooks(Host::GeminiCli, "gemini hooks"));
            checks.extend(copilot_and_opencode());
            checks.push(hook_budget(
                std::env::var("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS").ok(),
            ));
            checks.push(guidebook(&settings));
            checks.extend(team_guidebooks(&settings));
            checks.extend(trusted_repositories(&settings));
            checks.push(database(&settings));
            checks.push(team_metrics(&settings));
            checks.push(flags_file(&settings.flags));
            checks.push(metrics_alerts(&settings));
        }
        Err(e) => checks.push(Check::fail(
            "settings",
            e.to_string(),
            "correct the file or variable named",
        )),
    }
    for check in &checks {
        println!("{check}");
    }
    if checks.iter().any(|c| c.level == Level::Fail) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

const REINSTALL: &str =
    "install both from one checkout: cargo install --path . --locked && cargo install --path hook-shim --locked";

/// `guidebook` and the `guidebook-hook` the hooks would run are one version.
fn versions() -> Check {
    const NAME: &str = "versions";
    let Some(hook) = hooks::find_hook_binary() else {
        return Check::fail(
            NAME,
            "no guidebook-hook next to guidebook or on PATH",
            "cargo install --path hook-shim --locked",
        );
    };
    let output = match output_bounded(Command::new(&hook).arg("--version"), Duration::from_secs(5))
    {
        Ok(out) => out,
        Err(e) => {
            return Check::fail(
                NAME,
                format!("running {} --version: {e}", hook.display()),
                REINSTALL,
            )
        }
    };
    let theirs = output
        .trim()
        .strip_prefix("guidebook-hook ")
        .unwrap_or(output.trim())
        .to_string();
    let detail = format!(
        "guidebook {}, guidebook-hook {theirs} ({})",
        crate::VERSION,
        hook.display()
    );
    if theirs == crate::VERSION {
        Check::ok(NAME, detail)
    } else {
        Check::fail(NAME, detail, REINSTALL)
    }
}

/// Each team guidebook: the revision served and its age, or why its fetch fails.
fn team_guidebooks(settings: &Settings) -> Vec<Check> {
    const NAME: &str = "team guidebook";
    settings
        .team_guidebooks
        .iter()
        .map(|t| {
            // Built as `status` builds it: the same wire type, the same state file.
            let state = TeamStatus::of(t);
            let line = super::status::team_line(&state);
            let stale = state
                .age_seconds
                .is_some_and(|a| a > 3 * 60 * t.refresh_minutes.max(1) + 60);
            match (&state.revision, &state.error) {
                (None, _) => Check::warn(
                    NAME,
                    line,
                    "start the sidecar (it fetches at start) and check the URL, ref and network",
                ),
                (Some(_), Some(_)) => Check::warn(
                    NAME,
                    line,
                    "the last good checkout is served; check the URL, ref and network",
                ),
                (Some(_), None) if stale => Check::warn(
                    NAME,
                    line,
                    "the sidecar has not refreshed it lately: is it running?",
                ),
                _ => Check::ok(NAME, line),
            }
        })
        .collect()
}

/// Each trusted repository: its rule files that wait for `guidebook trust` (changed or new
/// since it was trusted) and those that are never read.
fn trusted_repositories(settings: &Settings) -> Vec<Check> {
    const NAME: &str = "repository rules";
    let path = crate::sources::trust::store_path(settings);
    let store = match crate::sources::trust::TrustStore::load(&path) {
        Ok(store) => store,
        Err(e) => {
            return vec![Check::fail(
                NAME,
                e.to_string(),
                "fix or remove trust.json, then trust the repositories again",
            )]
        }
    };
    store
        .repositories()
        .iter()
        .map(|r| {
            let state = crate::sources::trust::repository_state(
                &r.root,
                &settings.repository_rules,
                &store,
            );
            let waiting: Vec<String> = state
                .waiting()
                .map(|(f, s)| format!("{} ({})", f.relative.display(), s.word()))
                .collect();
            let served = state
                .files
                .iter()
                .filter(|(_, s)| *s == crate::sources::trust::FileState::Trusted)
                .count();
            let detail = format!("{}: {served} rule files trusted", r.root.display());
            if waiting.is_empty() {
                Check::ok(NAME, detail)
            } else {
                Check::warn(
                    NAME,
                    format!("{detail}; waiting: {}", waiting.join(", ")),
                    format!("review them with `guidebook trust {}`", r.root.display()),
                )
            }
        })
        .collect()
}

/// Runs `cmd` and returns its stdout, killing it if it outlives `limit`.
fn output_bounded(cmd: &mut Command, limit: Duration) -> io::Result<String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let started = Instant::now();
    while child.try_wait()?.is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The sidecar answers `status`, and is our version.
fn sidecar(settings: &Settings) -> Check {
    const NAME: &str = "sidecar";
    let socket = settings.socket.display();
    let status =
        ask::<serde_json::Value>(settings, &no_params(method::STATUS), Duration::from_secs(3));
    match status {
        Ok(Reply::Answer(status)) => {
            let version = status["version"].as_str().unwrap_or("?");
            let guidelines = status["guidebook"]["guidelines"].as_u64().unwrap_or(0);
            let detail = format!("{version} answering on {socket} ({guidelines} guidelines)");
            if version == crate::VERSION {
                Check::ok(NAME, detail)
            } else {
                Check::fail(
                    NAME,
                    format!("{detail}, but this is {}", crate::VERSION),
                    "restart the sidecar so that it runs this version",
                )
            }
        }
        Ok(Reply::NotRunning(why)) => {
            let autostart =
                std::env::var_os("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART").is_none_or(|v| v != "1");
            if autostart {
                Check::warn(
                    NAME,
                    format!("not running ({why}); the first hook starts it"),
                    "guidebook serve",
                )
            } else {
                Check::fail(
                    NAME,
                    format!("not running ({why}) and ADAPTIVE_GUIDEBOOK_NO_AUTOSTART=1"),
                    "guidebook serve",
                )
            }
        }
        Err(e) => Check::fail(NAME, e.to_string(), "guidebook status"),
    }
}

/// Codex skips hooks it has no trust record for (or one for another definition, say after the
/// binary moved): a FAIL naming how many of ours wait, with both ways to trust them.
fn codex_trust_check(name: &'static str, hooks_json: &Path, text: &str) -> Option<Check> {
    let ours = hooks::codex_trust::our_handlers(hooks_json, text).ok()?;
    let config = hooks::codex_config_file().ok()?;
    let config_text = hooks::read_config(&config).ok()?;
    let waiting = match hooks::codex_trust::awaiting_review(&config_text, &ours) {
        Ok(waiting) => waiting,
        Err(e) => {
            return Some(Check::fail(
                name,
                format!("{}: {e}", config.display()),
                "correct the file, then guidebook hooks install --codex --trust",
            ))
        }
    };
    (!waiting.is_empty()).then(|| {
        Check::fail(
            name,
            format!(
                "{} of our {} hooks in {} await review: Codex runs none of them until they are \
                 trusted (no trust record in {}, or one for another definition)",
                waiting.len(),
                ours.len(),
                hooks_json.display(),
                config.display()
            ),
            // Right after `hooks install --codex` this is the one FAIL a new user meets: the
            // line leads with the command that clears it.
            "run `guidebook hooks install --codex --trust` (trusts exactly our hooks), or \
             review them in Codex's /hooks",
        )
    })
}

/// The user's settings for `host` run guidebook-hook on each of our events, and the command
/// they run exists. Missing entries only warn: hooks may be set per project instead.
/// The shim's budget (`ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS`, as this shell sets it) is below the
/// timeout `hooks install` gives each hook: past it, a hung sidecar makes the agents wait out
/// their timeouts, and Gemini CLI shows the user a warning for every hook.
fn hook_budget(value: Option<String>) -> Check {
    const NAME: &str = "hook budget";
    const DEFAULT_MS: u64 = 2000;
    let limit_ms = u64::from(Host::Codex.hook_timeout()) * 1000;
    let budget_ms = match value.as_deref().map(str::trim) {
        None | Some("") => DEFAULT_MS,
        Some(text) => match text.parse::<u64>() {
            Ok(ms) => ms,
            Err(_) => {
                return Check::warn(
                    NAME,
                    format!(
                        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS={text:?} is not a whole number of \
                         milliseconds (the shim uses its default, {DEFAULT_MS} ms)"
                    ),
                    "set it to a number of milliseconds below 5000, or unset it",
                )
            }
        },
    };
    if budget_ms >= limit_ms {
        Check::warn(
            NAME,
            format!(
                "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS={budget_ms} is not below the {limit_ms} ms each \
                 hook is given: a hung sidecar makes the agents wait out their timeouts, and \
                 Gemini CLI warns the user for every hook"
            ),
            format!("set it below {limit_ms}, or unset it (default {DEFAULT_MS})"),
        )
    } else {
        Check::ok(
            NAME,
            format!("{budget_ms} ms, below the {limit_ms} ms each hook is given"),
        )
    }
}

fn agent_hooks(host: Host, name: &'static str) -> Check {
    let fix = format!("guidebook hooks install {}", host.flag());
    let path = match hooks::config_file(host, None) {
        Ok(path) => path,
        Err(e) => return Check::warn(name, e.to_string(), fix),
    };
    let text = match hooks::read_config(&path) {
        Ok(text) => text,
        Err(e) => return Check::fail(name, e.to_string(), format!("make it readable, then {fix}")),
    };
    let found = match hook_config::installed(&text, host) {
        Ok(found) => found,
        Err(e) => {
            return Check::fail(
                name,
                format!("{}:{e}", path.display()),
                format!("correct the file, then {fix}"),
            )
        }
    };
    let shown = path.display();
    let plugin = match hooks::plugin::installed(host) {
        Ok(plugin) => plugin,
        Err(e) => {
            return Check::fail(
                name,
                format!("cannot read the agent's plugin records: {e}"),
                "correct or remove that file with the agent's own commands",
            )
        }
    };
    if let Some(plugin) = plugin.as_ref().filter(|p| p.enabled) {
        if !found.is_empty() {
            return Check::warn(
                name,
                format!(
                    "ours run twice: from {shown} and from the {} plugin in {}",
                    hooks::plugin::NAME,
                    plugin.dir.display()
                ),
                format!("keep one: guidebook hooks uninstall {}", host.flag()),
            );
        }
        return plugin_check(name, plugin);
    }
    if found.is_empty() {
        if let Some(plugin) = plugin {
            return Check::warn(
                name,
                format!(
                    "none in {shown}; the {} plugin {} in {} is disabled",
                    hooks::plugin::NAME,
                    plugin.version,
                    plugin.dir.display()
                ),
                plugin.enable,
            );
        }
        return Check::warn(name, format!("none in {shown}"), fix);
    }
    for (event, commands) in &found {
        for command in commands {
            if let Some(program) = missing_program(command) {
                return Check::fail(
                    name,
                    format!(
                        "{event} in {shown} runs {}, which does not exist",
                        program.display()
                    ),
                    fix,
                );
            }
        }
    }
    if host == Host::Codex {
        if let Some(failed) = codex_trust_check(name, &path, &text) {
            return failed;
        }
    }
    let events: Vec<&str> = found.iter().map(|(e, _)| *e).collect();
    let missing: Vec<&str> = host
        .events()
        .iter()
        .map(|(e, _)| *e)
        .filter(|e| !events.contains(e))
        .collect();
    if missing.is_empty() {
        Check::ok(name, format!("{} in {shown}", events.join(", ")))
    } else {
        Check::warn(
            name,
            format!("no entry for {} in {shown}", missing.join(", ")),
            fix,
        )
    }
}

/// Our plugin (Claude Code) or extension (Gemini CLI), installed and enabled: its hooks find a
/// shim (its own `bin/`, else `PATH`).
fn plugin_check(name: &'static str, plugin: &hooks::plugin::Installed) -> Check {
    let what = format!(
        "the {} plugin {} in {}",
        hooks::plugin::NAME,
        plugin.version,
        plugin.dir.display()
    );
    match hooks::plugin::shim(plugin) {
        Some(shim) => Check::ok(name, format!("{what}, running {}", shim.display())),
        None => Check::fail(
            name,
            format!("{what}: its hooks find no executable guidebook-hook, in its bin/ or on PATH"),
            format!("install the plugin from the release archive (it carries its own binaries), or put guidebook-hook on PATH: {REINSTALL}"),
        ),
    }
}

/// GitHub Copilot CLI's hooks (as [`agent_hooks`] checks the others': a command of ours that
/// is gone makes Copilot CLI deny every edit and shell call) and our OpenCode plugin, each
/// checked when that agent is used here: its home (`~/.copilot`, `$COPILOT_HOME`), its config
/// directory (`~/.config/opencode`) or our file in it exists.
fn copilot_and_opencode() -> Vec<Check> {
    let mut checks = Vec::new();
    let used = |file: &Path, levels: usize| {
        file.exists() || file.ancestors().nth(levels).is_some_and(Path::is_dir)
    };
    if hooks::config_file(Host::CopilotCli, None).is_ok_and(|f| used(&f, 2)) {
        checks.push(agent_hooks(Host::CopilotCli, "copilot hooks"));
    }
    if let Some(plugin) = hooks::config_file(Host::OpenCode, None)
        .ok()
        .filter(|f| used(f, 2))
    {
        checks.push(opencode_plugin(&plugin));
    }
    checks
}

/// Our OpenCode plugin at `path`, in the user's OpenCode config, and the command it runs there
/// to run.
fn opencode_plugin(path: &Path) -> Check {
    const NAME: &str = "opencode plugin";
    let fix = format!("guidebook hooks install {}", Host::OpenCode.flag());
    let text = match hooks::read_config(path) {
        Ok(text) => text,
        Err(e) => return Check::fail(NAME, e.to_string(), format!("make it readable, then {fix}")),
    };
    let shown = path.display();
    if text.is_empty() {
        return Check::warn(NAME, format!("none at {shown}"), fix);
    }
    let Some(command) = hooks::opencode::command_of(&text) else {
        return Check::warn(
            NAME,
            format!("{shown} is not the plugin guidebook writes"),
            format!("move it away, then {fix}"),
        );
    };
    if let Some(program) = missing_program(&command) {
        return Check::fail(
            NAME,
            format!("{shown} runs {}, which does not exist", program.display()),
            fix,
        );
    }
    Check::ok(NAME, format!("{shown} runs {command}"))
}

/// The program a hook command runs, when it is named by an absolute path that is no file.
fn missing_program(command: &str) -> Option<&Path> {
    let program = Path::new(hook_config::program(command));
    (program.is_absolute() && !program.is_file()).then_some(program)
}

/// The guidebook validates, as `guidebook check` would say.
fn guidebook(settings: &Settings) -> Check {
    const NAME: &str = "guidebook";
    let root = &settings.guidebook_root;
    if !root.exists() {
        return if settings.root_is_default() {
            Check::ok(
                NAME,
                format!(
                    "{} not there yet; the first start installs the sample",
                    root.display()
                ),
            )
        } else {
            Check::fail(
                NAME,
                format!("{} does not exist", root.display()),
                "create it, or point --guidebook-root / ADAPTIVE_GUIDEBOOK_ROOT elsewhere",
            )
        };
    }
    let snapshot = Guidebook::load(root.clone()).snapshot();
    match snapshot.errors.first() {
        None => Check::ok(
            NAME,
            format!(
                "{} guidelines in {}",
                snapshot.guidelines.len(),
                root.display()
            ),
        ),
        Some(first) => Check::fail(
            NAME,
            format!("{} error(s), the first: {first}", snapshot.errors.len()),
            "guidebook check (lists them all)",
        ),
    }
}

/// The database takes a write lock, or can be created.
fn database(settings: &Settings) -> Check {
    const NAME: &str = "database";
    let db = &settings.db;
    if db.exists() {
        return match Database::probe_writable(db, Duration::from_secs(2)) {
            Ok(()) => Check::ok(NAME, format!("{} is writable", db.display())),
            Err(e) => Check::fail(
                NAME,
                e.to_string(),
                format!(
                    "check the owner and mode of {} and its directory",
                    db.display()
                ),
            ),
        };
    }
    // Not there yet: the first start creates it, if its directory (or the first one that
    // exists on the way) lets this user write.
    let mut dir = db.parent().unwrap_or(Path::new("/"));
    while !dir.exists() {
        dir = dir.parent().unwrap_or(Path::new("/"));
    }
    if writable(dir) {
        Check::ok(
            NAME,
            format!("{} not there yet; the first start creates it", db.display()),
        )
    } else {
        Check::fail(
            NAME,
            format!(
                "{} cannot be created: {} is not writable",
                db.display(),
                dir.display()
            ),
            "choose another --db / ADAPTIVE_GUIDEBOOK_DB",
        )
    }
}

/// The team push: off, or its credentials, its last accepted push, series and last error (the
/// running sidecar's, else what the database recorded).
fn team_metrics(settings: &Settings) -> Check {
    const NAME: &str = "team metrics";
    let Some(team) = &settings.team_metrics else {
        return Check::ok(NAME, "off (no teamMetrics in config.yaml)");
    };
    let url = &team.remote_write_url;
    let credential = match &team.auth {
        crate::config::TeamAuth::None => None,
        crate::config::TeamAuth::Bearer { token_file } => Some((token_file, "bearerTokenFile")),
        crate::config::TeamAuth::Basic { password_file, .. } => {
            Some((password_file, "basicAuth.passwordFile"))
        }
    };
    if let Some((path, key)) = credential {
        if let Err(e) = crate::metrics::team::http::secret(path, key) {
            return Check::fail(
                NAME,
                format!("{url}: {e}"),
                format!("chmod 600 {} (or fix teamMetrics.{key})", path.display()),
            );
        }
    }
    let status =
        ask::<serde_json::Value>(settings, &no_params(method::STATUS), Duration::from_secs(3));
    let pushed = match status {
        Ok(Reply::Answer(v)) => serde_json::from_value::<
            Option<crate::rpc::status::TeamMetricsStatus>,
        >(v["teamMetrics"].clone())
        .ok()
        .flatten(),
        _ => None,
    };
    match pushed {
        Some(t) => {
            let last = t.last_push_at.as_deref().unwrap_or("never");
            let detail = format!(
                "{url}: last push {last}, {} series, {} sessions settled, {} waiting",
                t.series, t.settled_sessions, t.pending_sessions
            );
            match (&t.last_error, t.configuration_error) {
                (Some(e), true) => Check::fail(NAME, format!("{detail}; refused: {e}"), "fix teamMetrics in config.yaml (URL, credentials), then `guidebook metrics push`"),
                (Some(e), false) => Check::warn(NAME, format!("{detail}; last error: {e}"), "the push retries by itself; `guidebook metrics push` tries now"),
                (None, _) => Check::ok(NAME, detail),
            }
        }
        None => {
            // Opened only when it exists: doctor creates nothing.
            let store = settings
                .db
                .exists()
                .then(|| crate::store::Database::open(&settings.db, Duration::from_secs(2)))
                .ok_or(())
                .and_then(|r| r.map_err(|_| ()))
                .map(crate::store::TeamStore::new);
            let last = store
                .as_ref()
                .ok()
                .and_then(|s| s.last_pushed_ms().ok().flatten())
                .map(|ms| {
                    crate::time::rfc3339(
                        std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64),
                    )
                });
            let series = store
                .as_ref()
                .ok()
                .and_then(|s| s.series().ok())
                .map_or(0, |r| r.len());
            Check::warn(
                NAME,
                format!(
                    "{url}: the sidecar is not pushing now; last push {}, {series} series",
                    last.as_deref().unwrap_or("never")
                ),
                "guidebook serve (or `guidebook metrics push` once)",
            )
        }
    }
}

fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

/// The feature flags file: missing is fine (every flag off); otherwise it must pass the same
/// validation the sidecar applies (`crate::flags::file::parse`), or the sidecar would be
/// serving older flags than the file says.
/// The latest weekly metrics file raised no alert.
fn metrics_alerts(settings: &Settings) -> Check {
    const NAME: &str = "metrics";
    let dir = crate::metrics::MetricsDir::new(settings.metrics_dir.clone());
    match dir.latest_alerts() {
        None => Check::ok(
            NAME,
            format!(
                "no weekly file in {} yet",
                dir.root.join("weekly").display()
            ),
        ),
        Some((path, alerts)) if alerts.is_empty() => {
            Check::ok(NAME, format!("{}: no alert", path.display()))
        }
        Some((path, alerts)) => Check::warn(
            NAME,
            format!(
                "{}: {}",
                path.display(),
                alerts
                    .iter()
                    .map(|a| a.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            "look into the QC failures of the week (guidebook metrics weekly shows them)",
        ),
    }
}

fn flags_file(path: &Path) -> Check {
    const NAME: &str = "flags";
    let shown = path.display();
    let fix = format!("correct {shown}, or remove it to turn every flag off");
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Check::ok(NAME, format!("{shown} missing: every flag off"))
        }
        Err(e) => return Check::fail(NAME, format!("reading {shown}: {e}"), fix),
    };
    match crate::flags::file::parse(&bytes) {
        Ok(file) => Check::ok(NAME, format!("{shown}: {} flags", file.flags.len())),
        Err(message) => Check::fail(NAME, format!("{shown}:{message}"), fix),
    }
}
