//! `trust.json`: the repositories the user trusted, with a hash of each rule file.
