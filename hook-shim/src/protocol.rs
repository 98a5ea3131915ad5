//! The sidecar's JSON-RPC protocol for every client: method names, params builders, envelopes.
//!
//! The hook shim, `guidebook mcp` and the `guidebook` CLI all build their requests here, so a
//! method's name and its params' spelling exist once on the client side; the daemon's
//! `rpc/<method>.rs` `Params` are tested against these builders (the protocol-drift test), so
//! the two sides cannot drift apart. Reads and writes nothing but through the caller's
//! `exchange` closure in [`call`].
//!
//! Params are written in the contract's member order (not serde_json's sorted order), with
//! absent optional members left out, never sent as `null`.

use std::time::Duration;

use serde_json::Value;

use crate::client::ClientError;

/// The most paths one call may name (`filepaths`, `targets`): an agent's edit touches a handful
/// of files; a list this long is a bug on the caller's side, and refusing it keeps one request
/// from reading a tree. The sidecar refuses more; its own lists (a shell command's changed
/// files) stop here.
pub const MAX_FILEPATHS: usize = 1000;

/// Every method the sidecar answers, as sent on the wire.
pub mod method {
    pub const SEARCH: &str = "search";
    pub const EXPLAIN: &str = "explain";
    pub const RESET_SESSION: &str = "resetSession";
    pub const BUILD_PROMPT: &str = "buildPrompt";
    pub const STATUS: &str = "status";
    pub const GET_FLAGS: &str = "getFlags";
    pub const IS_ENABLED: &str = "isEnabled";
    pub const SET_FLAG: &str = "setFlag";
    pub const RECORD_ERROR: &str = "recordError";
    pub const BREAKER_STATUS: &str = "breakerStatus";
    pub const RESET_BREAKER: &str = "resetBreaker";
    pub const RECORD_QC_RESULT: &str = "recordQcResult";
    pub const RECORD_QC_REVIEW: &str = "recordQcReview";
    pub const RECORD_SESSION_TOKENS: &str = "recordSessionTokens";
    pub const AB_ASSIGN: &str = "abAssign";
    pub const BEGIN_SHELL_COMMAND: &str = "beginShellCommand";
    pub const END_SHELL_COMMAND: &str = "endShellCommand";
    pub const CHECK_EDIT: &str = "checkEdit";
    pub const DISCOVER: &str = "rpc.discover";

    /// All of them, in the order the OpenRPC document lists them.
    pub const ALL: [&str; 19] = [
        SEARCH,
        EXPLAIN,
        RESET_SESSION,
        BUILD_PROMPT,
        STATUS,
        GET_FLAGS,
        IS_ENABLED,
        SET_FLAG,
        RECORD_ERROR,
        BREAKER_STATUS,
        RESET_BREAKER,
        RECORD_QC_RESULT,
        RECORD_QC_REVIEW,
        RECORD_SESSION_TOKENS,
        AB_ASSIGN,
        BEGIN_SHELL_COMMAND,
        END_SHELL_COMMAND,
        CHECK_EDIT,
        DISCOVER,
    ];
}

/// The first line of the text handed to the agent after an edit. Part of the contract: the
/// shim shows it, and the sidecar counts it against a `search`'s `maxTokens`.
pub const CONTEXT_HEADER: &str = "Adaptive Guidebook guidelines relevant to the latest changes:";

/// The heading of the block of a repository's own rules, after the team's guidelines: they are
/// text from the repository (trusted by the user with `guidebook trust`), not the team's word.
pub const REPOSITORY_HEADER: &str =
    "From this repository's own rule files (trusted with `guidebook trust`; not the team's guidelines):";

/// One guideline as the hook text shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown<'a> {
    pub id: &'a str,
    pub content: &'a str,
    /// Where a guideline from outside the guidebook root came from (file and line).
    pub source: Option<&'a str>,
    /// A repository's own rule: shown in the repository's block.
    pub repository: bool,
}

impl<'a> Shown<'a> {
    /// A guideline of the guidebook root.
    pub fn root(id: &'a str, content: &'a str) -> Self {
        Shown {
            id,
            content,
            source: None,
            repository: false,
        }
    }
}

