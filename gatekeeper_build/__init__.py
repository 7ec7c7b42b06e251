"""The gatekeeper's build: corpus, fitting and evaluation, outside the installed package
(`python -m gatekeeper_build --help`). The arena never imports it; it may import the arena."""
