"""The simulator's engines: one concept, each in a folder of its own.

An engine (:class:`~.choice.Engine`) is what runs one replication of a simulation: a
compiled kernel that takes named records (:mod:`.records`, and the engine's own
``records.py``), a plain-Python mirror that makes the same random draws (``mirror.py``, for
the tests), and the replication that runs it in the status loop and measurement window every
engine shares (:mod:`.replication`, :mod:`.window`).  The engines (:mod:`.registry`):

* ``servers`` (:mod:`.servers`): every server's queue and task kept apart; every policy,
  plug-ins included; the Markov clock, or the event list for any laws, speeds and traces;
  per-task records;
* ``counts`` (:mod:`.counts`): the farm as occupancy counts, at a cost that does not grow
  with N;
* ``classes`` (:mod:`.classes`): occupancy counts per class of equal speed;
* ``delay`` (:mod:`.delay`): each server apart, with late messages or each dispatcher's own
  view.

Which one runs a simulation is decided in one place, :func:`.choice.choose`, with its
reason; which policies each runs is the ``engines`` column of
:mod:`cloudsched.policy_table`.
"""