/// The text handed to the agent: [`CONTEXT_HEADER`], then per guideline [`guideline_block`],
/// the team's guidelines first and then, under [`REPOSITORY_HEADER`], the repository's own
/// rules (each part in the order given). The sidecar budgets `search` results on this same
/// text.
pub fn context_text<'a>(guidelines: impl IntoIterator<Item = Shown<'a>>) -> String {
    let mut text = String::from(CONTEXT_HEADER);
    let mut repository = Vec::new();
    for g in guidelines {
        if g.repository {
            repository.push(g);
        } else {
            text.push_str(&guideline_block(&g));
        }
    }
    if !repository.is_empty() {
        text.push_str("\n\n");
        text.push_str(REPOSITORY_HEADER);
        for g in repository {
            text.push_str(&guideline_block(&g));
        }
    }
    text
}

/// One guideline's part of the context text: a blank line, `[id]` (and its source in
/// parentheses, when it has one), a newline and the content with trailing whitespace removed.
pub fn guideline_block(g: &Shown<'_>) -> String {
    match g.source {
        Some(source) => format!("\n\n[{}] ({source})\n{}", g.id, g.content.trim_end()),
        None => format!("\n\n[{}]\n{}", g.id, g.content.trim_end()),
    }
}

/// The flag that turns the circuit breaker's hooks on, per session.
pub const HOOKS_ENABLED: &str = "hooks_enabled";
/// The flag that gates progressive disclosure in `buildPrompt`.
pub const PROGRESSIVE_DISCLOSURE: &str = "progressive_disclosure";

/// Taken off a caller's remaining budget when telling the sidecar its `deadlineMs`, so that the
/// answer still has time to travel back and be used.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(50);

/// A duration in whole milliseconds, saturating (for `deadlineMs`).
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The `deadlineMs` to send when `left` remains of the caller's patience.
pub fn deadline_ms(left: Duration) -> u64 {
    millis(left.saturating_sub(DEADLINE_MARGIN))
}

/// One method call, ready to be put in an envelope: the method and its params as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub method: &'static str,
    /// A JSON object, members in the contract's order.
    pub params: String,
}

impl Call {
    /// The JSON-RPC 2.0 request object for this call with `id`, members in the contract's order
    /// (`jsonrpc`, `id`, `method`, `params`).
    pub fn envelope(&self, id: u64) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{}}}"#,
            self.method, self.params
        )
    }

    /// The params as a JSON value (for tests and for callers that inspect them).
    pub fn params_value(&self) -> Value {
        serde_json::from_str(&self.params).unwrap_or(Value::Null)
    }
}

/// A JSON-RPC batch of `calls`, numbered from 1 in order.
pub fn batch(calls: &[Call]) -> String {
    let members: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| call.envelope(i as u64 + 1))
        .collect();
    format!("[{}]", members.join(","))
}

/// Writes a JSON object member by member, in the order given, leaving out absent ones.
struct Members(String);

impl Members {
    fn new() -> Members {
        Members(String::from("{"))
    }

    fn put(self, key: &str, value: impl Into<Value>) -> Members {
        self.put_raw(key, &value.into().to_string())
    }

    /// A member whose value is already JSON text.
    fn put_raw(mut self, key: &str, json: &str) -> Members {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push_str(&Value::from(key).to_string());
        self.0.push(':');
        self.0.push_str(json);
        self
    }

    fn close(mut self) -> String {
        self.0.push('}');
        self.0
    }

    fn opt(self, key: &str, value: Option<impl Into<Value>>) -> Members {
        match value {
            Some(value) => self.put(key, value),
            None => self,
        }
    }

    fn call(self, method: &'static str) -> Call {
        Call {
            method,
            params: self.close(),
        }
    }
}

/// `search`: the guidelines for changed files that the session has not been shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    pub session_id: String,
    pub filepaths: Vec<String>,
    pub deadline_ms: Option<u64>,
    pub max_tokens: Option<u64>,
    /// `written`: per path of `filepaths`, the `[first, last]` line ranges (1-based, inclusive)
    /// the edit wrote in the file as it is after the edit; left out when empty.
    pub written: Vec<(String, edits::LineRanges)>,
    /// `contents`: per path of `filepaths`, the file's content after the edit, matched instead
    /// of the file on disk; left out when empty.
    pub contents: Vec<(String, String)>,
}

