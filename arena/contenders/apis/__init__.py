"""Model providers: one small client per API behind the contender protocol."""
