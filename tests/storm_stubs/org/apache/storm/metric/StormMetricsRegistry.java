package org.apache.storm.metric;

/** Stand-in: storm-server/src/main/java/org/apache/storm/metric/StormMetricsRegistry.java. */
public class StormMetricsRegistry {
}