impl Search {
    pub fn call(&self) -> Call {
        let mut members = Members::new()
            .put("sessionId", self.session_id.as_str())
            .put("filepaths", self.filepaths.as_slice())
            .opt("deadlineMs", self.deadline_ms)
            .opt("maxTokens", self.max_tokens);
        members = edit_members(members, &self.written, &self.contents);
        members.call(method::SEARCH)
    }
}

/// `beginShellCommand`: a shell command is about to run; keep what it may write as it is now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BeginShellCommand {
    pub session_id: String,
    /// Ties the command's begin to its end (the shim's: a hash of the command text).
    pub call_id: String,
    /// The absolute directory it runs in (its repository is the one watched).
    pub dir: Option<String>,
    /// Files it writes by name.
    pub targets: Vec<String>,
    /// Other files it names.
    pub mentioned: Vec<String>,
}

impl BeginShellCommand {
    pub fn call(&self) -> Call {
        Members::new()
            .put("sessionId", self.session_id.as_str())
            .put("callId", self.call_id.as_str())
            .opt("dir", self.dir.as_deref())
            .put("targets", self.targets.as_slice())
            .put("mentioned", self.mentioned.as_slice())
            .call(method::BEGIN_SHELL_COMMAND)
    }
}

/// `endShellCommand`: the command has run; search the files it changed, as `search` does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndShellCommand {
    pub session_id: String,
    pub call_id: String,
    pub dir: Option<String>,
    /// Files it writes by name (searched even when its begin was never seen).
    pub targets: Vec<String>,
    pub deadline_ms: Option<u64>,
    pub max_tokens: Option<u64>,
}

impl EndShellCommand {
    pub fn call(&self) -> Call {
        Members::new()
            .put("sessionId", self.session_id.as_str())
            .put("callId", self.call_id.as_str())
            .opt("dir", self.dir.as_deref())
            .put("targets", self.targets.as_slice())
            .opt("deadlineMs", self.deadline_ms)
            .opt("maxTokens", self.max_tokens)
            .call(method::END_SHELL_COMMAND)
    }
}

/// `written` and `contents`, each left out when empty.
fn edit_members(
    mut members: Members,
    written: &[(String, edits::LineRanges)],
    contents: &[(String, String)],
) -> Members {
    if !written.is_empty() {
        let ranges = written.iter().map(|(path, ranges)| {
            let ranges: Vec<Value> = ranges
                .as_slice()
                .iter()
                .map(|r| Value::from(r.to_vec()))
                .collect();
            (path.as_str(), Value::from(ranges))
        });
        members = members.put_raw("written", &object(ranges));
    }
    if !contents.is_empty() {
        let contents = contents
            .iter()
            .map(|(path, content)| (path.as_str(), Value::from(content.as_str())));
        members = members.put_raw("contents", &object(contents));
    }
    members
}

/// `checkEdit`: the `block` guidelines an edit about to be made would break, the files given
/// as they would be after it (`contents`), with the lines it would write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckEdit {
    pub session_id: String,
    pub filepaths: Vec<String>,
    pub deadline_ms: Option<u64>,
    pub written: Vec<(String, edits::LineRanges)>,
    pub contents: Vec<(String, String)>,
}

impl CheckEdit {
    pub fn call(&self) -> Call {
        let members = Members::new()
            .put("sessionId", self.session_id.as_str())
            .put("filepaths", self.filepaths.as_slice())
            .opt("deadlineMs", self.deadline_ms);
        edit_members(members, &self.written, &self.contents).call(method::CHECK_EDIT)
    }
}

/// A JSON object of `members` in the order given (a path may appear once; the builders never
/// repeat one).
fn object<'a>(members: impl IntoIterator<Item = (&'a str, Value)>) -> String {
    members
        .into_iter()
        .fold(Members::new(), |object, (key, value)| {
            object.put(key, value)
        })
        .close()
}

/// `explain`: why guidelines apply to files, recording nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Explain {
    pub filepaths: Vec<String>,
    pub session_id: Option<String>,
}

