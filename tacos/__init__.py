"""tacos."""
