package org.apache.storm.scheduler;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Stand-in for storm-server/.../scheduler/TopologyDetails.java: Storm builds it from the
 * topology (its executor-to-component map comes from nimbus); here the test gives the map.
 */
public class TopologyDetails {
    private final String topologyId;
    private final String name;
    private final int numWorkers;
    private final Map<ExecutorDetails, String> executorToComponents;

    public TopologyDetails(String topologyId, String name, int numWorkers,
                           Map<ExecutorDetails, String> executorToComponents) {
        this.topologyId = topologyId;
        this.name = name;
        this.numWorkers = numWorkers;
        this.executorToComponents = new HashMap<>(executorToComponents);
    }

    public String getId() {
        return topologyId;
    }

    public String getName() {
        return name;
    }

    public int getNumWorkers() {
        return numWorkers;
    }

    public Map<ExecutorDetails, String> getExecutorToComponent() {
        return executorToComponents;
    }

    public Set<ExecutorDetails> getExecutors() {
        return executorToComponents.keySet();
    }
}
