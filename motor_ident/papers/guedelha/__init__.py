"""Guedelha et al. 2021: motor parameters on coupled joints (iCub)."""
