"""Audits of the arena's own blind spots (`arena audit ...`); they read the database."""
