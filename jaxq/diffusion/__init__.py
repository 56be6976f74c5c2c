"""Diffusion limits: workload coefficients, the HJB equation of the WCP, spare capacity."""
