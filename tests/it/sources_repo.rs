//! A trusted repository's rules served by the real sidecar and the real shim; an untrusted one's never.
