"""Tests of `evr1.runner.loop`."""
