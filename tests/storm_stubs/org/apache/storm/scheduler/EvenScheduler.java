package org.apache.storm.scheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.storm.metric.StormMetricsRegistry;

/**
 * Stand-in for storm-server/.../scheduler/EvenScheduler.java: the public constructor,
 * prepare and schedule the scheduler calls.  It records the names of the topologies it is
 * given (the real one places their unassigned executors on free slots).
 */
public class EvenScheduler implements IScheduler {
    public static final List<String> GIVEN = new ArrayList<>();

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        for (TopologyDetails td : topologies.getTopologies()) {
            GIVEN.add(td.getName());
        }
    }

    @Override
    public Map<String, Map<String, Double>> config() {
        return null;
    }
}