impl Explain {
    pub fn call(&self) -> Call {
        Members::new()
            .put("filepaths", self.filepaths.as_slice())
            .opt("sessionId", self.session_id.as_deref())
            .call(method::EXPLAIN)
    }
}

/// A call whose only param is `sessionId`: `resetSession`, `breakerStatus`, `resetBreaker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCall {
    pub method: &'static str,
    pub session_id: String,
}

impl SessionCall {
    pub fn reset_session(session_id: &str) -> SessionCall {
        SessionCall::new(method::RESET_SESSION, session_id)
    }
    pub fn breaker_status(session_id: &str) -> SessionCall {
        SessionCall::new(method::BREAKER_STATUS, session_id)
    }
    pub fn reset_breaker(session_id: &str) -> SessionCall {
        SessionCall::new(method::RESET_BREAKER, session_id)
    }
    fn new(method: &'static str, session_id: &str) -> SessionCall {
        SessionCall {
            method,
            session_id: session_id.to_owned(),
        }
    }
    pub fn call(&self) -> Call {
        Members::new()
            .put("sessionId", self.session_id.as_str())
            .call(self.method)
    }
}

/// `buildPrompt`: a prompt for a task under the phase's token budget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuildPrompt {
    pub task: String,
    /// A JSON object shown in the full phase.
    pub context: Option<serde_json::Map<String, Value>>,
    pub role: Option<String>,
    pub disclosure_phase: Option<String>,
    pub session_id: Option<String>,
}

impl BuildPrompt {
    pub fn call(&self) -> Call {
        Members::new()
            .put("task", self.task.as_str())
            .opt("context", self.context.clone().map(Value::Object))
            .opt("role", self.role.as_deref())
            .opt("disclosurePhase", self.disclosure_phase.as_deref())
            .opt("sessionId", self.session_id.as_deref())
            .call(method::BUILD_PROMPT)
    }
}

/// A call without params: `status`, `getFlags`, `rpc.discover`.
pub fn no_params(method: &'static str) -> Call {
    Members::new().call(method)
}

/// `isEnabled`: whether a flag is on for a rollout key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IsEnabled {
    pub flag: String,
    pub key: Option<String>,
}

impl IsEnabled {
    pub fn call(&self) -> Call {
        Members::new()
            .put("flag", self.flag.as_str())
            .opt("key", self.key.as_deref())
            .call(method::IS_ENABLED)
    }
}

/// `setFlag`: change a flag in the flags file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetFlag {
    pub flag: String,
    pub enabled: Option<bool>,
    pub rollout_percent: Option<u64>,
}

impl SetFlag {
    pub fn call(&self) -> Call {
        Members::new()
            .put("flag", self.flag.as_str())
            .opt("enabled", self.enabled)
            .opt("rolloutPercent", self.rollout_percent)
            .call(method::SET_FLAG)
    }
}

/// One error of a check run, as `recordError` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    pub tool: String,
    pub code: String,
    pub file: String,
}

/// `recordError`: one check run for the circuit breaker (an empty list is a clean run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordError {
    pub session_id: String,
    pub errors: Vec<CheckError>,
}

impl RecordError {
    pub fn call(&self) -> Call {
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|e| {
                Members::new()
                    .put("tool", e.tool.as_str())
                    .put("code", e.code.as_str())
                    .put("file", e.file.as_str())
                    .close()
            })
            .collect();
        Members::new()
            .put("sessionId", self.session_id.as_str())
            .put_raw("errors", &format!("[{}]", errors.join(",")))
            .call(method::RECORD_ERROR)
    }
}

/// `recordQcResult`: one QC run of a task, as an orchestrator reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordQcResult {
    pub task_id: String,
    pub session_id: Option<String>,
    pub passed: bool,
    /// `code_defect`, `report_format`, `task_interpretation` or `other`; only for a failure.
    pub issue_type: Option<String>,
    pub duration_sec: f64,
    pub model: String,
}

