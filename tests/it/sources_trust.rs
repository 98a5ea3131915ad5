//! `guidebook trust`: what it shows and records, and every defense of reading a repository's rule files.
