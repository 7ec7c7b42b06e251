"""What GATE's knowledge tools stand on: web search backends and the SSRF-safe page fetcher."""
