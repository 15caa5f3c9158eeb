"""What fits on a learner GPU: the model's shapes (`architecture`), the memory model (`memory`), and the
bridge from an experiment (`workload_of`) that `evr1 plan` prints."""
