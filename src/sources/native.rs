//! The agents' rule formats read as guidelines: front matter, globs, bodies.
