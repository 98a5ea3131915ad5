//! Our Claude Code plugin and Gemini CLI extension, as the agents recorded them installed.
//!
//! Both live in the checkout's `integrations/` (the marketplace manifest in
//! `.claude-plugin/marketplace.json`) and in the release archive `scripts/package` writes; the
//! agents' own commands install them. Reads: Claude Code's `plugins/installed_plugins.json` and
//! `settings.json`, Gemini CLI's `extensions/`. Writes: nothing. Only the user's own scope is
//! looked at, as `doctor` checks the user's setup.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{config_file, executable, hook_binary_on_path, Host};

/// The plugin's, the extension's and the marketplace's name.
pub const NAME: &str = "adaptive-guidebook";

/// Where an agent installed our plugin, which version, and whether it is enabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub dir: PathBuf,
    pub version: String,
    pub enabled: bool,
    /// How to turn it on again, in the agent's own words.
    pub enable: String,
}

/// An agent's record of its plugins that exists but cannot be read: named with its reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct RecordError {
    pub path: PathBuf,
    pub reason: String,
}

/// Our plugin or extension in `host` (Claude Code or Gemini CLI) for this user, if installed.
pub fn installed(host: Host) -> Result<Option<Installed>, RecordError> {
    let Ok(settings) = config_file(host, None) else {
        return Ok(None);
    };
    let Some(agent_dir) = settings.parent() else {
        return Ok(None);
    };
    match host {
        Host::ClaudeCode => claude(agent_dir, &settings),
        Host::GeminiCli => gemini(agent_dir),
        _ => Ok(None),
    }
}

/// The JSON at `path`, `None` when there is no such file.
fn read_json(path: &Path) -> Result<Option<Value>, RecordError> {
    let error = |reason: String| RecordError {
        path: path.to_owned(),
        reason,
    };
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| error(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(error(e.to_string())),
    }
}

/// `installed_plugins.json` (version 2): `plugins` maps `name@marketplace` to its installs, each
/// with a `scope`; `settings.json`'s `enabledPlugins` says which of the user's are on.
fn claude(agent_dir: &Path, settings: &Path) -> Result<Option<Installed>, RecordError> {
    let Some(records) = read_json(&agent_dir.join("plugins/installed_plugins.json"))? else {
        return Ok(None);
    };
    let ours = records["plugins"].as_object().into_iter().flatten();
    let user_install = ours
        .filter(|(id, _)| id.split('@').next() == Some(NAME))
        .find_map(|(id, installs)| {
            let install = installs.as_array()?.iter().find(|i| i["scope"] == "user")?;
            Some((id, install))
        });
    let Some((id, install)) = user_install else {
        return Ok(None);
    };
    let Some(dir) = install["installPath"].as_str() else {
        return Ok(None);
    };
    let enabled = read_json(settings)?.is_some_and(|s| s["enabledPlugins"][id] == true);
    Ok(Some(Installed {
        dir: PathBuf::from(dir),
        version: install["version"].as_str().unwrap_or("?").to_owned(),
        enabled,
        enable: format!("claude plugin enable {id}"),
    }))
}

