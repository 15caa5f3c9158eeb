"""lmms-eval integration: the `evr1` chat model (`model`) and the `evals/` task folders bound to local data (`tasks`)."""
