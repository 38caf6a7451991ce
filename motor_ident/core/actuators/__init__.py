"""Friction, motors, transmissions and coupled motor chains."""
