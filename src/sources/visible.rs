//! Rule text with invisible and bidirectional characters made visible.
//!
//! A rule file is reviewed by a person in a terminal and read by a model as raw text; the two
//! must not differ. Characters that render as nothing, reorder what is shown (bidi overrides,
//! the "Trojan Source" trick), hide text from the reader (Unicode tag characters, which models
//! do read) or drive the terminal (escape sequences) are shown as `<U+XXXX>` by [`visible`].

/// `text` with every hidden character replaced by `<U+XXXX>`, and how many there were.
///
/// Hidden: C0 and C1 controls other than `\n` and `\t` (so also `\r`, and ESC, which would let
/// a file drive the terminal it is reviewed in), the soft hyphen U+00AD, the Arabic letter mark
/// U+061C, the Mongolian vowel separator U+180E, zero-width and direction marks U+200B–U+200F,
/// line and paragraph separators U+2028–U+2029, bidi embeddings and overrides U+202A–U+202E,
/// invisible operators U+2060–U+2064, bidi isolates U+2066–U+2069, deprecated format characters
/// U+206A–U+206F, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, the byte-order mark
/// U+FEFF, interlinear annotations U+FFF9–U+FFFB, tags U+E0000–U+E007F, and variation selectors
/// U+FE00–U+FE0F and U+E0100–U+E01EF.
pub fn visible(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut hidden = 0;
    for c in text.chars() {
        if is_hidden(c) {
            hidden += 1;
            out.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            out.push(c);
        }
    }
    (out, hidden)
}

/// Whether `c` is one of the characters [`visible`] shows as `<U+XXXX>`.
pub fn is_hidden(c: char) -> bool {
    matches!(c as u32,
        0x00..=0x08 | 0x0B..=0x1F | 0x7F..=0x9F
        | 0xAD | 0x061C | 0x115F | 0x1160 | 0x180E
        | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB
        | 0xE0000..=0xE007F | 0xE0100..=0xE01EF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_unchanged() {
        let text = "# Rules\n\tUse `api::Client`; café, 東京, emoji 🙂.\n";
        assert_eq!(visible(text), (text.to_string(), 0));
    }

    #[test]
    fn bidi_overrides_and_isolates_are_shown() {
        let (shown, n) = visible("access\u{202E} \u{2066}// admin\u{2069}\u{2066}");
        assert_eq!(shown, "access<U+202E> <U+2066>// admin<U+2069><U+2066>");
        assert_eq!(n, 4);
    }

    #[test]
    fn every_listed_range_is_shown_at_both_ends() {
        for c in [
            '\0',
            '\u{08}',
            '\u{0B}',
            '\r',
            '\u{1B}',
            '\u{1F}',
            '\u{7F}',
            '\u{85}',
            '\u{9F}',
            '\u{AD}',
            '\u{61C}',
            '\u{180E}',
            '\u{200B}',
            '\u{200F}',
            '\u{202A}',
            '\u{202E}',
            '\u{2060}',
            '\u{2064}',
            '\u{2066}',
            '\u{2069}',
            '\u{FEFF}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{E0000}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{FE00}',
            '\u{FE0F}',
            '\u{E0100}',
            '\u{E01EF}',
        ] {
            let (shown, n) = visible(&format!("a{c}b"));
            assert_eq!(n, 1, "U+{:04X}", c as u32);
            assert_eq!(shown, format!("a<U+{:04X}>b", c as u32));
        }
        for c in [
            '\n',
            '\t',
            ' ',
            '\u{A0}',
            '\u{2010}',
            '\u{2065}',
            '\u{E0080}',
            '\u{FE10}',
        ] {
            assert!(!is_hidden(c), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn tag_smuggled_text_and_terminal_escapes_are_shown() {
        // "hi" spelled in tag characters, invisible in a terminal but read by a model.
        let (shown, n) = visible("ok\u{E0068}\u{E0069}");
        assert_eq!((shown.as_str(), n), ("ok<U+E0068><U+E0069>", 2));
        let (shown, _) = visible("\u{1B}[2J\u{1B}]0;title\u{7}");
        assert!(!shown.contains('\u{1B}'));
        assert_eq!(shown, "<U+001B>[2J<U+001B>]0;title<U+0007>");
    }
}
