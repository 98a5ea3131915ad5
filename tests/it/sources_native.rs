//! The agents' rule formats read as guidelines, and `guidebook export` / `guidebook import` through the real binary.
