"""Sparse payloads: what the data a collective moves weighs on the wire.

A Program is size-free. A payload description (`payloads.describe`) says what the data is:
dense, sparse with a density (independent supports), or real per-rank tensors. Every message
then gets a wire size from the contributions it carries (known from the verifier's symbolic
execution), their union support and the format chosen for it (`payloads.formats`,
`payloads.encoders`). See docs/payloads.md.
"""
