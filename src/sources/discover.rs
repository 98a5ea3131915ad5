//! The rule files a repository holds: a walk from its root over a fixed list of names and places.
