"""Slow references and independent oracles, kept apart from the user-facing package.

* :mod:`.dispatch_mirror`: an order-faithful pure-Python transliteration of the dispatch
  kernel and its built-in policies (bit-for-bit differential tests);
* :mod:`.placement_mirror`: the same for the placement kernel;
* :mod:`.placement_oracles`: the max-weight configuration and DGP's product form by
  exhaustive enumeration (tiny clusters);
* :mod:`.exact_chain`: the exact stationary response time of tiny dispatch systems
  (a brute-force Markov chain, written from the policy descriptions);
* :mod:`.meanfield_oracle`: the mean-field fixed point by a plain series and Brent's method;
* :mod:`.balancer_logs`: access logs of a simulated proxy whose policy is known
  (``check-lb``'s tests).
"""

__all__: list[str] = []
