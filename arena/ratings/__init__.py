"""Ratings: pure numpy/scipy maths turning votes into a leaderboard snapshot.

Nothing in this package but `job.py` touches the database; `bt`, `style`,
`elo`, `filters` and `leaderboard` work on plain arrays and dicts.
"""
