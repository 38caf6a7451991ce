"""Excitation trajectories: Fourier series and their optimal design."""
