//! Our Claude Code plugin and Gemini CLI extension, as the agents recorded them installed.
//!
//! Both live in the checkout's `integrations/` (the marketplace manifest in
//! `.claude-plugin/marketplace.json`) and in the release archive `scripts/package` writes; the
//! agents' own commands install them. Reads: Claude Code's `plugins/installed_plugins.json` and
//! `settings.json`, Gemini CLI's `extensions/`. Writes: nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{config_file, Host};

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

/// Our plugin or extension in `host` (Claude Code or Gemini CLI) for this user, if installed.
pub fn installed(host: Host) -> Option<Installed> {
    let settings = config_file(host, None).ok()?;
    let agent_dir = settings.parent()?;
    match host {
        Host::Claude => claude(agent_dir, &settings),
        Host::Gemini => gemini(agent_dir),
        _ => None,
    }
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// `installed_plugins.json` (version 2): `plugins` maps `name@marketplace` to its installs;
/// `settings.json`'s `enabledPlugins` says which are on.
fn claude(agent_dir: &Path, settings: &Path) -> Option<Installed> {
    let records = read_json(&agent_dir.join("plugins/installed_plugins.json"))?;
    let (id, installs) = records["plugins"]
        .as_object()?
        .iter()
        .find(|(id, _)| id.split('@').next() == Some(NAME))?;
    let install = installs
        .as_array()?
        .iter()
        .find(|i| i["scope"] == "user")
        .or_else(|| installs.as_array()?.first())?;
    let enabled = read_json(settings).is_some_and(|s| s["enabledPlugins"][id] == true);
    Some(Installed {
        dir: PathBuf::from(install["installPath"].as_str()?),
        version: install["version"].as_str().unwrap_or("?").to_owned(),
        enabled,
        enable: format!("claude plugin enable {id}"),
    })
}

/// `extensions/<name>/gemini-extension.json`; `extensions/extension-enablement.json` holds
/// `!<home>/*` among the extension's overrides when the user disabled it.
fn gemini(agent_dir: &Path) -> Option<Installed> {
    let dir = agent_dir.join("extensions").join(NAME);
    let manifest = read_json(&dir.join("gemini-extension.json"))?;
    let home = agent_dir.parent()?.display().to_string();
    let disabled = format!("!{}/*", home.trim_end_matches('/'));
    let enabled = !read_json(&agent_dir.join("extensions/extension-enablement.json"))
        .and_then(|e| e[NAME]["overrides"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .any(|o| o.as_str() == Some(disabled.as_str()));
    Some(Installed {
        version: manifest["version"].as_str().unwrap_or("?").to_owned(),
        dir,
        enabled,
        enable: format!("gemini extensions enable {NAME}"),
    })
}

/// The shim the plugin's hooks run: its own `bin/guidebook-hook` (the release archive's),
/// else the first `guidebook-hook` on `PATH`, as the hook command chooses.
pub fn shim(plugin: &Installed) -> Option<PathBuf> {
    let bundled = plugin.dir.join("bin/guidebook-hook");
    if bundled.is_file() {
        return Some(bundled);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("guidebook-hook"))
        .find(|p| p.is_file())
}
