//! Codex's `config.toml`: our MCP server entry, edited with `toml_edit` so that the rest of the
//! file, comments and formatting included, stays as written. Pure: text in, text out.

use super::host::MCP_SERVER;
use super::json_tree::EditError;

/// Codex's `config.toml` text with `[mcp_servers.guidebook]` set to run `command mcp`. The
/// rest of the file, comments and formatting included, is left as written (`toml_edit`); keys
/// the user added to our table (`env`, timeouts) are kept.
pub fn install_codex_mcp_server(
    text: &str,
    command: &str,
    env: &[(String, String)],
) -> Result<String, EditError> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| EditError::Toml(format!("not valid TOML: {e}")))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            // `[mcp_servers.guidebook]` alone, not an empty `[mcp_servers]` above it.
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_like_mut()
        .ok_or_else(|| EditError::Toml("`mcp_servers` is not a table".into()))?;
    let ours = servers
        .entry(MCP_SERVER)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| EditError::Toml(format!("`mcp_servers.{MCP_SERVER}` is not a table")))?;
    let args: toml_edit::Array = ["mcp"].into_iter().collect();
    if ours.get("command").and_then(|c| c.as_str()) != Some(command) {
        ours.insert("command", toml_edit::value(command));
    }
    let args_ok = ours
        .get("args")
        .and_then(|a| a.as_array())
        .is_some_and(|a| a.iter().map(|v| v.as_str()).eq([Some("mcp")]));
    if !args_ok {
        ours.insert("args", toml_edit::value(args));
    }
    // The settings the user's shims see: Codex starts MCP servers with a filtered environment.
    if !env.is_empty() {
        let table = ours
            .entry("env")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| {
                EditError::Toml(format!("`mcp_servers.{MCP_SERVER}.env` is not a table"))
            })?;
        for (key, value) in env {
            if table.get(key).and_then(|v| v.as_str()) != Some(value.as_str()) {
                table.insert(key, toml_edit::value(value.as_str()));
            }
        }
    }
    Ok(doc.to_string())
}
