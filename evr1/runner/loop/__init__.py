"""The driver of a run: the step (`train`), its phases (rewards, advantages), pipelining, data, metrics,
timing, checkpoints and resume, and the end-of-run report."""
