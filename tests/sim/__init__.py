"""Tests of backends.sim."""
