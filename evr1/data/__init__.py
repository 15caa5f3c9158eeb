"""Data: records, media decoding and sampling, the LMDB tensor cache, synthetic data."""
