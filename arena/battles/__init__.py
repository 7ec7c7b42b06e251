"""Battles: creation, the two concurrent streams, votes."""
