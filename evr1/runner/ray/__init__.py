"""Ray plumbing of a run: the cluster and placement, the workers as actors, their storage checks, the reaper."""
