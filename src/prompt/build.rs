//! Assembles a prompt for one phase from a pack, a task and a context, and fits it to the phase's
//! token budget by cutting from the end (never into the CRITICAL block, the pack's own or the
//! seed's). Pure: reads only its
//! arguments; logs a `PromptTruncationWarning` when it cuts.

use std::fmt::Write as _;
use std::ops::Range;

use super::critical::CRITICAL_BLOCK;
use super::PromptPack;
use crate::tokens::Tokenizer;

/// How much of the pack a prompt discloses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// CRITICAL, the three core constraints and a one-line task summary; ≤ 600 tokens.
    Summary,
    /// CRITICAL, role, main rules, the first example and the whole task; ≤ 1,800 tokens.
    Standard,
    /// Everything, with the whole task and the context; not limited.
    Full,
}

impl Phase {
    pub const NAMES: [&'static str; 3] = ["summary", "standard", "full"];

    pub fn name(&self) -> &'static str {
        match self {
            Phase::Summary => "summary",
            Phase::Standard => "standard",
            Phase::Full => "full",
        }
    }

    pub fn from_name(name: &str) -> Option<Phase> {
        match name {
            "summary" => Some(Phase::Summary),
            "standard" => Some(Phase::Standard),
            "full" => Some(Phase::Full),
            _ => None,
        }
    }

    /// The phase's token budget. `full` has none: it is what the pack author wrote, and cutting
    /// it would make the flag-off path (every phase is `full`) lose content silently.
    pub fn limit(&self) -> Option<usize> {
        match self {
            Phase::Summary => Some(600),
            Phase::Standard => Some(1_800),
            Phase::Full => None,
        }
    }
}

/// What to build.
#[derive(Debug, Clone, Copy)]
pub struct PromptRequest<'a> {
    pub task: &'a str,
    /// A JSON object; shown in `full` only, keys sorted, as 2-space-indented JSON.
    pub context: Option<&'a serde_json::Map<String, serde_json::Value>>,
    pub phase: Phase,
}

/// One titled part of a built prompt, as a byte range of [`BuiltPrompt::text`] (after any cut).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: &'static str,
    pub range: Range<usize>,
}

/// A built prompt.
#[derive(Debug, Clone)]
pub struct BuiltPrompt {
    pub text: String,
    /// The phase actually built: `full` whenever progressive disclosure is off.
    pub phase: Phase,
    pub tokens: usize,
    pub truncated: bool,
    pub sections: Vec<Section>,
}

/// The longest one-line task summary, in characters, before it is cut at a word.
const SUMMARY_MAX_CHARS: usize = 200;

/// Builds the prompt. With `progressive` false (the `progressive_disclosure` flag is off for
/// this caller) the phase is `full` whatever was asked, so the output is byte-identical to a
/// `full` request.
pub fn build(
    pack: &PromptPack,
    request: PromptRequest<'_>,
    tokenizer: Tokenizer,
    progressive: bool,
) -> BuiltPrompt {
    let phase = if progressive {
        request.phase
    } else {
        Phase::Full
    };
    let mut out = Assembler::default();
    out.section("critical", critical_block(pack));
    let numbered = |items: &[String]| -> String {
        let mut s = String::new();
        for (i, item) in items.iter().enumerate() {
            let _ = writeln!(s, "{}. {}", i + 1, indent_continuation(item, "   "));
        }
        s
    };
    let bulleted = |items: &[String]| -> String {
        let mut s = String::new();
        for item in items {
            let _ = writeln!(s, "- {}", indent_continuation(item, "  "));
        }
        s
    };
    let example = |i: usize| -> String {
        let e = &pack.examples[i];
        format!("### Example {}: {}\n{}\n", i + 1, e.title, e.body)
    };
    match phase {
        Phase::Summary => {
            out.section(
                "core constraints",
                &format!("## Core constraints\n{}", numbered(&pack.core_constraints)),
            );
            out.section(
                "task",
                &format!("## Task (summary)\n{}\n", summarize_task(request.task)),
            );
        }
        Phase::Standard => {
            out.section("role", &format!("## Role\n{}\n", pack.role_definition));
            out.section(
                "rules",
                &format!("## Main rules\n{}", bulleted(&pack.rules)),
            );
            out.section("examples", &format!("## Example\n{}", example(0)));
            out.section("task", &format!("## Task\n{}\n", request.task.trim_end()));
        }
        Phase::Full => {
            out.section("role", &format!("## Role\n{}\n", pack.role_definition));
            out.section(
                "core constraints",
                &format!("## Core constraints\n{}", numbered(&pack.core_constraints)),
            );
            out.section(
                "rules",
                &format!("## Main rules\n{}", bulleted(&pack.rules)),
            );
            if !pack.workflow.is_empty() {
                out.section(
                    "workflow",
                    &format!("## Workflow\n{}", numbered(&pack.workflow)),
                );
            }
            if !pack.report_rules.is_empty() {
                out.section(
                    "report rules",
                    &format!("## Report rules\n{}", bulleted(&pack.report_rules)),
                );
            }
            let examples: Vec<String> = (0..pack.examples.len()).map(example).collect();
            out.section("examples", &format!("## Examples\n{}", examples.join("\n")));
            out.section("task", &format!("## Task\n{}\n", request.task.trim_end()));
            if let Some(context) = request.context.filter(|c| !c.is_empty()) {
                out.section(
                    "context",
                    &format!("## Context\n```json\n{}\n```\n", render_context(context)),
                );
            }
        }
    }

    let mut text = out.text;
    let mut sections = out.sections;
    // Within the limit (or without one) the count is the answer; over it, counting stops soon
    // after the limit and the prompt is fitted, so a huge task costs about the limit, not its
    // own length.
    let (tokens, truncated) = match phase.limit() {
        None => (tokenizer.count(&text), false),
        Some(limit) => match tokenizer.count_within(&text, limit) {
            Some(n) => (n, false),
            None => match fit(&mut text, &mut sections, pack, phase, tokenizer, limit) {
                Some(n) => (n, true),
                // The early-stopping count erred on the side of "over"; nothing was cut.
                None => (tokenizer.count(&text), false),
            },
        },
    };
    BuiltPrompt {
        text,
        phase,
        tokens,
        truncated,
        sections,
    }
}

