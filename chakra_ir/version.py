"""collc's version: the one place it is written (pyproject.toml reads it from here), so that
manifests and bundles can state it without asking the installed package's metadata, which
costs a noticeable part of a short command's start-up."""

VERSION = "0.1.0"
