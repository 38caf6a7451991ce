"""Rigid-body dynamics: pinocchio model, regressor, base parameters, F/T sensor."""
