package org.apache.storm.scheduler;

/** As storm-client/src/jvm/org/apache/storm/scheduler/WorkerSlot.java. */
public class WorkerSlot {
    private final String nodeId;
    private final int port;

    public WorkerSlot(String nodeId, Number port) {
        this.nodeId = nodeId;
        this.port = port.intValue();
    }

    public String getNodeId() {
        return nodeId;
    }

    public int getPort() {
        return port;
    }

    public String getId() {
        return getNodeId() + ":" + getPort();
    }

    @Override
    public int hashCode() {
        return nodeId.hashCode() + 13 * ((Integer) port).hashCode();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof WorkerSlot)) {
            return false;
        }
        WorkerSlot other = (WorkerSlot) o;
        return this.port == other.port && this.nodeId.equals(other.nodeId);
    }

    @Override
    public String toString() {
        return this.nodeId + ":" + this.port;
    }
}
