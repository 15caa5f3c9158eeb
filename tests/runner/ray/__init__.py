"""Tests of `evr1.runner.ray`."""
