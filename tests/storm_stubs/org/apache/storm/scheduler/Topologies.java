package org.apache.storm.scheduler;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/** Stand-in for storm-server/.../scheduler/Topologies.java (the constructors and getters used). */
public class Topologies {
    private final Map<String, TopologyDetails> topologies = new HashMap<>();

    public Topologies(TopologyDetails... details) {
        for (TopologyDetails d : details) {
            topologies.put(d.getId(), d);
        }
    }

    public Topologies(Map<String, TopologyDetails> topologies) {
        this.topologies.putAll(topologies);
    }

    public TopologyDetails getById(String topologyId) {
        return topologies.get(topologyId);
    }

    public Collection<TopologyDetails> getTopologies() {
        return topologies.values();
    }
}
