"""Xin et al. 2020: dual encoders and velocity-ripple elimination on a two-inertia joint."""
