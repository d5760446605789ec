"""What arrives and how long it takes: laws, traces and access logs, read as workloads.

* :mod:`.distributions`: service-time and inter-arrival laws;
* :mod:`.resolved`: the resolved workload of one simulation (and the event-list engine's
  task sources);
* :mod:`.traces`: cluster traces (Google 2011, SWF, CSV); :mod:`.fastlogs` reads large ones
  by columns;
* :mod:`.accesslogs`: HTTP access logs (NGINX, Envoy, HAProxy);
* :mod:`.logs`: one entry point for every log (shipped names, format detection, digests);
* :mod:`.logfiles`: reading files safely (bounded lines, gzip).
"""
