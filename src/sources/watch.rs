//! File-system notifications for every source, with a slow poll as the fallback.
