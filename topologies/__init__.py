"""topologies."""
