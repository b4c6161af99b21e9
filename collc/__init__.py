"""collc."""
