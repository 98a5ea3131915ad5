//! Team guidebooks kept in git: fetched into HOME_DIR/sources, refreshed in the background.
