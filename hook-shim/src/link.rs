//! How the hook reaches the sidecar ([`SidecarLink`]): one JSON-RPC exchange per call, over
//! the shim's socket client or `guidebook mcp`'s kept-alive connection. Reads and writes
//! nothing itself.

use crate::client::ClientError;

/// How the hook reaches the sidecar: one JSON-RPC exchange per call.
pub trait SidecarLink {
    /// Sends one request body and returns the response body. `body` builds the request from
    /// the caller's remaining patience in milliseconds (for `deadlineMs`), measured when the
    /// request is about to be sent, after any connect. `may_start` is true for the event's
    /// first question (its `search` or `resetSession`): only that one may start a sidecar
    /// that is not running.
    fn exchange(
        &mut self,
        body: &dyn Fn(u64) -> String,
        may_start: bool,
    ) -> Result<Vec<u8>, ClientError>;

    /// Reports a problem that costs the agent its answer (the hook itself stays silent).
    fn report(&mut self, problem: &str);
}

/// A sidecar for unit tests: it answers from a script and remembers what it was asked.
#[cfg(test)]
pub(crate) mod scripted {
    use super::SidecarLink;
    use crate::client::ClientError;

    pub(crate) struct Scripted {
        /// The deadline each request body is asked for.
        deadline_ms: u64,
        answers: Vec<Result<String, ()>>,
        /// Whether the last answer stays for every exchange after it; else each answer is
        /// given once (and an exchange past them all panics).
        keep_last: bool,
        /// Each request body and whether the sidecar might have been started for it.
        pub(crate) asked: Vec<(String, bool)>,
        pub(crate) reports: Vec<String>,
    }

    impl Scripted {
        /// Answers every exchange with `answer` (`Err`: timed out).
        pub(crate) fn always(answer: Result<&str, ()>, deadline_ms: u64) -> Scripted {
            Scripted::new(vec![answer], true, deadline_ms)
        }

        /// Answers the exchanges with `answers` in turn, each once.
        pub(crate) fn in_turn(answers: Vec<Result<&str, ()>>, deadline_ms: u64) -> Scripted {
            Scripted::new(answers, false, deadline_ms)
        }

        fn new(answers: Vec<Result<&str, ()>>, keep_last: bool, deadline_ms: u64) -> Scripted {
            Scripted {
                deadline_ms,
                answers: answers.into_iter().map(|a| a.map(str::to_owned)).collect(),
                keep_last,
                asked: Vec::new(),
                reports: Vec::new(),
            }
        }
    }

    impl SidecarLink for Scripted {
        fn exchange(
            &mut self,
            body: &dyn Fn(u64) -> String,
            may_start: bool,
        ) -> Result<Vec<u8>, ClientError> {
            self.asked.push((body(self.deadline_ms), may_start));
            let answer = if self.keep_last && self.answers.len() == 1 {
                self.answers[0].clone()
            } else {
                self.answers.remove(0)
            };
            match answer {
                Ok(answer) => Ok(answer.into_bytes()),
                Err(()) => Err(ClientError::TimedOut),
            }
        }
        fn report(&mut self, problem: &str) {
            self.reports.push(problem.to_owned());
        }
    }
}
