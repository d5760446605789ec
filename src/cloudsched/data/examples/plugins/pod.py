"""Power-of-d choices written as a plug-in: the same runs as the built-in ``pod``.

Probe ``d`` servers (distinct unless ``--with-replacement``) and send the task to the first
least loaded in the sample order.  It makes the built-in's draws in the built-in's order
and shares its mean-field model (the start drawn from it, its relaxation time), so for the
same seed it gives the built-in's numbers exactly::

    cloudsched simulate examples/plugins/pod.py:pod-plugin --servers 1000 --load 0.9 --seed 1
    cloudsched simulate pod --servers 1000 --load 0.9 --seed 1
"""

from cloudsched.dispatch import hook, register_policy
from cloudsched.dispatch import view as v


@register_policy("pod-plugin", d="servers", with_replacement=True, meanfield="pod")
class PodPlugin:
    """Pod(d), written as a plug-in: probe d servers, join the first least loaded."""

    @hook
    def choose(st, par, rng, m):
        s = v.least_loaded(st, rng, par.d, par.replace)
        v.count(st, v.PROBE, par.d)  # d probe messages per task (counted while measuring)
        return s
