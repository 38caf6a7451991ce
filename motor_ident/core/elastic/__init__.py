"""Elastic joints: two-inertia model, dual encoders, three-loop identification."""
