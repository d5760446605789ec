/*
 * cloudsched's Storm scheduler: runs a placement written by
 * `cloudsched place static --assignment placement.json` and leaves the rest to Storm's
 * EvenScheduler.
 *
 * Nimbus loads it as its scheduler (storm.yaml on the nimbus host):
 *
 *     storm.scheduler: "cloudsched.storm.AssignmentScheduler"
 *     cloudsched.assignment.file: "/etc/storm/placement.json"
 *
 * At each scheduling round, for every topology that has executors without a worker slot:
 * if the file places a topology of that name and names exactly the topology's executors
 * (the same [startTask, endTask] ranges and components, as nimbus computed them), each of
 * the file's workers gets its executors on the supervisor whose host (or id) the file
 * names, at the named port, when that slot is free.  A worker whose slot is taken or gone
 * (its supervisor died) moves whole to another free slot: on the same host if it has one,
 * else on the supervisor with most free slots; with no free slot at all its executors wait
 * for the next round.  A topology the file does not name, or names with other executors,
 * is left to EvenScheduler, as Storm's own default would place it; if it runs on more
 * workers than its topology.workers (a placement from the file that no longer applies),
 * its workers are freed first, since EvenScheduler expects at most that many.  The file is
 * read again when its modification time or size changes; a file that cannot be read or
 * does not parse is logged and the last good one (or none) is kept.
 *
 * Written against the Storm 2.x scheduler API (apache/storm, storm-server's
 * org.apache.storm.scheduler: IScheduler, Cluster, TopologyDetails, Topologies,
 * SupervisorDetails, ExecutorDetails, WorkerSlot, EvenScheduler; read at commit 73da988).
 * Needs only the JDK (Java 8 or later) and Storm's own jars.
 */
