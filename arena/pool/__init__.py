"""The pool policy: weighted pair sampling with a boost for new contenders
and target pairs, outage cool-downs, and identity-leak detection.

    policy = PoolPolicy.from_config(pool_config)
    a, b = policy.draw(rng, vote_counts)          # raises PoolExhausted
    policy.record_result(name, ok)                # after each side
    find_identity_leaks(texts, pool_config)       # [] or the names found
"""

from arena.pool.leaks import find_identity_leaks
from arena.pool.policy import PoolExhausted, PoolPolicy, SamplingConfig

__all__ = ["PoolExhausted", "PoolPolicy", "SamplingConfig", "find_identity_leaks"]
