"""The learner (pure torch, no Ray): log-probs, policy-gradient updates, batching, data parallel, optimizer,
learner checkpoints and the HF export."""
