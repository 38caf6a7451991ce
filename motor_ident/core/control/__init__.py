"""Feedforward and joint control laws: computed torque, PWM, VREC."""