/// Cuts `text` from the end to at most `limit` tokens, never into the CRITICAL block, clips the
/// sections to it, logs a `PromptTruncationWarning`, and returns the new count; `None` when the
/// whole text fits after all.
fn fit(
    text: &mut String,
    sections: &mut Vec<Section>,
    pack: &PromptPack,
    phase: Phase,
    tokenizer: Tokenizer,
    limit: usize,
) -> Option<usize> {
    // The block leads the text, trimmed as `Assembler::section` wrote it.
    let critical_end = critical_block(pack).trim_end().len();
    let cut = tokenizer.fit(text, limit).max(critical_end);
    if cut >= text.len() {
        return None;
    }
    text.truncate(cut);
    // A cut right after a newline or space leaves it dangling; the prompt ends cleanly.
    let trimmed = text.trim_end().len().max(critical_end);
    text.truncate(trimmed);
    let tokens = tokenizer.count(text);
    sections.retain_mut(|s| {
        s.range.end = s.range.end.min(text.len());
        s.range.start < s.range.end
    });
    tracing::warn!(
        target: "PromptTruncationWarning",
        role = %pack.role,
        phase = phase.name(),
        tokenizer = tokenizer.name(),
        tokens,
        limit,
        "PromptTruncationWarning: the {} prompt for role `{}` was over its limit of {limit} tokens; cut from the end to {tokens}",
        phase.name(),
        pack.role,
    );
    Some(tokens)
}

/// The block that leads every phase: the pack's own, else the seed's.
fn critical_block(pack: &PromptPack) -> &str {
    pack.critical.as_deref().unwrap_or(CRITICAL_BLOCK)
}

#[derive(Default)]
struct Assembler {
    text: String,
    sections: Vec<Section>,
}

impl Assembler {
    /// Appends a section, separated from the previous one by a blank line.
    fn section(&mut self, name: &'static str, body: &str) {
        if !self.text.is_empty() {
            self.text.push_str("\n\n");
        }
        let start = self.text.len();
        self.text.push_str(body.trim_end());
        self.sections.push(Section {
            name,
            range: start..self.text.len(),
        });
    }
}

