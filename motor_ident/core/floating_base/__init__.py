"""Floating-base robots (humanoids on their feet): free-flyer model, contact wrenches, identification."""
