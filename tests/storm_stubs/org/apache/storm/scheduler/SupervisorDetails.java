package org.apache.storm.scheduler;

import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/** Stand-in for storm-server/.../scheduler/SupervisorDetails.java: id, host, ports. */
public class SupervisorDetails {
    private final String id;
    private final String host;
    private final Set<Integer> allPorts = new HashSet<>();

    // Storm: SupervisorDetails(String id, String host, Object schedulerMeta, Collection<? extends Number> allPorts)
    public SupervisorDetails(String id, String host, Object schedulerMeta, Collection<? extends Number> allPorts) {
        this.id = id;
        this.host = host;
        for (Number p : allPorts) {
            this.allPorts.add(p.intValue());
        }
    }

    public String getId() {
        return id;
    }

    public String getHost() {
        return host;
    }

    public Set<Integer> getAllPorts() {
        return allPorts;
    }
}
