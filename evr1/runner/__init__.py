"""The training loop: Ray actors (rollout, learner, reference, reward) and the driver."""
