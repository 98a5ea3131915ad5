//! A trusted repository's rules as guidelines of their own id namespace.
