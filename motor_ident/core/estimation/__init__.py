"""Least squares, online identification, gate and physical consistency."""
