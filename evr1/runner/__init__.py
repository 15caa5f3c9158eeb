"""Training: `loop/` (the driver: one step after another), `ray/` (the cluster, actors and workers the driver
runs on) and `learner/` (pure torch: log-probs, updates, batching, data parallel, checkpoints).

Imports go down only: `learner/` imports neither of the others, `ray/` never imports `loop/`.
"""