package cloudsched.storm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.EvenScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class AssignmentScheduler implements IScheduler {
    /** The storm.yaml key naming the assignment file. */
    public static final String FILE = "cloudsched.assignment.file";
    /** The only file format read (`format` in the file). */
    public static final String FORMAT = "cloudsched-storm-assignment/2";
    private static final long MAX_BYTES = 64L << 20;
    private static final Logger LOG = LoggerFactory.getLogger(AssignmentScheduler.class);

    private final EvenScheduler even = new EvenScheduler();
    private Path path;
    private long mtime = Long.MIN_VALUE;
    private long size = -1;
    private Map<String, List<Worker>> plans = Collections.emptyMap();

    /** One worker of the file: a slot and the executors it runs (with their components). */
    static final class Worker {
        final String host;
        final int port;
        final Map<ExecutorDetails, String> executors;

        Worker(String host, int port, Map<ExecutorDetails, String> executors) {
            this.host = host;
            this.port = port;
            this.executors = executors;
        }
    }

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
        even.prepare(conf, metricsRegistry);
        Object file = conf.get(FILE);
        if (file == null) {
            LOG.warn("{} is not set: EvenScheduler places every topology", FILE);
            return;
        }
        path = Paths.get(file.toString());
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        Map<String, List<Worker>> current = load();
        Map<String, TopologyDetails> rest = new HashMap<>();
        for (TopologyDetails td : topologies.getTopologies()) {
            if (cluster.getUnassignedExecutors(td).isEmpty()) {
                continue;
            }
            List<Worker> plan = current.get(td.getName());
            String why = plan == null ? "not in the assignment file" : mismatch(plan, td);
            if (why == null) {
                place(plan, td, cluster);
                continue;
            }
            LOG.info("{}: {}: left to EvenScheduler", td.getName(), why);
            Collection<WorkerSlot> used = cluster.getUsedSlotsByTopologyId(td.getId());
            if (used.size() > td.getNumWorkers()) {
                // EvenScheduler.scheduleTopology fails on more live workers than it may use
                LOG.info("{}: {} workers for topology.workers {}: freed for EvenScheduler",
                    td.getName(), used.size(), td.getNumWorkers());
                cluster.freeSlots(new ArrayList<>(used));
            }
            rest.put(td.getId(), td);
        }
        if (!rest.isEmpty()) {
            even.schedule(new Topologies(rest), cluster);
        }
    }

    @Override
    public Map<String, Map<String, Double>> config() {
        return Collections.emptyMap();
    }

    /** Why the file's executors are not this topology's (null: they are). */
    static String mismatch(List<Worker> plan, TopologyDetails td) {
        Map<ExecutorDetails, String> named = new HashMap<>();
        for (Worker w : plan) {
            named.putAll(w.executors);
        }
        Map<ExecutorDetails, String> actual = td.getExecutorToComponent();
        if (!named.keySet().equals(new HashSet<>(td.getExecutors()))) {
            return "the file names " + named.size() + " executors, the topology runs "
                + td.getExecutors().size() + " others (a file for another version?)";
        }
        for (Map.Entry<ExecutorDetails, String> e : named.entrySet()) {
            if (!e.getValue().equals(actual.get(e.getKey()))) {
                return "executor " + e.getKey() + " is " + actual.get(e.getKey())
                    + " in the topology, " + e.getValue() + " in the file";
            }
        }
        return null;
    }

    private static void place(List<Worker> plan, TopologyDetails td, Cluster cluster) {
        Set<ExecutorDetails> unassigned = new HashSet<>(cluster.getUnassignedExecutors(td));
        for (Worker w : plan) {
            List<ExecutorDetails> want = new ArrayList<>();
            for (ExecutorDetails e : w.executors.keySet()) {
                if (unassigned.contains(e)) {
                    want.add(e);
                }
            }
            if (want.isEmpty()) {
                continue;
            }
            WorkerSlot slot = freeSlot(cluster, w.host, w.port);
            if (slot == null) {
                slot = substitute(cluster, w.host);
                if (slot == null) {
                    LOG.warn("{}: {}:{} is taken or gone and no slot is free: {} executors "
                        + "wait", td.getName(), w.host, w.port, want.size());
                    continue;
                }
                LOG.info("{}: {}:{} is taken or gone: its {} executors on {} instead",
                    td.getName(), w.host, w.port, want.size(), slot);
            } else {
                LOG.info("{}: {} executors on {}:{}", td.getName(), want.size(), w.host, w.port);
            }
            cluster.assign(slot, td.getId(), want);
        }
    }

    /** A free slot on `host` (lowest port), else on the supervisor with most free slots. */
    static WorkerSlot substitute(Cluster cluster, String host) {
        WorkerSlot best = null;
        int bestFree = 0;
        boolean bestOnHost = false;
        List<String> ids = new ArrayList<>(cluster.getSupervisors().keySet());
        Collections.sort(ids);
        for (String id : ids) {
            SupervisorDetails s = cluster.getSupervisors().get(id);
            if (cluster.isBlackListed(id)) {
                continue;
            }
            List<Integer> ports = new ArrayList<>(s.getAllPorts());
            Collections.sort(ports);
            WorkerSlot first = null;
            int free = 0;
            for (int port : ports) {
                WorkerSlot slot = new WorkerSlot(id, port);
                if (!cluster.isSlotOccupied(slot)) {
                    free++;
                    if (first == null) {
                        first = slot;
                    }
                }
            }
            boolean onHost = host.equals(s.getHost()) || host.equals(id);
            if (first != null && (best == null || (onHost && !bestOnHost)
                    || (onHost == bestOnHost && free > bestFree))) {
                best = first;
                bestFree = free;
                bestOnHost = onHost;
            }
        }
        return best;
    }

    /** The free slot at `port` of the supervisor whose host (or id) is `host`, or null. */
    static WorkerSlot freeSlot(Cluster cluster, String host, int port) {
        List<String> ids = new ArrayList<>(cluster.getSupervisors().keySet());
        Collections.sort(ids);
        for (String id : ids) {
            SupervisorDetails s = cluster.getSupervisors().get(id);
            boolean named = host.equals(s.getHost()) || host.equals(s.getId());
            if (!named || cluster.isBlackListed(s.getId()) || !s.getAllPorts().contains(port)) {
                continue;
            }
            WorkerSlot slot = new WorkerSlot(s.getId(), port);
            if (!cluster.isSlotOccupied(slot)) {
                return slot;
            }
        }
        return null;
    }

    /** The plans of the file, read again when it changed; the last good ones on an error. */
    private Map<String, List<Worker>> load() {
        if (path == null) {
            return plans;
        }
        try {
            long m = Files.getLastModifiedTime(path).toMillis();
            long n = Files.size(path);
            if (m == mtime && n == size) {
                return plans;
            }
            if (n > MAX_BYTES) {
                throw new IllegalArgumentException("larger than " + MAX_BYTES + " bytes");
            }
            String text = new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
            plans = parse(Json.parse(text));
            mtime = m;
            size = n;
            LOG.info("read {}: {} topologies placed", path, plans.size());
        } catch (IOException | IllegalArgumentException | ClassCastException e) {
            LOG.error("cannot use {} ({}): keeping the {} topologies read before", path,
                e.getMessage(), plans.size());
        }
        return plans;
    }

    /** The placed topologies of a parsed file; IllegalArgumentException if malformed. */
    @SuppressWarnings("unchecked")
    static Map<String, List<Worker>> parse(Object doc) {
        Map<String, Object> root = map(doc, "the file");
        if (!FORMAT.equals(root.get("format"))) {
            throw new IllegalArgumentException("format is " + root.get("format") + ", not " + FORMAT);
        }
        Map<String, List<Worker>> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> t : map(root.get("topologies"), "topologies").entrySet()) {
            Map<String, Object> entry = map(t.getValue(), t.getKey());
            if (!Boolean.TRUE.equals(entry.get("placed"))) {
                continue;
            }
            List<Worker> workers = new ArrayList<>();
            Set<ExecutorDetails> seen = new HashSet<>();
            for (Object wo : list(entry.get("workers"), t.getKey() + ".workers")) {
                Map<String, Object> w = map(wo, t.getKey() + " worker");
                Object host = w.get("host");
                if (!(host instanceof String)) {
                    throw new IllegalArgumentException(t.getKey() + ": a worker without a host");
                }
                int port = integer(w.get("port"), 1, 65535, t.getKey() + " port");
                Map<ExecutorDetails, String> execs = new LinkedHashMap<>();
                for (Object eo : list(w.get("executors"), t.getKey() + " executors")) {
                    Map<String, Object> e = map(eo, t.getKey() + " executor");
                    List<Object> tasks = list(e.get("tasks"), t.getKey() + " tasks");
                    if (tasks.size() != 2 || !(e.get("component") instanceof String)) {
                        throw new IllegalArgumentException(t.getKey() + ": an executor needs "
                            + "a component and tasks [start, end]");
                    }
                    int start = integer(tasks.get(0), 1, Integer.MAX_VALUE, "start task");
                    int end = integer(tasks.get(1), start, Integer.MAX_VALUE, "end task");
                    ExecutorDetails ed = new ExecutorDetails(start, end);
                    if (!seen.add(ed)) {
                        throw new IllegalArgumentException(t.getKey() + ": executor " + ed
                            + " given twice");
                    }
                    execs.put(ed, (String) e.get("component"));
                }
                workers.add(new Worker((String) host, port, execs));
            }
            out.put(t.getKey(), workers);
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o, String what) {
        if (!(o instanceof Map)) {
            throw new IllegalArgumentException(what + " is not an object");
        }
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o, String what) {
        if (!(o instanceof List)) {
            throw new IllegalArgumentException(what + " is not a list");
        }
        return (List<Object>) o;
    }

    private static int integer(Object o, int low, int high, String what) {
        if (!(o instanceof Long) || (Long) o < low || (Long) o > high) {
            throw new IllegalArgumentException(what + " is " + o + ", not an integer in ["
                + low + ", " + high + "]");
        }
        return ((Long) o).intValue();
    }
}
