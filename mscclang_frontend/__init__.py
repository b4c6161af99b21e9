"""mscclang_frontend."""
