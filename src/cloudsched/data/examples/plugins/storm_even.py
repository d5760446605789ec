"""A placement plug-in: Storm's EvenScheduler order, written again as a plug-in.

On a cluster without CPU or memory limits it places every job where the built-in
``storm-default`` does, so for the same seed the two runs are the same::

    cloudsched place simulate examples/plugins/storm_even.py --cluster 4x4 \
        --workload examples/workload.yaml --horizon 200 --seed 1
    cloudsched place simulate storm-default --cluster 4x4 \
        --workload examples/workload.yaml --horizon 200 --seed 1

The hook gets the kernel's state ``st`` and model ``mo`` (read them through
``cloudsched.placement.view``), the job's type ``j`` and its number of nodes ``k``; it
writes the machine of node ``v`` into ``where[v]`` and returns True, or returns False to
let the job wait.  It may not allocate arrays.
"""

from cloudsched.placement import place_hook, register_placement
from cloudsched.placement import view as pv


@register_placement("storm-even")
class StormEven:
    """Storm's EvenScheduler order: machines by free slots, one slot of each in turn."""

    @place_hook
    def place(st, mo, j, k, where):
        most = 0
        for m in range(pv.machines(st)):
            most = max(most, pv.free_slots(st, m))
        v = 0
        for depth in range(most):  # a slot of each machine, then a second of each, ...
            for free in range(most, depth, -1):  # most free slots first, ties by index
                for m in range(pv.machines(st)):
                    if pv.free_slots(st, m) == free and v < k:
                        where[v] = m
                        v += 1
        return v == k
