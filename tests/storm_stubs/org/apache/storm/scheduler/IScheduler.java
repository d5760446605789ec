package org.apache.storm.scheduler;

import java.util.Map;
import org.apache.storm.metric.StormMetricsRegistry;

/** As storm-server/.../scheduler/IScheduler.java (the whole interface). */
public interface IScheduler extends INodeAssignmentSentCallBack {

    void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry);

    void schedule(Topologies topologies, Cluster cluster);

    Map config();

    default void cleanup() {
    }
}
