"""Power-of-d choices with memory, a policy from the literature written as a plug-in.

Mitzenmacher, Prabhakar and Shah, "Load balancing with memory" (FOCS 2002), and Shah and
Prabhakar, "The use of memory in randomized load balancing" (ISIT 2002): a dispatcher
remembers the least loaded server it saw at its last decision.  At an arrival it probes
``d`` fresh servers and the remembered one, sends the task to the least loaded of them
(the remembered server on ties), and then remembers the least loaded of those ``d + 1``
counting the task just sent.  Memory makes a small ``d`` much stronger, at the cost of one
more probe per task: with one dispatcher, N = 1000 and load 0.9, ``d = 1`` with memory
gives a mean response time of about 3.2, against 10 for ``d = 1`` without (random), though
not yet the 2.6 of Pod(2) without memory (measured with the command below and
``cloudsched simulate pod --servers 1000 --load 0.9 --d 2``).

Each dispatcher keeps its own memory (``st.mem[m]``), so with several dispatchers the
memories are independent.  Probes counted: ``d`` per task, plus one for the remembered
server once there is one::

    cloudsched simulate examples/plugins/pod_memory.py --servers 1000 --load 0.9 --d 1
"""

from cloudsched.dispatch import hook, register_policy
from cloudsched.dispatch import view as v


@register_policy(
    "pod-memory", d="servers", with_replacement=True, dispatchers="optional", memory="dispatchers"
)
class PodWithMemory:
    """Pod(d) with memory: d probes plus the least loaded server of the last decision."""

    @hook
    def on_start(st, par, rng, given):
        for m in range(par.m):
            st.mem[m] = -1  # nothing remembered yet

    @hook
    def choose(st, par, rng, m):
        d = par.d
        v.sample_servers(st, rng, d, par.replace)  # the d probed servers, in st.sample[:d]
        v.count(st, v.PROBE, d)
        best = st.mem[m]
        if best >= 0:
            v.count(st, v.PROBE, 1)
        for k in range(d):
            s = st.sample[k]
            if best < 0 or v.queue_length(st, s) < v.queue_length(st, best):
                best = s
        # remember the least loaded of the servers seen, counting the task sent to `best`
        keep, keep_len = best, v.queue_length(st, best) + 1
        for k in range(d):
            s = st.sample[k]
            if v.queue_length(st, s) + (s == best) < keep_len:
                keep, keep_len = s, v.queue_length(st, s)
        st.mem[m] = keep
        return best
