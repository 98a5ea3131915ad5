//! Reads beneath a repository root only: no symlinks, regular files, capped.
