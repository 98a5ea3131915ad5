//! Answers `rpc.discover`: the OpenRPC document describing every method, compiled into the
//! binary from `rpc-schema/openrpc.json` so it can never drift from the running version.

use std::sync::OnceLock;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

pub const OPENRPC_DOCUMENT: &str = include_str!("../../rpc-schema/openrpc.json");

pub fn handle() -> serde_json::Value {
    static DOC: OnceLock<serde_json::Value> = OnceLock::new();
    DOC.get_or_init(|| {
        serde_json::from_str(OPENRPC_DOCUMENT).expect("rpc-schema/openrpc.json is valid JSON")
    })
    .clone()
}
