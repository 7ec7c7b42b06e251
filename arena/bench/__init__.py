"""The GeoBrowse benchmark as a command: `arena bench` runs pool contenders on
a GeoBrowse-format dataset, grades each answer (an LLM judge with a strict
JSON verdict, and the offline grader) and reports accuracy with intervals,
tool shares, milestone coverage and judge agreement. Results live in the
database, so a rerun resumes and the leaderboard can show them."""