/// `extensions/<name>/gemini-extension.json`; `extensions/extension-enablement.json` keeps the
/// user's choices as overrides, the last one for the home directory (`<home>/*`, or
/// `!<home>/*` when disabled) winning.
fn gemini(agent_dir: &Path) -> Result<Option<Installed>, RecordError> {
    let dir = agent_dir.join("extensions").join(NAME);
    let Some(manifest) = read_json(&dir.join("gemini-extension.json"))? else {
        return Ok(None);
    };
    let home = agent_dir
        .parent()
        .map(|h| h.display().to_string())
        .unwrap_or_default();
    let for_home = format!("{}/*", home.trim_end_matches('/'));
    let enablement = read_json(&agent_dir.join("extensions/extension-enablement.json"))?;
    let enabled = enablement
        .as_ref()
        .and_then(|e| e[NAME]["overrides"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .rev()
        .find_map(|rule| match rule.strip_prefix('!') {
            Some(rule) => (rule == for_home).then_some(false),
            None => (rule == for_home).then_some(true),
        })
        .unwrap_or(true);
    Ok(Some(Installed {
        version: manifest["version"].as_str().unwrap_or("?").to_owned(),
        dir,
        enabled,
        enable: format!("gemini extensions enable {NAME}"),
    }))
}

/// The shim the plugin's hooks run: its own `bin/guidebook-hook` (the release archive's) when
/// executable, else the first executable `guidebook-hook` on `PATH`, as the hook command chooses.
pub fn shim(plugin: &Installed) -> Option<PathBuf> {
    Some(plugin.dir.join("bin/guidebook-hook"))
        .filter(|bundled| executable(bundled))
        .or_else(hook_binary_on_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Claude Code's records as `claude plugin install` (2.1.332) writes them.
    #[test]
    fn claude_codes_records_say_where_and_whether_it_is_enabled() {
        let home = tempfile::tempdir().unwrap();
        let agent = home.path().join(".claude");
        let settings = agent.join("settings.json");
        assert_eq!(claude(&agent, &settings), Ok(None), "nothing installed");
        let cache = agent.join("plugins/cache/adaptive-guidebook/adaptive-guidebook/0.1.0");
        let records = |scope: &str| {
            format!(
                r#"{{"version": 2, "plugins": {{"adaptive-guidebook@adaptive-guidebook": [{{"scope": "{scope}",
                "installPath": "{}", "version": "0.1.0"}}], "other@x": []}}}}"#,
                cache.display()
            )
        };
        write(
            &agent.join("plugins/installed_plugins.json"),
            &records("user"),
        );
        write(
            &settings,
            r#"{"enabledPlugins": {"adaptive-guidebook@adaptive-guidebook": true}}"#,
        );
        let found = claude(&agent, &settings).unwrap().unwrap();
        assert_eq!(found.dir, cache);
        assert_eq!(found.version, "0.1.0");
        assert!(found.enabled);
        assert_eq!(
            found.enable,
            "claude plugin enable adaptive-guidebook@adaptive-guidebook"
        );
        write(
            &settings,
            r#"{"enabledPlugins": {"adaptive-guidebook@adaptive-guidebook": false}}"#,
        );
        assert!(!claude(&agent, &settings).unwrap().unwrap().enabled);
        // A project's install is not the user's.
        write(
            &agent.join("plugins/installed_plugins.json"),
            &records("project"),
        );
        assert_eq!(claude(&agent, &settings), Ok(None));
        write(&agent.join("plugins/installed_plugins.json"), "{not json");
        let error = claude(&agent, &settings).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("installed_plugins.json: key must be a string"),
            "{error}"
        );
    }

    /// Gemini CLI's enablement overrides: the last for the home directory wins.
    #[test]
    fn gemini_clis_overrides_say_whether_the_extension_is_enabled() {
        let home = tempfile::tempdir().unwrap();
        let agent = home.path().join(".gemini");
        assert_eq!(gemini(&agent), Ok(None));
        write(
            &agent.join("extensions/adaptive-guidebook/gemini-extension.json"),
            r#"{"name": "adaptive-guidebook", "version": "0.1.0"}"#,
        );
        let found = gemini(&agent).unwrap().unwrap();
        assert!(found.enabled, "no overrides: enabled");
        assert_eq!(found.version, "0.1.0");
        let h = home.path().display();
        let enablement = agent.join("extensions/extension-enablement.json");
        for (overrides, enabled) in [
            (format!(r#"["{h}/*"]"#), true),
            (format!(r#"["!{h}/*"]"#), false),
            (format!(r#"["!{h}/*", "{h}/*"]"#), true),
            (r#"["!/elsewhere/*"]"#.to_string(), true),
        ] {
            write(
                &enablement,
                &format!(r#"{{"adaptive-guidebook": {{"overrides": {overrides}}}}}"#),
            );
            assert_eq!(
                gemini(&agent).unwrap().unwrap().enabled,
                enabled,
                "{overrides}"
            );
        }
    }
}
