"""Server-rendered pages of the arena (Jinja2 templates under `templates/`)."""
