//! A file wholly ours, known by its first line: our OpenCode plugin, our Gemini CLI policy file.
//!
//! Installing writes it whole (refused when a file of that name is someone else's), and
//! uninstalling empties it, which removes it; a file without the marker is never touched.

use super::json_tree::EditError;

/// One kind of file of ours: its first line, what it is, and the install flag that writes it.
pub struct Marked {
    pub marker: &'static str,
    pub what: &'static str,
    pub flag: &'static str,
}

impl Marked {
    /// Whether `text` is ours.
    pub fn is_ours(&self, text: &str) -> bool {
        text.starts_with(self.marker)
    }

    /// Refused unless `text`, the file as it is, is empty or ours.
    pub fn refuse_unless_ours(&self, text: &str) -> Result<(), EditError> {
        if text.is_empty() || self.is_ours(text) {
            return Ok(());
        }
        Err(EditError::Shape(format!(
            "it is not a {} `guidebook hooks install {}` wrote (its first line is not `{}`): \
             guidebook leaves it alone; move it away to install ours",
            self.what, self.flag, self.marker
        )))
    }

    /// The file without ours: empty when it was ours, as it is otherwise.
    pub fn uninstall(&self, text: &str) -> String {
        if self.is_ours(text) {
            String::new()
        } else {
            text.to_string()
        }
    }
}
