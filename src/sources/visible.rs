//! Rule text with invisible and bidirectional characters made visible.