impl RecordQcResult {
    pub fn call(&self) -> Call {
        Members::new()
            .put("taskId", self.task_id.as_str())
            .opt("sessionId", self.session_id.as_deref())
            .put("passed", self.passed)
            .opt("issueType", self.issue_type.as_deref())
            .put("durationSec", self.duration_sec)
            .put("model", self.model.as_str())
            .call(method::RECORD_QC_RESULT)
    }
}

/// `recordQcReview`: the re-review of a QC-passed task (a defect found or not).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordQcReview {
    pub task_id: String,
    pub defect_found: bool,
    pub reviewer: Option<String>,
}

impl RecordQcReview {
    pub fn call(&self) -> Call {
        Members::new()
            .put("taskId", self.task_id.as_str())
            .put("defectFound", self.defect_found)
            .opt("reviewer", self.reviewer.as_deref())
            .call(method::RECORD_QC_REVIEW)
    }
}

/// `recordSessionTokens`: a session's token consumption so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordSessionTokens {
    pub session_id: String,
    pub tokens: u64,
}

impl RecordSessionTokens {
    pub fn call(&self) -> Call {
        Members::new()
            .put("sessionId", self.session_id.as_str())
            .put("tokens", self.tokens)
            .call(method::RECORD_SESSION_TOKENS)
    }
}

/// `abAssign`: a task's group (and QC model) in the haiku A/B test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbAssign {
    pub task_id: String,
}

impl AbAssign {
    pub fn call(&self) -> Call {
        Members::new()
            .put("taskId", self.task_id.as_str())
            .call(method::AB_ASSIGN)
    }
}

/// Why a JSON-RPC response carried no usable result.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseError {
    /// The body was not a JSON-RPC response object.
    Malformed(String),
    /// The sidecar answered with a JSON-RPC error object.
    Rpc { code: i64, message: String },
}

impl std::fmt::Display for ResponseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseError::Malformed(why) => write!(f, "malformed JSON-RPC response: {why}"),
            ResponseError::Rpc { code, message } => write!(f, "sidecar error {code}: {message}"),
        }
    }
}

impl std::error::Error for ResponseError {}

/// The `result` of a JSON-RPC 2.0 response body, or why there is none.
pub fn parse_response(body: &[u8]) -> Result<Value, ResponseError> {
    let response: Value = serde_json::from_slice(body)
        .map_err(|e| ResponseError::Malformed(format!("invalid JSON: {e}")))?;
    let Value::Object(mut response) = response else {
        return Err(ResponseError::Malformed("not an object".to_owned()));
    };
    if let Some(error) = response.get("error") {
        return Err(ResponseError::Rpc {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
        });
    }
    response
        .remove("result")
        .ok_or_else(|| ResponseError::Malformed("neither result nor error".to_owned()))
}

/// The successful results of a JSON-RPC batch response, by id. Errors and malformed members
/// are left out: the caller then treats them as unanswered.
pub fn batch_results(body: &[u8]) -> Vec<(u64, Value)> {
    let Ok(Value::Array(members)) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    members
        .into_iter()
        .filter_map(|mut m| {
            let id = m.get("id")?.as_u64()?;
            if m.get("error").is_some() {
                return None;
            }
            Some((id, m.get_mut("result")?.take()))
        })
        .collect()
}

