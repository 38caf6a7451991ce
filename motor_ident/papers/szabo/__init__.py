"""Szabó & Szádeczky-Kardoss 2021: base parameters, static friction, LS vs WLS."""
