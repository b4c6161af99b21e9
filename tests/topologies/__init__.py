"""Tests of the topologies package."""