/// Why [`call`] produced no result.
#[derive(Debug)]
pub enum CallError {
    /// The exchange itself failed: nothing listens, a timeout, bad HTTP.
    Exchange(ClientError),
    /// The sidecar answered, but not with a result.
    Response(ResponseError),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Exchange(e) => e.fmt(f),
            CallError::Response(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CallError {}

/// One call: `call` in an envelope (id 1) through `exchange`, which sends a request body and
/// returns the response body, and the response's `result`.
pub fn call(
    call: &Call,
    exchange: impl FnOnce(&str) -> Result<Vec<u8>, ClientError>,
) -> Result<Value, CallError> {
    let body = exchange(&call.envelope(1)).map_err(CallError::Exchange)?;
    parse_response(&body).map_err(CallError::Response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn search_params_keep_the_contract_order_and_leave_out_absent_members() {
        let search = Search {
            session_id: "sess \"1\"".into(),
            filepaths: vec!["/p/a.rs".into(), "/p/b c.kt".into()],
            deadline_ms: Some(1950),
            max_tokens: Some(2000),
            ..Search::default()
        };
        assert_eq!(
            search.call().envelope(1),
            r#"{"jsonrpc":"2.0","id":1,"method":"search","params":{"sessionId":"sess \"1\"","filepaths":["/p/a.rs","/p/b c.kt"],"deadlineMs":1950,"maxTokens":2000}}"#
        );
        let bare = Search {
            max_tokens: None,
            ..search
        };
        assert_eq!(
            bare.call().params_value(),
            json!({"sessionId": "sess \"1\"", "filepaths": ["/p/a.rs", "/p/b c.kt"], "deadlineMs": 1950})
        );
    }

    #[test]
    fn search_sends_written_lines_and_contents_by_path_in_order() {
        let search = Search {
            session_id: "s".into(),
            filepaths: vec!["/p/b.kt".into(), "/p/a.kt".into()],
            written: vec![
                ("/p/b.kt".into(), vec![[3, 3], [10, 12]].into()),
                ("/p/a.kt".into(), edits::LineRanges::new()),
            ],
            contents: vec![("/p/b.kt".into(), "x\n\"y\"\n".into())],
            deadline_ms: Some(5),
            max_tokens: None,
        };
        assert_eq!(
            search.call().params,
            r#"{"sessionId":"s","filepaths":["/p/b.kt","/p/a.kt"],"deadlineMs":5,"written":{"/p/b.kt":[[3,3],[10,12]],"/p/a.kt":[]},"contents":{"/p/b.kt":"x\n\"y\"\n"}}"#
        );
    }

    #[test]
    fn batches_number_their_members_from_one() {
        let body = batch(&[
            IsEnabled {
                flag: HOOKS_ENABLED.into(),
                key: Some("s".into()),
            }
            .call(),
            SessionCall::breaker_status("s").call(),
        ]);
        let parsed: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed[0]["id"], 1);
        assert_eq!(parsed[0]["method"], "isEnabled");
        assert_eq!(
            parsed[0]["params"],
            json!({"flag": "hooks_enabled", "key": "s"})
        );
        assert_eq!(parsed[1]["id"], 2);
        assert_eq!(parsed[1]["params"], json!({"sessionId": "s"}));
    }

    #[test]
    fn record_error_params() {
        let call = RecordError {
            session_id: "s".into(),
            errors: vec![CheckError {
                tool: "ruff".into(),
                code: "E501".into(),
                file: "/a.py".into(),
            }],
        }
        .call();
        assert_eq!(
            call.params,
            r#"{"sessionId":"s","errors":[{"tool":"ruff","code":"E501","file":"/a.py"}]}"#
        );
        assert_eq!(no_params(method::STATUS).params, "{}");
    }

    #[test]
    fn parses_results_and_errors() {
        assert_eq!(
            parse_response(br#"{"jsonrpc":"2.0","id":1,"result":[]}"#),
            Ok(json!([]))
        );
        assert_eq!(
            parse_response(br#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            Ok(Value::Null)
        );
        assert_eq!(
            parse_response(
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"deadline exceeded"}}"#
            ),
            Err(ResponseError::Rpc {
                code: -32001,
                message: "deadline exceeded".into()
            })
        );
        for bad in [&b"<html>"[..], b"[1]", br#"{"jsonrpc":"2.0","id":1}"#] {
            assert!(matches!(
                parse_response(bad),
                Err(ResponseError::Malformed(_))
            ));
        }
    }

    #[test]
    fn call_puts_the_request_in_an_envelope_and_returns_the_result() {
        let mut sent = String::new();
        let result = call(&no_params(method::GET_FLAGS), |body| {
            sent = body.to_owned();
            Ok(br#"{"jsonrpc":"2.0","id":1,"result":{"flags":{}}}"#.to_vec())
        });
        assert_eq!(result.unwrap(), json!({"flags": {}}));
        assert_eq!(
            sent,
            r#"{"jsonrpc":"2.0","id":1,"method":"getFlags","params":{}}"#
        );
        let down = call(&no_params(method::STATUS), |_| Err(ClientError::TimedOut));
        assert!(matches!(
            down,
            Err(CallError::Exchange(ClientError::TimedOut))
        ));
    }
}
