"""A live load-balancing lab on this machine's loopback interface.

Real processes: ``N`` servers (one task at a time, FIFO), ``M`` dispatchers (the lab's own
forwarders running random, round-robin, jsq, pod, jiq and jiq-pod with real I-queue
messages and probes, or independent NGINX/HAProxy instances), and an open-loop Poisson
generator.  :func:`run_lab` runs one :class:`LabSpec` and returns a :class:`LabResult`
whose ``record`` has the fields of :func:`cloudsched.dispatch.simulate`'s result.
"""

from cloudsched.lab.result import LabResult
from cloudsched.lab.run import run_lab
from cloudsched.lab.spec import LAB_POLICIES, PROXY_POLICIES, LabSpec

__all__ = ["LAB_POLICIES", "PROXY_POLICIES", "LabResult", "LabSpec", "run_lab"]