/// Continuation lines of a multi-line list item, indented under its marker.
fn indent_continuation(item: &str, indent: &str) -> String {
    item.lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 || l.is_empty() {
                l.to_string()
            } else {
                format!("{indent}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The context as JSON with every object's keys sorted at every depth and 2-space indentation,
/// so the same context always renders to the same bytes, whatever order the caller sent.
fn render_context(context: &serde_json::Map<String, serde_json::Value>) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                serde_json::Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&sorted(&serde_json::Value::Object(context.clone())))
        .unwrap_or_default()
}

/// A one-line summary of a task: its first non-empty line, up to the end of its first sentence,
/// at most 200 characters (cut at a word, with `…`).
pub fn summarize_task(task: &str) -> String {
    let line = task
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    // The first sentence: up to a `.`, `!` or `?` followed by a space (so `v1.2` and `e.g`
    // inside a word do not end it), or a full stop of CJK text.
    let mut end = line.len();
    let bytes = line.as_bytes();
    for (i, c) in line.char_indices() {
        let ends_sentence = matches!(c, '.' | '!' | '?')
            && bytes.get(i + 1).is_some_and(|b| *b == b' ')
            || c == '。';
        if ends_sentence {
            end = i + c.len_utf8();
            break;
        }
    }
    let sentence = &line[..end];
    if sentence.chars().count() <= SUMMARY_MAX_CHARS {
        return sentence.to_string();
    }
    let cut = sentence
        .char_indices()
        .nth(SUMMARY_MAX_CHARS)
        .map(|(i, _)| i)
        .unwrap_or(sentence.len());
    let head = &sentence[..cut];
    let head = match head.rfind(char::is_whitespace) {
        Some(i) if i > cut / 2 => &head[..i],
        _ => head,
    };
    format!("{}…", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{Example, CRITICAL_LABELS};
    use serde_json::json;

    fn pack() -> PromptPack {
        PromptPack {
            role: "t".into(),
            description: None,
            critical: None,
            role_definition: "You are a test agent.".into(),
            core_constraints: vec![
                "c1".into(),
                "c2 first line\nsecond line".into(),
                "c3".into(),
            ],
            rules: vec!["r1".into(), "r2".into()],
            workflow: vec!["w1".into()],
            report_rules: vec!["rep1".into()],
            examples: vec![
                Example {
                    title: "one".into(),
                    body: "body one".into(),
                },
                Example {
                    title: "two".into(),
                    body: "body two".into(),
                },
            ],
            source: "/x".into(),
        }
    }

    fn req(task: &str, phase: Phase) -> PromptRequest<'_> {
        PromptRequest {
            task,
            context: None,
            phase,
        }
    }

    #[test]
    fn phases_pick_their_sections() {
        let p = pack();
        let names = |phase| -> Vec<&str> {
            build(&p, req("Do it. Then more.", phase), Tokenizer::Cl100k, true)
                .sections
                .iter()
                .map(|s| s.name)
                .collect()
        };
        assert_eq!(
            names(Phase::Summary),
            ["critical", "core constraints", "task"]
        );
        assert_eq!(
            names(Phase::Standard),
            ["critical", "role", "rules", "examples", "task"]
        );
        assert_eq!(
            names(Phase::Full),
            [
                "critical",
                "role",
                "core constraints",
                "rules",
                "workflow",
                "report rules",
                "examples",
                "task"
            ]
        );
        let s = build(
            &p,
            req("Do it. Then more.", Phase::Summary),
            Tokenizer::Cl100k,
            true,
        );
        assert!(s.text.starts_with(CRITICAL_BLOCK));
        assert!(s.text.ends_with("## Task (summary)\nDo it."), "{}", s.text);
        assert!(
            s.text.contains("2. c2 first line\n   second line\n3. c3"),
            "{}",
            s.text
        );
        let st = build(
            &p,
            req("Do it. Then more.", Phase::Standard),
            Tokenizer::Cl100k,
            true,
        );
        assert!(st.text.contains("### Example 1: one\nbody one") && !st.text.contains("body two"));
        assert!(st.text.ends_with("## Task\nDo it. Then more."));
        assert_eq!(st.tokens, Tokenizer::Cl100k.count(&st.text));
        assert!(!st.truncated);
        for s in &st.sections {
            assert!(!st.text[s.range.clone()].is_empty());
        }
    }

    #[test]
    fn flag_off_builds_full_for_every_phase() {
        let p = pack();
        let ctx = json!({"b": 1, "a": {"z": [1, {"y": 2, "x": 3}], "c": null}});
        let ctx = ctx.as_object().unwrap();
        let full = build(
            &p,
            PromptRequest {
                task: "t",
                context: Some(ctx),
                phase: Phase::Full,
            },
            Tokenizer::Cl100k,
            true,
        );
        for phase in [Phase::Summary, Phase::Standard, Phase::Full] {
            let b = build(
                &p,
                PromptRequest {
                    task: "t",
                    context: Some(ctx),
                    phase,
                },
                Tokenizer::Cl100k,
                false,
            );
            assert_eq!(b.phase, Phase::Full);
            assert_eq!(b.text, full.text);
        }
        assert!(full.text.ends_with(
            "## Context\n```json\n{\n  \"a\": {\n    \"c\": null,\n    \"z\": [\n      1,\n      {\n        \"x\": 3,\n        \"y\": 2\n      }\n    ]\n  },\n  \"b\": 1\n}\n```"
        ), "{}", full.text);
    }

    #[test]
    fn an_oversized_task_is_cut_to_the_limit_keeping_critical() {
        let p = pack();
        let task = "Refactor the order service and keep every consumer idempotent. ".repeat(20_000);
        for t in [Tokenizer::Cl100k, Tokenizer::O200k, Tokenizer::Estimate] {
            for phase in [Phase::Summary, Phase::Standard] {
                let started = std::time::Instant::now();
                let b = build(&p, req(&task, phase), t, true);
                let limit = phase.limit().unwrap();
                if phase == Phase::Summary {
                    // The summary carries one line of the task, so it stays small.
                    assert!(!b.truncated);
                    continue;
                }
                assert!(b.truncated, "{t}");
                assert!(
                    b.tokens <= limit && b.tokens + 20 >= limit,
                    "{t}: {}",
                    b.tokens
                );
                assert_eq!(b.tokens, t.count(&b.text));
                assert!(b.text.starts_with(CRITICAL_BLOCK));
                assert!(b.text.contains("## Task\nRefactor"));
                assert!(
                    started.elapsed() < std::time::Duration::from_secs(3),
                    "{t}: {:?}",
                    started.elapsed()
                );
                assert_eq!(b.sections.last().unwrap().name, "task");
                assert_eq!(b.sections.last().unwrap().range.end, b.text.len());
            }
        }
        // Full is never cut.
        let b = build(&p, req(&task, Phase::Full), Tokenizer::Cl100k, true);
        assert!(!b.truncated && b.tokens > 100_000);
    }

    #[test]
    fn a_pack_too_big_for_its_phase_is_cut_but_never_critical() {
        let mut p = pack();
        p.core_constraints = vec!["word ".repeat(1000), "x".into(), "y".into()];
        let b = build(&p, req("task", Phase::Summary), Tokenizer::Cl100k, true);
        assert!(b.truncated && b.tokens <= 600);
        assert!(b.text.starts_with(CRITICAL_BLOCK));
        for label in CRITICAL_LABELS {
            assert!(b.text.contains(label));
        }
    }

    /// A pack's own CRITICAL text leads every phase instead of the seed's, and stays whole when
    /// the phase is cut.
    #[test]
    fn a_packs_own_critical_block_leads_every_phase_and_is_never_cut() {
        let mut p = pack();
        let own = "[CRITICAL]\n- Forbidden: unauthorised external API calls.\n- QC: pyright and ruff pass first.\n- Report: a `.done` JSON file.";
        p.critical = Some(own.into());
        p.core_constraints = vec!["word ".repeat(1000), "x".into(), "y".into()];
        for phase in [Phase::Summary, Phase::Standard, Phase::Full] {
            for t in [Tokenizer::Cl100k, Tokenizer::Estimate] {
                let b = build(&p, req("task", phase), t, true);
                assert!(b.text.starts_with(&format!("{own}\n\n")), "{phase:?} {t}");
                assert!(!b.text.contains(CRITICAL_LABELS[0]), "{phase:?} {t}");
                assert_eq!(b.sections[0].name, "critical");
                assert_eq!(b.sections[0].range, 0..own.len());
                if phase == Phase::Summary {
                    assert!(b.truncated && b.tokens <= 600, "{t}: {}", b.tokens);
                }
            }
        }
    }

    #[test]
    fn task_summaries_are_one_line() {
        assert_eq!(
            summarize_task("\n  Fix the N+1 query in v1.2 of orders. Then add a test.\nMore"),
            "Fix the N+1 query in v1.2 of orders."
        );
        assert_eq!(summarize_task("Why is it slow? No idea"), "Why is it slow?");
        assert_eq!(
            summarize_task("주문 API를 고친다. 테스트도"),
            "주문 API를 고친다."
        );
        assert_eq!(summarize_task(""), "");
        let long = "word ".repeat(100);
        let s = summarize_task(&long);
        assert!(
            s.ends_with('…') && s.chars().count() <= 201 && !s.contains('\n'),
            "{s}"
        );
        let s = summarize_task(&"가".repeat(500));
        assert_eq!(s.chars().count(), 201);
    }
}
