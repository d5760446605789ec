package org.apache.storm.scheduler;

/** As storm-server/.../scheduler/ExecutorDetails.java (fields, equals, hashCode, toString). */
public class ExecutorDetails {
    public final int startTask;
    public final int endTask;

    public ExecutorDetails(int startTask, int endTask) {
        this.startTask = startTask;
        this.endTask = endTask;
    }

    public int getStartTask() {
        return startTask;
    }

    public int getEndTask() {
        return endTask;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof ExecutorDetails)) {
            return false;
        }
        ExecutorDetails executor = (ExecutorDetails) other;
        return (this.startTask == executor.startTask) && (this.endTask == executor.endTask);
    }

    @Override
    public int hashCode() {
        return this.startTask + 13 * this.endTask;
    }

    @Override
    public String toString() {
        return "[" + this.startTask + ", " + this.endTask + "]";
    }
}
