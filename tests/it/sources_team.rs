//! Team guidebooks from git: a local bare repository as the team remote, fetched, refreshed, kept when offline.
