package org.apache.storm.scheduler;

/** As storm-server/.../scheduler/INodeAssignmentSentCallBack.java. */
public interface INodeAssignmentSentCallBack {
    default void nodeAssignmentSent(String node, boolean successful) {
    }
}
