"""Image intake (validate, normalise, hash) and storage."""
