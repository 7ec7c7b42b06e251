"""The database: typed tables, engine/session helpers, and repositories."""
