package org.apache.storm.scheduler;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Stand-in for storm-server/.../scheduler/Cluster.java: the methods the scheduler calls, with
 * Storm's signatures.  assign refuses an occupied slot and an executor already assigned, as
 * Storm's Cluster.assign does (RuntimeException).
 */
public class Cluster {
    private final Map<String, SupervisorDetails> supervisors;
    private final Set<String> blacklisted;
    // slot -> topology id; executor assignments per topology
    private final Map<WorkerSlot, String> occupied = new HashMap<>();
    private final Map<String, Map<ExecutorDetails, WorkerSlot>> assignments = new LinkedHashMap<>();

    public Cluster(Map<String, SupervisorDetails> supervisors, Set<String> blacklisted) {
        this.supervisors = supervisors;
        this.blacklisted = blacklisted;
    }

    public Map<String, SupervisorDetails> getSupervisors() {
        return supervisors;
    }

    public boolean isBlackListed(String supervisorId) {
        return blacklisted.contains(supervisorId);
    }

    public boolean isSlotOccupied(WorkerSlot slot) {
        return occupied.containsKey(slot);
    }

    public Collection<ExecutorDetails> getUnassignedExecutors(TopologyDetails topology) {
        Set<ExecutorDetails> ret = new HashSet<>(topology.getExecutors());
        Map<ExecutorDetails, WorkerSlot> done = assignments.get(topology.getId());
        if (done != null) {
            ret.removeAll(done.keySet());
        }
        return ret;
    }

    public void assign(WorkerSlot slot, String topologyId, Collection<ExecutorDetails> executors) {
        if (isSlotOccupied(slot)) {
            throw new RuntimeException("slot: [" + slot.getNodeId() + ", " + slot.getPort() + "] is already occupied.");
        }
        Map<ExecutorDetails, WorkerSlot> done = assignments.computeIfAbsent(topologyId, k -> new LinkedHashMap<>());
        for (ExecutorDetails e : executors) {
            if (done.containsKey(e)) {
                throw new RuntimeException("Attempting to assign executor: " + e + " already assigned");
            }
        }
        for (ExecutorDetails e : executors) {
            done.put(e, slot);
        }
        occupied.put(slot, topologyId);
    }

    public Collection<WorkerSlot> getUsedSlotsByTopologyId(String topologyId) {
        Set<WorkerSlot> ret = new HashSet<>();
        Map<ExecutorDetails, WorkerSlot> done = assignments.get(topologyId);
        if (done != null) {
            ret.addAll(done.values());
        }
        return ret;
    }

    public void freeSlots(Collection<WorkerSlot> slots) {
        for (WorkerSlot slot : slots) {
            occupied.remove(slot);
            for (Map<ExecutorDetails, WorkerSlot> done : assignments.values()) {
                done.values().removeIf(slot::equals);
            }
        }
    }

    /** Test access: every executor's slot, per topology id. */
    public Map<String, Map<ExecutorDetails, WorkerSlot>> assignments() {
        return assignments;
    }

    /** Test access: mark a slot taken by another topology. */
    public void occupy(WorkerSlot slot, String topologyId) {
        occupied.put(slot, topologyId);
    }
}
