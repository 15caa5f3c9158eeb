"""Tests of `evr1.runner.learner`."""
