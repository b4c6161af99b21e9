"""chakra_ir."""
