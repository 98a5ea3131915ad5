//! The one shell lexer: a command text split into words, redirections and command ends as a
//! shell splits it, without expanding anything. Reads and writes nothing.

/// A shell token: a word (quotes removed), a redirection operator (with its file descriptor
/// digits, `2>`; a duplication ends in `&`: `2>&`), or anything that ends a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Word(String),
    Redirect(String),
    Control,
}

/// Splits a command text into tokens as a shell would, without expanding anything: quotes
/// and backslashes respected, `$(…)` and backquotes kept inside their word.
pub fn lex(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let finish = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' => {
                in_word = true;
                if let Some(&next) = chars.get(i + 1) {
                    if next != '\n' {
                        word.push(next);
                    }
                    i += 1;
                }
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                // A substitution stays in its word (which then names no file).
                in_word = true;
                let mut depth = 0;
                while i < chars.len() {
                    word.push(chars[i]);
                    match chars[i] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            '`' => {
                in_word = true;
                word.push(c);
                i += 1;
                while i < chars.len() && chars[i] != '`' {
                    word.push(chars[i]);
                    i += 1;
                }
                word.push('`');
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            ';' | '|' | '(' | ')' | '\n' => {
                finish(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Control);
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                finish(&mut word, &mut in_word, &mut tokens);
                let append = chars.get(i + 2) == Some(&'>');
                tokens.push(Token::Redirect(if append { "&>>" } else { "&>" }.into()));
                i += if append { 3 } else { 2 };
                continue;
            }
            '&' => {
                finish(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Control);
            }
            '>' | '<' => {
                // Digits just before, as a word of their own, are the descriptor: `2>`.
                let fd = if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    in_word = false;
                    std::mem::take(&mut word)
                } else {
                    finish(&mut word, &mut in_word, &mut tokens);
                    String::new()
                };
                let mut op = fd;
                op.push(c);
                i += 1;
                while i < chars.len() && matches!(chars[i], '>' | '<' | '|' | '&' | '-') {
                    // `>|`, `>>`, `<<`, `<<-`, `<>`, `>&`: one operator.
                    if chars[i] == '|' && !op.ends_with('>') {
                        break;
                    }
                    if chars[i] == '-' && !op.ends_with("<<") {
                        break;
                    }
                    op.push(chars[i]);
                    i += 1;
                }
                if op.ends_with("<<") || op.ends_with("<<-") || op.ends_with("<<<") {
                    // A heredoc's delimiter or a here-string: not a file. Skip its word.
                    while i < chars.len() && chars[i].is_whitespace() && chars[i] != '\n' {
                        i += 1;
                    }
                    while i < chars.len()
                        && !chars[i].is_whitespace()
                        && !";|&()".contains(chars[i])
                    {
                        i += 1;
                    }
                    continue;
                }
                tokens.push(Token::Redirect(op));
                continue;
            }
            c if c.is_whitespace() => finish(&mut word, &mut in_word, &mut tokens),
            c => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    finish(&mut word, &mut in_word, &mut tokens);
    tokens
}

/// The words of `text` as a shell splits them (quotes and backslashes removed), its
/// redirection operators and command ends left out.
pub fn words(text: &str) -> Vec<String> {
    lex(text)
        .into_iter()
        .filter_map(|token| match token {
            Token::Word(word) => Some(word),
            Token::Redirect(_) | Token::Control => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Token {
        Token::Word(s.to_string())
    }

    #[test]
    fn words_quotes_redirections_and_command_ends() {
        assert_eq!(
            lex("a 'b c' \"d\\\"e\" f\\ g 2>err; h|i && j > k # no"),
            [
                w("a"),
                w("b c"),
                w("d\"e"),
                w("f g"),
                Token::Redirect("2>".into()),
                w("err"),
                Token::Control,
                w("h"),
                Token::Control,
                w("i"),
                Token::Control,
                Token::Control,
                w("j"),
                Token::Redirect(">".into()),
                w("k"),
            ]
        );
        assert_eq!(
            lex("echo $(a b) `c d`"),
            [w("echo"), w("$(a b)"), w("`c d`")]
        );
        assert_eq!(words("cat <<'EOF' > out"), ["cat", "out"]);
    }
}
