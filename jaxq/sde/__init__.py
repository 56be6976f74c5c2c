"""SDE schemes for the diffusion limits (one scheme per module).

Reflected workload SDE (2.15)/(2.24) of the switched-policies paper, ``dZ = b(Z) dt + sigma(Z) dB + dL`` on [0, inf):
  * ``coefficients``: piecewise-constant coefficients (jumps at levels), Lamperti coordinates;
  * ``driver``: the shared time loop (blocks of steps on the replication layer, noise in blocks, per-path keys,
    exact-weight discounted cost, snapshots Z(t));
  * ``euler``: projected Euler (baseline, weak order 1/2);
  * ``exact_step``: exact reflection of each step (Brownian-bridge minimum);
  * ``skew``: exact reflection plus exact skew-Brownian crossing of the jump levels (default);
  * ``estimators``: discounted cost with truncation bound, V_WCP(z0), Z(t), stationary-law check;
  * ``smoothed``: sigmoid-blended coefficients, differentiable cost for autodiff tuning.
``network_euler``: Euler scheme of the many-server network diffusion (the uniform-stability paper), a ``driver.Scheme``
run by the driver with the averaging window's step weights (``driver.WINDOW``).
"""
