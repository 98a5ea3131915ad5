//! Every source watched: edits, renames, atomic replaces and recreated directories reach the sidecar without polling.
